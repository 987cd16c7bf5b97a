"""Recall: the few current facts that belong in the next prompt, and why each one was or was not.

The current-state path only: candidates are the open facts of `facts_current`, read with the
recall index's terms in one query of the partition (and the app's `_domain`); everything else is
in memory (`ledger/recall/facts.py`).  The gates, in order, each an `--explain` outcome:
sensitivity -> no_match -> confidence (an inferred fact's decayed confidence, a stated one's own)
-> age (`--max-age`) -> limit, budget -> selected; what was withheld is counted by reason.
Scoring and packing: docs/recall.md.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial

from factledger.ledger.domain.recall_options import (
    DEFAULT_CLEARANCE,
    DEFAULT_HALF_LIFE_DAYS,
    DEFAULT_LIMIT,
    DEFAULT_RECENCY_WEIGHT,
    RecallOptions,
    parse_clearance,
    parse_days,
)
from factledger.ledger.domain.textindex import remembering, terms
from factledger.ledger.recall import meaning, render
from factledger.ledger.recall.facts import (
    CONFIRMED,
    ID,
    OUTCOMES,
    PREDICATE,
    WITHHELD,
    Cleared,
    InScope,
    KindRules,
    lexical_index,
)
from factledger.ledger.recall.meaning import MEANING_WEIGHT, confirmed_times, meaning_scores, resolve_mode
from factledger.ledger.registry.predicates import Registry
from factledger.ledger.vocabulary.words import DOMAIN_USER
from factledger.projections import recall as recall_reads
from factledger.projections.queries import FACT_FIELDS
from factledger.projections.recallcache import KeptScopes


@dataclass
class RecallResult:
    query: str
    app: str
    user: str
    options: RecallOptions
    selected: list[dict]                       # facts in the order they are rendered
    candidates: list[dict]                     # every in-scope fact, scores and outcome
    other_partitions: dict | None = None       # kept for callers; never counted: one tenant's
                                               # explanation says nothing of another's
    text: str = ""                             # the rendered block
    withheld: dict[str, int] = field(default_factory=dict)   # reason -> facts, never values
    # what the call read its scope into (`projections.recallcache.ScopeMemo`): a caller keeps
    # what it works out from the same state there (the facade's clearance mask), not in as_dict
    scope: object = field(default=None, repr=False, compare=False)
    # what the caller should know of how it ran (the facade's: meaning missing for the scope)
    notices: list[str] = field(default_factory=list)
    served_seq: int | None = None              # the serve record's seq, when the call recorded one
    head_seq: int = 0                          # the log's head the read saw (a serve record names it)

    def as_dict(self) -> dict:
        return {"query": self.query, "app": self.app, "user": self.user,
                "options": self.options.as_dict(), "selected": self.selected,
                "candidates": self.candidates, "other_partitions": self.other_partitions,
                "withheld": self.withheld, "rendered": self.text, "notices": self.notices}


def _registry_suffixes(registry: Registry | None) -> dict[str, str]:
    """Per predicate: its aliases and description cut into terms ("lives" finds home_city), as
    the text appended to each of its facts' stored terms.

    Added at query time, not stored in the index: the registry is configuration, not an event,
    and a projection must be a pure fold over the log.  Cached by the registry's hash (it holds
    no fact text).
    """
    if registry is None:
        return {}
    cached = _REGISTRY_SUFFIXES.get(registry.sha256)
    if cached is None:
        cached = {}
        for name, spec in registry.predicates.items():
            extra = sorted(set(terms(" ".join(spec.aliases) + " " + spec.description)))
            if extra:
                cached[name] = " " + " ".join(extra)
        _REGISTRY_SUFFIXES[registry.sha256] = cached
    return cached


_REGISTRY_SUFFIXES: dict[str, dict[str, str]] = {}


def _confirm_ages(registry: Registry | None) -> dict[str, int]:
    """predicate -> the days its facts may go unconfirmed (`PredicateSpec.confirm_after`)."""
    if registry is None:
        return {}
    cached = _CONFIRM_AGES.get(registry.sha256)
    if cached is None:
        cached = _CONFIRM_AGES[registry.sha256] = {name: spec.confirm_after
                                                   for name, spec in registry.predicates.items()}
    return cached


_CONFIRM_AGES: dict[str, dict[str, int]] = {}


def _kind_rules(registry: Registry | None) -> KindRules:
    """Retention and serving thresholds by predicate and kind, from the registry (cached by its hash)."""
    if registry is None:
        return KindRules()
    cached = _KIND_RULES.get(registry.sha256)
    if cached is None:
        cached = _KIND_RULES[registry.sha256] = KindRules(
            {name: spec.retention_days for name, spec in registry.predicates.items() if spec.retention_days},
            {name: kind.retention_days for name, kind in registry.kinds.items() if kind.retention_days},
            {name: kind.min_confidence for name, kind in registry.kinds.items() if kind.min_confidence is not None},
            frozenset(registry.predicates), frozenset(name for name, kind in registry.kinds.items() if kind.dated))
    return cached


_KIND_RULES: dict[str, KindRules] = {}


def recall(conn: sqlite3.Connection, app: str, user: str, query: str | None, *, now: datetime,
           options: RecallOptions, registry: Registry | None = None,
           explain: bool = False, as_of: str | None = None, kept: KeptScopes | None = None) -> RecallResult:
    """Gate, score and pack the in-scope open facts; full rows are read only for what is shown
    (the selected facts, or every candidate with `explain`).  `kept`: what the ledger keeps for
    recall between calls (`projections.recallcache`; None: read afresh, keep nothing).

    A search looks only at the facts that share a term with the query (the others are
    `no_match` whatever else is true of them); `preload` and `explain` look at every fact."""
    kept = kept or KeptScopes()
    with remembering(kept.texts):              # texts cut once, into this ledger's memo
        return _served(conn, app, user, query, now, options, registry, explain, as_of, kept)


def _served(conn: sqlite3.Connection, app: str, user: str, query: str | None, now: datetime,
            options: RecallOptions, registry: Registry | None, explain: bool, as_of: str | None,
            scopes: KeptScopes) -> RecallResult:
    query = "" if query is None else str(query)
    users = [user] + ([DOMAIN_USER] if options.domain and user != DOMAIN_USER else [])
    kept = scopes.scope(conn, app, users, as_of)
    rows = kept.rows
    clearance = frozenset(options.clearance)
    cleared = kept.derived(("cleared", clearance), partial(Cleared, rows, clearance))
    scope = InScope(rows, now, options, _registry_suffixes(registry), cleared, _confirm_ages(registry),
                    _kind_rules(registry))
    scope.lexical_index = partial(kept.derived, ("lexical", registry and registry.sha256, clearance),
                                  partial(lexical_index, rows, scope.cleared, scope.suffixes, scope.rules.dated))
    scope.mode = resolve_mode(options.mode)
    if scope.mode != "lexical":
        scope.meaning_weight = MEANING_WEIGHT
        scope.meaning_floor = meaning.RELEVANCE_FLOOR
        scope.meaning_share = meaning.RELEVANCE_SHARE
        scope.meaning = meaning_scores(conn, app, users, query, rows, ID, PREDICATE, registry, kept.derived)
        if not options.domain and user != DOMAIN_USER:
            scope.meaning_reference = _shared_best(conn, app, query, registry, scopes, as_of, clearance)
        if scope.meaning.arrays is not None:
            scope.arrays = (*scope.meaning.arrays, confirmed_times(rows, CONFIRMED, kept.derived))
    scope.score_hits(terms(query))
    pool = scope.cleared if options.preload else scope.hits
    selected = _pack(scope, scope.best_first(pool), finish=explain)
    withheld = _withheld(scope, pool)
    shown = sorted(range(len(rows)), key=scope.rank_key) if explain else selected
    facts_of = {i: scope.fact(i) for i in shown}
    _complete(conn, list(facts_of.values()), as_of)
    for rank, i in enumerate(shown, 1):
        facts_of[i]["rank"] = rank
        if scope.outcome[i] == "sensitivity":
            facts_of[i]["value"] = facts_of[i]["quote"] = None   # never seen by an uncleared caller
    facts = [_public(facts_of[i]) for i in selected]
    result = RecallResult(query, app, user, replace(options, mode=scope.mode), facts,
                          [_explained(facts_of[i]) for i in shown] if explain else [],
                          text=render.render(facts, withheld, options.limit), withheld=withheld, scope=kept)
    return result


def _shared_best(conn: sqlite3.Connection, app: str, query: str, registry: Registry | None,
                 scopes: KeptScopes, as_of: str | None, clearance: frozenset) -> float:
    """The best meaning score of the app's shared (`_domain`) facts the caller is cleared for, when
    the call leaves them out (`domain=False`): they are still what a question about the app
    is about, so a user's fact must be a fair share of it to be served by meaning alone.  Left
    out, "Where is the company headquartered?" served the user's `home_city` (its cosine with
    the question is that of "Where do I live?"); the shared fact it was about is the reference
    that cuts it.  Shared facts are no person's, so their meaning may move what is served."""
    shared = scopes.scope(conn, app, [DOMAIN_USER], as_of)
    if not shared.rows:
        return 0.0
    cleared = shared.derived(("cleared", clearance), partial(Cleared, shared.rows, clearance))
    scores = meaning_scores(conn, app, [DOMAIN_USER], query, shared.rows, ID, PREDICATE, registry, shared.derived)
    return max((scores[i][0] for i in cleared.positions if i in scores), default=0.0)


