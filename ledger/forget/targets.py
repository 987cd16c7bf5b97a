"""Which events a forget request scrubs: the scope's own events and every decision they caused.

Planning only reads the one partition the request touches, event by event in log order: the
scope's own events; the decisions they caused (supersessions, disputes either way, resolutions,
reinstatements), so no surviving event points at a fact that is gone; the held candidate a
scrubbed event came from through a review; for every scope but a session, every statement about
a forgotten fact; for scopes narrower than a user, candidates and closed holds naming a forgotten
value.  An open hold or a rejection that only quotes one is recorded again masked (`Plan.masker`,
ledger/forget/restate.py).  The table of scopes: docs/forgetting.md, "Scopes".
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from factledger.ledger.domain.candidate import value_key
from factledger.ledger.domain.decide import REJECTING_RULES
from factledger.ledger.domain.eventrow import CLOSES_HOLD, body_of
from factledger.ledger.domain.events import EVENT
from factledger.ledger.domain.statement import heard_negation
from factledger.ledger.errors import LedgerError
from factledger.ledger.forget.masking import Masker
from factledger.ledger.forget.scope import Scope
from factledger.ledger.store.reads import partition_rows
from factledger.projections.provenance import fact_partition

STATEMENT_TYPES = (EVENT.FactReinforced, EVENT.FactRetracted, EVENT.CandidateRejected)
CANDIDATE_TYPES = (EVENT.CandidateRejected, EVENT.CandidateHeld)
FACT_REFERENCES = ("fact_id", "by_fact_id", "disputes", "winner_id")


@dataclass
class LoadedEvent:
    seq: int
    type: str
    body: dict | None
    redacted_by: int | None


@dataclass
class Plan:
    scope: Scope
    events: list[LoadedEvent]
    facts_by_id: dict[str, dict]                       # fact_id -> its FactObserved body (pre-scrub)
    targets: list[int] = field(default_factory=list)   # seqs to scrub now
    already: list[int] = field(default_factory=list)   # seqs scrubbed earlier (pseudonymised with a user)
    facts: set[str] = field(default_factory=set)       # fact ids forgotten
    keys: set[tuple[str, str]] = field(default_factory=set)   # keys of the facts it touches
    decided_again: set[tuple[str, str]] = field(default_factory=set)  # the keys decided again (restate's cut)
    sessions: set[str] = field(default_factory=set)    # sessions forgotten whole
    by_type: dict[str, int] = field(default_factory=dict)
    masker: Masker = field(default_factory=Masker)    # the forgotten values, to mask in what survives
    restated: list[int] = field(default_factory=list)  # surviving seqs recorded again (ledger/forget/restate.py)
    served_in: set[str] = field(default_factory=set)   # other users whose serve records of its facts it scrubs

    @property
    def empty(self) -> bool:
        return not self.targets and not self.already

    def describe(self) -> dict:
        """The plan as a person reviews it: counts, seqs, fact ids and keys; never a value."""
        return {
            "scope_kind": self.scope.kind, "scope_hash": self.scope.hash,
            "events": len(self.targets), "events_by_type": dict(sorted(self.by_type.items())),
            "target_seqs": list(self.targets), "restated_seqs": list(self.restated),
            "facts": sorted(self.facts),
            # the keys the receipt counts (`counts.keys`): decided again, not merely touched
            "keys": [f"{s} {p}" for s, p in sorted(self.decided_again)], "sessions": len(self.sessions),
            "pseudonymised": len(self.targets) + len(self.already) if self.scope.kind == "user" else 0,
        }


def load_partition(conn: sqlite3.Connection, app: str, user: str) -> list[LoadedEvent]:
    return [LoadedEvent(seq, type_, body_of(body), by)
            for seq, type_, body, by in partition_rows(conn, app, user)]


def plan(conn: sqlite3.Connection, scope: Scope, registry) -> Plan:
    events = load_partition(conn, scope.app, scope.user)
    facts_by_id = {e.body["fact_id"]: e.body for e in events
                   if e.body is not None and e.type == EVENT.FactObserved}
    split_from = _split_from(events, facts_by_id)
    result = Plan(scope, events, facts_by_id)
    last_confirmed = _last_confirmed(events) if scope.kind == "retention" else {}
    direct = _direct_test(scope, registry, last_confirmed, split_from)
    chosen: set[int] = set()
    gone: set[str] = set()          # the forgotten facts, and those a forgotten statement observed first
    for event in events:
        if event.body is None:
            if scope.kind == "user":
                result.already.append(event.seq)
            continue
        if direct(event):
            chosen.add(event.seq)
            if event.type == EVENT.FactObserved:
                result.facts.add(event.body["fact_id"])
            gone |= _observed(event.body)
    if scope.fact_wide:
        # a fact split off a forgotten one (by a value or a negation learnt late) holds some of its
        # statements: it goes too, whichever of its events the log holds first (a negation's
        # retraction of the split-off part is recorded before the `FactSplit` that names it)
        result.facts |= {f for f in split_from if _root(f, split_from) in result.facts}
    gone |= result.facts
    by_seq = {e.seq: e for e in events}
    for event in events:
        if event.body is None or event.seq in chosen:
            continue
        if _caused(event, gone, scope, facts_by_id, chosen, by_seq):
            chosen.add(event.seq)
            gone |= _observed(event.body)
            if event.type == EVENT.FactSplit:
                gone.add(event.body["split_id"])    # the part it split off exists by it alone
    if scope.kind in ("fact", "retention"):
        chosen |= _negations_that_ended(events, chosen, facts_by_id)
    # A reviewer's accept carries the held candidate's hold_id: the CandidateHeld holds the same
    # value, so it goes with the fact (else the value stays in the log and the item reopens).
    holds = {by_seq[seq].body.get("hold_id") for seq in chosen} - {None}
    for event in events:
        if (event.body is not None and event.type in CANDIDATE_TYPES
                and event.body.get("hold_id") in holds):
            chosen.add(event.seq)
    if scope.fact_wide and scope.kind != "user":
        result.masker = Masker(_values(by_seq[seq] for seq in sorted(chosen)))
        chosen |= _mentions(events, chosen, result.masker)
    for event in events:
        if event.seq not in chosen:
            continue
        result.targets.append(event.seq)
        result.by_type[event.type] = result.by_type.get(event.type, 0) + 1
        body = event.body
        if scope.kind in ("user", "session"):
            # Forgotten whole: every session of a forgotten user, and a session scope's own.  A
            # decision it caused may name another session (a `FactSplit` names the session of the
            # fact's first statement after the split), which keeps its other events and its say.
            for session in (body.get("session"), (body.get("candidate") or {}).get("session")):
                if isinstance(session, str) and (scope.kind == "user" or session == scope.session):
                    result.sessions.add(session)
        if event.type in CANDIDATE_TYPES:
            continue                          # a rejected or held candidate changed no fact
        for fact_id in _referenced(body):
            observed = facts_by_id.get(fact_id)
            if observed is not None:
                result.keys.add((observed["subject"], observed["predicate"]))
    return result


def _split_from(events: list[LoadedEvent], facts_by_id: dict[str, dict]) -> dict[str, str]:
    """split-off fact -> the fact it was split from (`FactSplit`); each split-off fact is also
    entered in `facts_by_id` with the observation of the fact its statements were recorded under."""
    found = {}
    for e in events:
        if e.body is not None and e.type == EVENT.FactSplit:
            found[e.body["split_id"]] = e.body["fact_id"]
            if e.body["fact_id"] in facts_by_id:
                facts_by_id[e.body["split_id"]] = facts_by_id[e.body["fact_id"]]
    return found


def _negations_that_ended(events: list[LoadedEvent], chosen: set[int], facts_by_id: dict) -> set[int]:
    """The negations that ended forgotten facts learnt after them (a `FactNegated` names one by
    its key, value and time): in said order each was a retraction of that fact, which the fact
    takes with it, so it goes too, whatever order the two were learnt in."""
    ended = set()
    for e in events:
        if e.seq in chosen and e.body is not None and e.type == EVENT.FactNegated:
            fact = facts_by_id.get(e.body["fact_id"])
            if fact is not None:
                ended.add(((fact["subject"], fact["predicate"]), value_key(fact["value"]), e.body["valid_to"]))
    found = set()
    for e in events:
        heard = heard_negation(e.seq, e.type, e.body) if ended and e.body is not None else None
        if heard is not None and (heard[0], heard[1], heard[2].said_at) in ended:
            found.add(e.seq)
    return found


def _root(fact_id: str, split_from: dict[str, str]) -> str:
    """The fact whose observation a (split-off) fact's first statement was recorded as."""
    while fact_id in split_from:
        fact_id = split_from[fact_id]
    return fact_id


