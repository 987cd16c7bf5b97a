"""What a forget records again, so that the ledger ends as if the forgotten had never been said.

For each key a forget touches, every surviving event of the key from its first forgotten event
on (of a `many` or `series` key, of that value) is scrubbed with the forgotten ones, and its
statements are decided again in their original order through the live path (`redecide`),
appended after the `Redacted` event with `cause` and `restates`.  So any sequence of forgets ends
where a fresh ledger fed the survivors would (tests/forget/test_forget_sequences.py).  The same
pass masks forgotten values where they survive as text (quotes of surviving statements, holds,
rejections) and drops a session's digest when its statements were forgotten (docs/forgetting.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from factledger.ledger.domain.candidate import value_key
from factledger.ledger.domain.decide import REJECTING_RULES, Negation
from factledger.ledger.domain.events import EVENT, Body, FactReinstated, parse_body
from factledger.ledger.domain.statement import (
    FACT_EVENTS,
    Key,
    Statement,
    heard_negation,
    is_statement,
    key_of,
    statement_of,
)
from factledger.ledger.forget.redecide import KeyFold, redecide
from factledger.ledger.forget.scope import pseudonym
from factledger.ledger.forget.targets import CANDIDATE_TYPES, LoadedEvent, Plan
from factledger.ledger.registry.predicates import PredicateSpec, Registry
from factledger.ledger.semantic.embedder import wanted
from factledger.ledger.vocabulary.words import Rule

SESSION_EVENTS = (EVENT.SessionIngested, EVENT.IngestFailed)
RESTATING_RULES = (Rule.SAME_MEANING, Rule.SAME_FORM)   # ledger/semantic/dedup.py (and `_settles_dispute`)
_RESTATED_BY = (EVENT.FactReinforced, EVENT.CandidateRejected, EVENT.MeaningChecked)   # events that may carry them


@dataclass
class Restatement:
    moved: list[int] = field(default_factory=list)             # surviving seqs scrubbed now
    cut: set[Key] = field(default_factory=set)                  # keys decided again
    keys: dict[Key, tuple[PredicateSpec, list[Statement]]] = field(default_factory=dict)
    records: list[tuple[int, dict]] = field(default_factory=list)   # other events, as recorded again


def restatement(plan: Plan, registry: Registry) -> Restatement:
    """Plan what survives and must be recorded again (read only; before the scrub)."""
    out = Restatement()
    served_again(plan, out)
    if plan.scope.kind == "user":
        return out
    targets = set(plan.targets)
    masker, facts = plan.masker, plan.facts_by_id
    specs: dict[Key, PredicateSpec | None] = {}
    by_meaning = _by_meaning(plan)

    def unit(e: LoadedEvent) -> tuple | None:
        """What an event's decision depends on: its key, or for a `many` or `series` key (whose
        decisions only look at open facts of the same value) its key and value."""
        key = key_of(e.type, e.body, facts)
        if key is None:
            return None
        if key not in specs:
            specs[key] = _spec(registry, plan, key)
        spec = specs[key]
        if spec is None:
            return None
        if spec.cardinality == "one" or (spec.cardinality == "many" and (by_meaning is True or key in by_meaning)):
            return (key,)
        value = _value(e, facts)
        return (key,) if value is None else (key, value_key(value))

    cuts: dict[tuple, int] = {}
    for e in plan.events:
        if e.body is None:
            continue
        if (e.seq in targets and (e.type in FACT_EVENTS or heard_negation(e.seq, e.type, e.body))) or (
                e.seq not in targets and masker and is_statement(e.type, e.body) and _names(e, masker)):
            u = unit(e)
            if u is not None:
                cuts.setdefault(u, e.seq)
    cut_keys = {u[0] for u in cuts}
    out.cut = cut_keys
    for e in plan.events:
        if e.body is None or e.seq in targets:
            continue
        key = key_of(e.type, e.body, facts)
        if key not in cut_keys:
            continue
        u = unit(e)
        if u is None or e.seq < min(cuts.get(u, e.seq + 1), cuts.get((key,), e.seq + 1)):
            continue
        out.moved.append(e.seq)
        st = statement_of(e.seq, e.type, e.body, plan.scope.app, plan.scope.user)
        if st is None:
            continue                          # a decision
        out.keys.setdefault(key, (specs[key], []))[1].append(st.masked(masker) if masker else st)
    _others(plan, targets, out)
    out.moved.sort()
    return out


class Partition(Protocol):
    """What `restate` reads of the partition as it stands after the scrub and the rebuild, and
    where it appends (`projections.keystate.StoredPartition`)."""

    def key_snapshots(self, subject: str, predicate: str) -> list[dict]:
        """The key's open facts as stored, in stored order, then its closed ones that held it (the
        past a late statement is placed in)."""

    def key_negations(self, subject: str, predicate: str) -> list[tuple[str, Negation]]:
        """The negations the key has heard, as they stand now (`projections.negations.key_negations`):
        a statement decided again is ended by one of them."""

    def key_vectors(self, predicate: str) -> tuple:
        """The stored vectors the live ledger's dedup by meaning reads (`semantic.dedup.key_matrix`)."""

    def statements(self, seqs: list[int]) -> dict[int, dict]:
        """The stored bodies of the statements of the key's facts, which a split reads."""

    def append(self, body: Body) -> object:
        """Append one event."""


