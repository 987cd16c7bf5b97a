"""Recall: the few current facts that belong in the next prompt, and why each one was or was not.

The current-state path only: candidates come from `facts_current` (open facts, current or
disputed), so a superseded or retracted value is never a candidate; the historical path lives in
`ledger.queries` (`facts --as-of/--valid-at`, `history`).  One read of the partition (plus the
app's `_domain` user) joined with the recall index's stored terms; everything else happens in
memory, so a user with a thousand facts costs one query, not a thousand.

Order of the gates, each with the outcome it gives in `--explain`:
sensitivity (not cleared; the value is withheld even from the explanation) -> confidence
(effective confidence below the threshold) -> age (last confirmed longer ago than --max-age) ->
no_match (a search, and no query term in common) -> packing: limit, budget -> selected.
Scoring and packing are documented in docs/recall.md.
"""

from __future__ import annotations

import math
import sqlite3
from collections import Counter
from dataclasses import dataclass
from itertools import chain
from datetime import datetime

import orjson

from . import render
from .confidence import DECAY_FLOOR, DECAY_PER_PERIOD, DECAY_PERIOD_DAYS
from .queries import FACT_FIELDS
from .recall_options import (DEFAULT_HALF_LIFE_DAYS, DEFAULT_LIMIT, DEFAULT_RECENCY_WEIGHT,
                             RecallOptions, parse_clearance, parse_days)
from .registry import Registry
from .textindex import document_terms, terms

DOMAIN_USER = "_domain"
OUTCOMES = ("selected", "sensitivity", "confidence", "age", "no_match", "limit", "budget")


@dataclass
class RecallResult:
    query: str
    app: str
    user: str
    options: RecallOptions
    selected: list[dict]                       # facts in the order they are rendered
    candidates: list[dict]                     # every in-scope fact, scores and outcome
    other_partitions: dict | None = None       # counts only, with explain
    text: str = ""                             # the rendered block

    def as_dict(self) -> dict:
        return {"query": self.query, "app": self.app, "user": self.user,
                "options": self.options.as_dict(), "selected": self.selected,
                "candidates": self.candidates, "other_partitions": self.other_partitions,
                "rendered": self.text}


# Thin rows: what the gates, the scores and the packing need, for every in-scope fact.
_THIN = (
    "SELECT f.fact_id, f.user, f.subject, f.predicate, f.value, f.sensitivity, f.confidence,"
    " f.confirmed_at, f.disputes, f.basis, f.said_at, f.session, f.author, r.terms"
    " FROM facts_current f"
    " LEFT JOIN recall_index r ON r.seq = f.observed_seq WHERE f.app = ? AND f.user IN ")
_THIN_COLUMNS = ("fact_id", "user", "subject", "predicate", "value", "sensitivity", "confidence",
                 "confirmed_at", "disputes", "basis", "said_at", "session", "author", "terms")
# Full rows (the field names of DESIGN section 12): only for what is shown.
_FULL = ("SELECT fact_id, app, user, subject, predicate, value, status, basis, confidence,"
         " sensitivity, said_at, recorded_at, confirmed_at, confirmed_by, session, evidence_event,"
         " quote, author, effective_date FROM facts_current WHERE fact_id IN ")
_FULL_COLUMNS = ("fact_id", "app", "user", "subject", "predicate", "value", "status", "basis",
                 "confidence", "sensitivity", "said_at", "recorded_at", "confirmed_at",
                 "confirmed_by", "session", "evidence_event", "quote", "author", "effective_date")


def _registry_terms(registry: Registry | None) -> dict[str, list[str]]:
    """Per predicate: its aliases and description, cut into terms ("lives" finds home_city).

    Added at query time, not stored in the index: the registry is configuration, not an event,
    and a projection must be a pure fold over the log.
    """
    if registry is None:
        return {}
    cached = _REGISTRY_TERMS.get(registry.sha256)
    if cached is None:
        cached = {name: sorted(set(terms(" ".join(spec.aliases) + " " + spec.description)))
                  for name, spec in registry.predicates.items()}
        _REGISTRY_TERMS[registry.sha256] = cached
    return cached


_REGISTRY_TERMS: dict[str, dict[str, list[str]]] = {}