def _direct_test(scope: Scope, registry, last_confirmed: dict, split_from: dict[str, str]):
    kind = scope.kind

    def candidate_spec(body: dict):
        name = (body.get("candidate") or {}).get("predicate")
        return registry.resolve(name) if isinstance(name, str) else None

    if kind == "user":
        return lambda e: True
    if kind == "session":
        wanted = scope.session
        return lambda e: (e.body.get("session") == wanted
                          or (e.body.get("candidate") or {}).get("session") == wanted)
    if kind == "fact":
        # a fact split off another (a value learnt late cut it in two) has its statements recorded
        # under that fact's observation: forgetting either part forgets the statements of both
        root = _root(scope.fact_id, split_from)
        return lambda e: e.type == EVENT.FactObserved and e.body["fact_id"] == root
    if kind in ("predicate", "sensitivity"):
        # an observation names its predicate and sensitivity; a candidate's come from the registry
        field, wanted = (("predicate", scope.predicate) if kind == "predicate"
                         else ("sensitivity", scope.sensitivity))
        attribute = "name" if field == "predicate" else "sensitivity"

        def by_class(e: LoadedEvent) -> bool:
            if e.type == EVENT.FactObserved:
                return e.body[field] == wanted
            if e.type in CANDIDATE_TYPES:
                spec = candidate_spec(e.body)
                return spec is not None and getattr(spec, attribute) == wanted
            return False
        return by_class
    if kind == "retention":
        cutoffs = dict(scope.cutoffs)
        serves_cutoff = scope.serves_cutoff

        def expired(e: LoadedEvent) -> bool:
            if e.type == EVENT.FactsServed:         # a serve record past its own retention goes whole
                return serves_cutoff is not None and e.body.get("served_at", "") < serves_cutoff
            if e.type == EVENT.FactObserved:
                cutoff = cutoffs.get(e.body["predicate"])
                return (cutoff is not None
                        and last_confirmed.get(e.body["fact_id"], e.body["said_at"]) < cutoff)
            return e.type in CANDIDATE_TYPES and candidate_expired(e.body, cutoffs, registry)
        return expired
    raise LedgerError(f"internal: unknown scope kind {kind!r}")