def restate(plan: Plan, found: Restatement, cause: int, registry_sha: str, partition: Partition,
            open_before: set[str]) -> None:
    """After the scrub, the rebuild and the `Redacted` event: decide every cut key again from its
    state now (`partition`) and append the events, then the other events recorded again.

    A value that is current again (it was closed before the forget, its observation survives and
    nothing disputes it) gets a `FactReinstated`, which changes nothing in its state but opens a
    new interval in transaction time: history says when, and by which erasure, it came back."""
    app, user = plan.scope.app, plan.scope.user
    for key in sorted(found.cut):
        spec, statements = found.keys.get(key, (None, []))
        fold = KeyFold(partition.key_snapshots(*key), partition.statements, partition.key_negations(*key))
        for body in redecide(statements, spec, registry_sha, app, user, fold, cause=cause, subject=key[0],
                             stored_vectors=lambda key=key: partition.key_vectors(key[1])):
            partition.append(body)
        for fact in fold.snaps.values():
            if (fact["status"] == "current" and not fact["disputes"] and fact["fact_id"] not in open_before
                    and fact["observed_seq"] > 0):            # observed before: not recorded here
                partition.append(FactReinstated(app=app, user=user, fact_id=fact["fact_id"], rule=Rule.REDACTION,
                                      cause=cause, registry_sha256=registry_sha))
    for seq, body in found.records:
        partition.append(parse_body({**body, "cause": cause, "restates": seq}))


def _by_meaning(plan: Plan) -> bool | set[Key]:
    """Where a `many` key's decisions look beyond the values equal to the candidate's, so its cut
    is the whole key: every key while meaning is on (a candidate may restate any open value), and
    a key whose log holds a reinforcement by meaning or form, or such a rewording counted already
    in its session (decided again, it may not be one)."""
    if wanted():
        return True
    return {key for e in plan.events if e.body is not None and e.type in _RESTATED_BY
            and str(e.body.get("rule", "")).startswith(RESTATING_RULES)
            and (key := key_of(e.type, e.body, plan.facts_by_id)) is not None}


def _value(e: LoadedEvent, facts: dict[str, dict]) -> str | None:
    """The value an event states or is about."""
    body = e.body
    value = body.get("value", (body.get("candidate") or {}).get("value"))
    if value is None:
        value = (facts.get(body.get("fact_id")) or {}).get("value")
    return value if isinstance(value, str) else None


def _names(e: LoadedEvent, masker) -> bool:
    body = e.body
    if e.type == EVENT.DisputeResolved:
        return masker.mentions(body.get("reason"))
    if e.type == EVENT.CandidateRejected:
        c = body.get("candidate") or {}
        return masker.mentions(c.get("quote"), c.get("value") or "")
    return masker.mentions(body.get("quote"), body.get("value") or "")