def recall(conn: sqlite3.Connection, app: str, user: str, query: str | None, *, now: datetime,
           options: RecallOptions, registry: Registry | None = None,
           explain: bool = False) -> RecallResult:
    """Gate, score and pack the in-scope open facts; full rows are read only for what is shown
    (the selected facts, or every candidate with `explain`)."""
    query = "" if query is None else str(query)
    users = [user] + ([DOMAIN_USER] if options.domain and user != DOMAIN_USER else [])
    rows = conn.execute(_THIN + f"({', '.join('?' for _ in users)})", (app, *users)).fetchall()
    extra = _registry_terms(registry)
    times: dict = {}
    candidates = [_candidate(row, now, extra, times) for row in rows]
    _gate(candidates, options)
    cleared = [c for c in candidates if c["outcome"] != "sensitivity"]
    _score(cleared, terms(query), options)
    for c in cleared:
        if c["outcome"] is None and not options.preload and c["relevance"] <= 0.0:
            c["outcome"] = "no_match"
    selected = _pack(candidates, options)
    _complete(conn, candidates if explain else selected)
    ordered = sorted(candidates, key=_rank_key) if explain else selected
    for rank, c in enumerate(ordered, 1):
        c["rank"] = rank
    for c in candidates:
        del c["_terms"], c["_confirmed"]
        if c["outcome"] == "sensitivity":
            c["value"] = c["quote"] = None     # an uncleared caller never sees the value
    facts = [_public(c) for c in selected]
    result = RecallResult(query, app, user, options, facts,
                          [_explained(c) for c in ordered] if explain else [],
                          text=render.render(facts))
    if explain:
        result.other_partitions = _other_partitions(conn, app, users)
    return result


def _candidate(row: tuple, now: datetime, extra: dict[str, list[str]], times: dict) -> dict:
    """One in-scope fact as a dict (keys in `_THIN_COLUMNS` order, then the derived ones).

    `times` memoises, for this call only, what a confirmed_at string gives (facts confirmed
    together share it), so each distinct timestamp is parsed once, and the effective confidence
    per (confidence, confirmed_at).  Nothing outlives the call: no fact text is cached."""
    (fact_id, user, subject, predicate, value, sensitivity, confidence, confirmed_at, disputes,
     basis, said_at, session, author, stored) = row
    parsed = times.get(confirmed_at)
    if parsed is None:
        confirmed = datetime.fromisoformat(confirmed_at.replace("Z", "+00:00"))
        age = max(0.0, (now - confirmed).total_seconds() / 86400.0)
        parsed = times[confirmed_at] = (confirmed.timestamp(), age, round(age, 3))
    effective = times.get((confidence, confirmed_at))
    if effective is None:
        effective = times[(confidence, confirmed_at)] = _effective(confidence, parsed[1])
    words = (stored.split() if stored is not None else     # a row the index has not seen yet
             document_terms(subject, predicate, value, "").split())
    more = extra.get(predicate)
    return {"fact_id": fact_id, "user": user, "subject": subject, "predicate": predicate,
            "value": value, "sensitivity": sensitivity, "confidence": confidence,
            "confirmed_at": confirmed_at,
            "disputes": [] if disputes == "[]" else orjson.loads(disputes), "basis": basis,
            "said_at": said_at, "session": session, "author": author, "_confirmed": parsed[0],
            "age_days": parsed[2], "effective_confidence": effective,
            "_terms": words + more if more else words, "relevance": None, "recency": None,
            "score": None, "outcome": None, "via": None}


def _effective(confidence: float, age_days: float) -> float:
    """`ledger.confidence.effective_confidence` from an age already computed (same constants;
    tests/test_recall_core.py checks the two agree), to parse each timestamp once."""
    decayed = confidence * DECAY_PER_PERIOD ** (age_days / DECAY_PERIOD_DAYS)
    return round(max(DECAY_FLOOR, decayed) if confidence >= DECAY_FLOOR else confidence, 4)


def _complete(conn: sqlite3.Connection, shown: list[dict]) -> None:
    """Add the remaining fields of DESIGN section 12 to the facts that will be shown."""
    by_id = {c["fact_id"]: c for c in shown}
    ids = list(by_id)
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        sql = _FULL + f"({', '.join('?' for _ in chunk)})"
        for row in conn.execute(sql, chunk):
            by_id[row[0]].update(zip(_FULL_COLUMNS, row))


def _gate(candidates: list[dict], options: RecallOptions) -> None:
    for c in candidates:
        if c["sensitivity"] not in options.clearance:
            c["outcome"] = "sensitivity"
        elif c["effective_confidence"] < options.min_confidence:
            c["outcome"] = "confidence"
        elif options.max_age_days is not None and c["age_days"] > options.max_age_days:
            c["outcome"] = "age"