def candidate_expired(body: dict, cutoffs: dict[str, str], registry) -> bool:
    """Whether a held or rejected candidate is past retention: its predicate (as the registry
    resolves it now) has a cutoff, and it was said before it."""
    candidate = body.get("candidate") or {}
    name = candidate.get("predicate")
    spec = registry.resolve(name) if isinstance(name, str) else None
    cutoff = cutoffs.get(spec.name) if spec is not None else None
    return cutoff is not None and candidate.get("said_at", "") < cutoff


def _caused(event: LoadedEvent, forgotten: set[str], scope: Scope, facts_by_id: dict,
            chosen: set[int], by_seq: dict) -> bool:
    """Whether a surviving-so-far event is about, or was caused by, what is being forgotten."""
    body, type_ = event.body, event.type
    if type_ == EVENT.Redacted:
        return False
    fact_id = body.get("fact_id")
    if fact_id in forgotten:
        if type_ in STATEMENT_TYPES:
            if not scope.fact_wide:
                return False                  # another session's statement: it keeps its say
            if type_ == EVENT.CandidateRejected or (type_ == EVENT.FactReinforced and scope.kind == "fact"):
                # only a repeat of the forgotten value: a rewording counted towards the fact (by
                # meaning or form) is a value of its own, which a ledger that never heard the
                # first wording holds, so it is decided again (a predicate's, class's or
                # retention's scope takes it by its key or its time)
                value = body.get("value", (body.get("candidate") or {}).get("value", ""))
                return value_key(value) == value_key((facts_by_id.get(fact_id) or {}).get("value", ""))
        return True
    if body.get("by_fact_id") in forgotten:
        return True                           # the supersession a forgotten observation caused
    if type_ == EVENT.FactDisputed and body.get("disputes") in forgotten:
        return True                           # a dispute against a forgotten fact
    if type_ == EVENT.DisputeResolved and body.get("resolved_by") == "ledger":
        before = by_seq.get(event.seq - 1)
        return (event.seq - 1 in chosen and before is not None and before.type == EVENT.FactReinforced
                and before.body.get("fact_id") == fact_id)
    return False