def _withheld(scope: InScope, pool: list[int]) -> dict[str, int]:
    """reason -> how many facts were kept from the caller: every fact of the scope above the
    caller's clearance (counted whatever the query, so the count says nothing of what they
    hold), and the facts of the pool (a search's matches, a preload's cleared facts) that a gate
    or the packing left out.  An eligible fact the packing never reached was past the limit."""
    counts: Counter = Counter(o for o in scope.clearance.outcome if o == "sensitivity")
    for i in pool:
        outcome = scope.gate(i) or "limit"
        if outcome in WITHHELD and outcome != "sensitivity":
            counts[outcome] += 1
    return {reason: counts[reason] for reason in WITHHELD if counts[reason]}


def _complete(conn: sqlite3.Connection, shown: list[dict], as_of: str | None = None) -> None:
    """Add the remaining public fields (`FACT_FIELDS`) to the facts that will be shown."""
    by_id = {c["fact_id"]: c for c in shown}
    for fact_id, row in recall_reads.full_rows(conn, list(by_id), as_of):
        by_id[fact_id].update(row)


def _pack(scope: InScope, eligible, finish: bool = False) -> list[int]:
    """Greedy over the eligible facts, best first: a fact that would pass the word budget is
    skipped, a smaller one may still fit; a disputed fact brings the facts it disputes onto its
    line.  Once the limit is full no group fits any more, so the rest are `limit`: they are
    visited (and so ordered) only when `finish` asks for every outcome (--explain)."""
    options = scope.options
    chosen: list[int] = []
    used_words = 0
    for i in eligible:
        if len(chosen) >= options.limit:
            if not finish:
                break
            if scope.outcome[i] is None:
                scope.outcome[i] = "limit"
            continue
        if scope.outcome[i] is not None:           # already shown beside a fact it disputes
            continue
        group = [i] + scope.partners(i)
        if len(chosen) + len(group) > options.limit:
            scope.outcome[i] = "limit"
            continue
        cost = render.words(render.line([_public(scope.fact(g)) for g in group]))
        if options.budget is not None and used_words + cost > options.budget:
            scope.outcome[i] = "budget"
            continue
        used_words += cost
        scope.outcome[i] = "selected"
        chosen.append(i)
        for partner in group[1:]:
            scope.outcome[partner] = "selected"
            scope.via[partner] = scope.rows[i][ID]
            chosen.append(partner)
    return chosen