def _score(cleared: list[dict], query_terms: list[str], options: RecallOptions) -> None:
    """TF-IDF cosine (sublinear tf, smoothed idf over the cleared in-scope facts), blended with
    exponential recency; see docs/recall.md.

    Most facts share no term with the query: their relevance is 0.0, so their recency and score
    depend on their age alone and are computed once per distinct age (the same floats, rounded
    the same way), and the vector arithmetic runs only for the facts that match."""
    n = len(cleared)
    q_counts = Counter(query_terms)
    q_keys = q_counts.keys()
    hits = ({i for i, c in enumerate(cleared) if not q_keys.isdisjoint(c["_terms"])}
            if q_counts else set())
    df: Counter = Counter()
    if hits:                              # no document matches: no idf is needed at all
        df = Counter(chain.from_iterable(set(c["_terms"]) for c in cleared))
    idf_of: dict[str, float] = {}

    def idf(term: str) -> float:
        if term not in idf_of:
            idf_of[term] = math.log((1 + n) / (1 + df[term])) + 1.0
        return idf_of[term]

    q = {t: (1 + math.log(k)) * idf(t) for t, k in q_counts.items()}
    q_norm = math.sqrt(sum(x * x for x in q.values()))
    w = options.recency_weight
    half_life = options.half_life_days
    by_age: dict[float, tuple[float, float]] = {}
    for i, c in enumerate(cleared):
        age = c["age_days"]
        if i in hits:
            d = {t: (1 + math.log(k)) * idf(t) for t, k in Counter(c["_terms"]).items()}
            dot = sum(weight * d[t] for t, weight in q.items() if t in d)
            relevance = dot / (q_norm * math.sqrt(sum(x * x for x in d.values())))
            recency = 0.5 ** (age / half_life)
            c["relevance"] = round(relevance, 4)
            c["recency"] = round(recency, 4)
            c["score"] = round((1.0 - w) * relevance + w * recency, 4)
            continue
        known = by_age.get(age)
        if known is None:
            recency = 0.5 ** (age / half_life)
            known = by_age[age] = (round(recency, 4), round((1.0 - w) * 0.0 + w * recency, 4))
        c["relevance"] = 0.0
        c["recency"], c["score"] = known


def _order_key(c: dict):
    """Best first: score, then the most recently confirmed, then fact id (a total order)."""
    return (-(c["score"] or 0.0), -c["_confirmed"], c["fact_id"])


def _rank_key(c: dict):
    scored = c["score"] is not None
    return (OUTCOMES.index(c["outcome"]) if c["outcome"] in OUTCOMES else 99, not scored,
            *_order_key(c))


def _pack(candidates: list[dict], options: RecallOptions) -> list[dict]:
    """Greedy: best first; a fact that would pass the word budget is skipped, a smaller one may
    still fit; a disputed fact brings the facts it disputes onto its line."""
    by_id = {c["fact_id"]: c for c in candidates}
    eligible = sorted((c for c in candidates if c["outcome"] is None), key=_order_key)
    chosen: list[dict] = []
    used_words = 0
    for c in eligible:
        if c["outcome"] is not None:           # already shown beside a fact it disputes
            continue
        group = [c] + [by_id[d] for d in c["disputes"] if d in by_id
                       and by_id[d]["outcome"] in (None, "confidence", "age", "no_match", "limit",
                                                   "budget")]
        if len(chosen) + len(group) > options.limit:
            c["outcome"] = "limit"
            continue
        cost = render.words(render.line([_public(g) for g in group]))
        if options.budget is not None and used_words + cost > options.budget:
            c["outcome"] = "budget"
            continue
        used_words += cost
        c["outcome"] = "selected"
        chosen.append(c)
        for partner in group[1:]:
            partner["outcome"] = "selected"
            partner["via"] = c["fact_id"]
            chosen.append(partner)
    return chosen


def _public(c: dict) -> dict:
    """A shown fact with the field names of DESIGN section 12, plus its scores."""
    fact = {name: c.get(name) for name in FACT_FIELDS}
    fact.update(relevance=c["relevance"], recency=c["recency"], score=c["score"])
    if c.get("via"):
        fact["shown_with"] = c["via"]
    return fact


def _explained(c: dict) -> dict:
    """One row of the explanation: the fact, its scores, its outcome and its rank."""
    row = _public(c)
    row.update(outcome=c["outcome"], rank=c["rank"], age_days=c["age_days"], via=c["via"])
    row.pop("shown_with", None)
    return row


def _other_partitions(conn: sqlite3.Connection, app: str, users: list[str]) -> dict:
    """How many open facts lie outside the scope: counted, never shown."""
    total = conn.execute("SELECT COUNT(*) FROM facts_current").fetchone()[0]
    inside = sum(conn.execute("SELECT COUNT(*) FROM facts_current WHERE app = ? AND user = ?",
                              (app, u)).fetchone()[0] for u in users)
    partitions = conn.execute(
        "SELECT COUNT(*) FROM (SELECT DISTINCT app, user FROM facts_current)").fetchone()[0]
    inside_partitions = sum(1 for u in users if conn.execute(
        "SELECT 1 FROM facts_current WHERE app = ? AND user = ? LIMIT 1", (app, u)).fetchone())
    return {"facts": total - inside, "partitions": partitions - inside_partitions}


def explain_rows(result: RecallResult) -> list[dict]:
    """The `--explain` table: every in-scope fact, best first within each outcome."""
    keep = ("rank", "outcome", "subject", "predicate", "value", "status", "sensitivity",
            "effective_confidence", "age_days", "relevance", "recency", "score", "fact_id",
            "user", "via")
    return [{k: c.get(k) for k in keep} for c in result.candidates]


__all__ = ["RecallOptions", "RecallResult", "recall", "explain_rows", "parse_clearance",
           "parse_days", "OUTCOMES", "DOMAIN_USER", "DEFAULT_LIMIT", "DEFAULT_RECENCY_WEIGHT",
           "DEFAULT_HALF_LIFE_DAYS"]