def _observed(body: dict) -> set[str]:
    """The fact a statement observed when first recorded, if it is now recorded as something else
    (`observed_as`): a reviewer's judgement kept for that fact goes with the statement."""
    return {body["observed_as"]} if isinstance(body.get("observed_as"), str) else set()


def _values(events) -> list[str]:
    """The values the chosen events state (an observation's, a statement's, a candidate's)."""
    found = []
    for e in events:
        value = e.body.get("value", (e.body.get("candidate") or {}).get("value"))
        if isinstance(value, str):
            found.append(value)
    return found


def _mentions(events: list[LoadedEvent], chosen: set[int], masker: Masker) -> set[int]:
    """Candidates outside the decision table that still name a forgotten value (see the module
    docstring); a table's rejection is a statement of its key, masked by re-decision instead."""
    if not masker:
        return set()
    closed = {e.body.get("hold_id") for e in events if e.body is not None
              and e.type in CLOSES_HOLD} - {None}
    found = set()
    for e in events:
        if e.body is None or e.seq in chosen or e.type not in CANDIDATE_TYPES:
            continue
        if e.type == EVENT.CandidateRejected and e.body.get("rule") in REJECTING_RULES:
            continue
        c = e.body.get("candidate") or {}
        value, quote = c.get("value"), c.get("quote")
        if masker.mentions(value) or (masker.mentions(quote) and e.body.get("hold_id") in closed):
            found.add(e.seq)
    return found


def emptied_sessions(p: Plan) -> set[str]:
    """Sessions this plan takes every remaining event of (the surviving events recorded again
    keep theirs): after it, `forget --session` of one has nothing left to forget."""
    targets, touched, alive = set(p.targets), set(), set()
    for e in p.events:
        if e.body is not None:
            session = e.body.get("session", (e.body.get("candidate") or {}).get("session"))
            if isinstance(session, str):
                (touched if e.seq in targets else alive).add(session)
    return touched - alive


def _referenced(body: dict) -> list[str]:
    ids = [body[name] for name in FACT_REFERENCES if isinstance(body.get(name), str)]
    return ids + [x for x in body.get("loser_ids", ()) if isinstance(x, str)]


def _last_confirmed(events: list[LoadedEvent]) -> dict[str, str]:
    """fact_id -> the latest said_at of any surviving statement of it (retention's clock)."""
    latest: dict[str, str] = {}
    for e in events:
        if e.body is not None and e.type in (EVENT.FactObserved, EVENT.FactReinforced):
            fid, said = e.body["fact_id"], e.body["said_at"]
            if said > latest.get(fid, ""):
                latest[fid] = said
    return latest


def unknown_fact(conn: sqlite3.Connection, scope: Scope) -> LedgerError:
    found = fact_partition(conn, scope.fact_id)
    if found is not None and found != (scope.app, scope.user):
        return LedgerError(f"fact {scope.fact_id!r} does not belong to app {scope.app!r}, "
                           f"user {scope.user!r}")
    return LedgerError(f"no fact {scope.fact_id!r} for app {scope.app!r}, user {scope.user!r}")