def _spec(registry: Registry, plan: Plan, key: Key) -> PredicateSpec | None:
    """The predicate as the registry has it now; else as its facts were recorded (a predicate
    the registry dropped since); None if neither (its statements then stay where they are)."""
    spec = registry.resolve(key[1])
    if spec is not None and spec.name == key[1]:
        return spec
    recorded = next((b for b in plan.facts_by_id.values()
                     if (b["subject"], b["predicate"]) == key), None)
    if recorded is None:
        return None
    return PredicateSpec(name=key[1], cardinality=recorded["cardinality"],
                         sensitivity=recorded["sensitivity"], kind=recorded["kind"])


def _masked_again(e: LoadedEvent, masker) -> bool:
    """An open hold, or a rejection outside the decision table that was never held, whose quote
    names a forgotten value (the plan took those whose value does, and closed holds)."""
    body = e.body
    if e.type == EVENT.CandidateRejected and (body.get("hold_id") is not None or body.get("rule") in REJECTING_RULES):
        return False
    return e.type in CANDIDATE_TYPES and masker.mentions((body.get("candidate") or {}).get("quote"))


def _others(plan: Plan, targets: set[int], out: Restatement) -> None:
    """Open holds and never-held rejections whose quote names a forgotten value; digests of
    sessions that lost statements."""
    masker = plan.masker
    if not plan.scope.fact_wide or plan.scope.kind == "user":
        return
    digest_sessions = set()
    for e in plan.events:
        if e.seq in targets and e.body is not None:
            session = e.body.get("session", (e.body.get("candidate") or {}).get("session"))
            if isinstance(session, str):
                digest_sessions.add(session)
        elif e.body is not None and e.type == EVENT.SessionIngested and masker.mentions(e.body.get("digest")):
            digest_sessions.add(e.body["session"])
    started: set[str] = set()
    for e in plan.events:
        body = e.body
        if body is None or e.seq in targets:
            continue
        if _masked_again(e, masker):
            candidate = dict(body["candidate"])
            candidate["quote"] = masker(candidate["quote"], candidate.get("value", ""))
            out.moved.append(e.seq)
            out.records.append((e.seq, {**body, "candidate": candidate}))
        elif e.type in SESSION_EVENTS and body.get("session") in digest_sessions:
            if e.type == EVENT.SessionIngested and body.get("digest") is not None:
                started.add(body["session"])
            if body["session"] in started:
                out.moved.append(e.seq)
                out.records.append((e.seq, {k: v for k, v in body.items() if k != "digest"}))


SERVE_CONTENT = ("text_sha256", "query_sha256", "query", "cause", "restates")


def without_content(body: dict) -> dict:
    """A serve record as a forget records it again: the ids, counts and time, no hash of what it said."""
    return {k: v for k, v in body.items() if k not in SERVE_CONTENT}


def has_content(body: dict) -> bool:
    return any(body.get(name) for name in SERVE_CONTENT[:3])


def served_again(plan: Plan, out: Restatement) -> None:
    """Serve records (`FactsServed`) that handed out a forgotten fact or showed a forgotten held
    candidate, or whose kept query names a forgotten value: scrubbed, and recorded again without
    the text hash, the query hash and the query, so the fact ids and counts remain ("a fact since
    erased was served") and nothing of the forgotten text does.  A whole user's are all recorded
    again, under the pseudonym its events now carry (no record names the user)."""
    scope, masker = plan.scope, plan.masker
    targets = set(plan.targets)
    alias = pseudonym(scope.app, scope.user) if scope.kind == "user" else None
    holds = {e.body.get("hold_id") for e in plan.events if e.seq in targets and e.body is not None
             and e.type in CANDIDATE_TYPES} - {None}          # held candidates a review page showed
    for e in plan.events:
        body = e.body
        if body is None or e.type != EVENT.FactsServed:
            continue
        if alias is None and e.seq in targets:
            continue                          # expired by its own retention: scrubbed whole, not recorded again
        if alias is None:
            kept = has_content(body)
            touched = ({f["fact_id"] for f in body.get("facts", ())} & plan.facts
                       | set(body.get("held") or ()) & holds)
            if not kept or not (touched or (masker and masker.mentions(body.get("query")))):
                continue
        again = without_content(body)
        if alias is not None:
            again["user"] = alias
            again["users"] = [alias if u == scope.user else u for u in body.get("users", ())]
        elif e.seq not in targets:
            out.moved.append(e.seq)
        out.records.append((e.seq, again))