def _public(c: dict) -> dict:
    """A shown fact with the public field names (`FACT_FIELDS`), plus its scores."""
    fact = {name: c.get(name) for name in FACT_FIELDS}
    fact.update(relevance=c["relevance"], recency=c["recency"], score=c["score"],
                unconfirmed_since=c.get("unconfirmed_since"), ask_to_confirm=c.get("ask_to_confirm", False))
    if c.get("via"):
        fact["shown_with"] = c["via"]
    return fact


def _explained(c: dict) -> dict:
    """One row of the explanation: the fact, its scores, its outcome and its rank."""
    row = _public(c)
    row.update(outcome=c["outcome"], rank=c["rank"], age_days=c["age_days"], via=c["via"],
               meaning=c.get("meaning"), lexical=c.get("lexical"))
    row.pop("shown_with", None)
    return row


def explain_rows(result: RecallResult) -> list[dict]:
    """The `--explain` table: every in-scope fact, best first within each outcome."""
    keep = ("rank", "outcome", "subject", "predicate", "value", "status", "sensitivity",
            "effective_confidence", "age_days", "meaning", "lexical", "relevance", "recency", "score",
            "fact_id", "user", "via")
    return [{k: c.get(k) for k in keep} for c in result.candidates]


__all__ = ["RecallOptions", "RecallResult", "recall", "explain_rows", "parse_clearance",
           "parse_days", "OUTCOMES", "DOMAIN_USER", "DEFAULT_CLEARANCE", "DEFAULT_LIMIT", "DEFAULT_RECENCY_WEIGHT",
           "DEFAULT_HALF_LIFE_DAYS"]
