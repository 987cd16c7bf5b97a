"""Re-decision after a redaction: what each affected key would hold had the forgotten never been said.

Scrubbing events and refolding the partition gives the *fold of the survivors*: mostly right
(forgetting the session that said "Bengaluru" also scrubs the supersession it caused, so "Pune"
is open again), but not always: a later statement may have been recorded as a reinforcement of a
forgotten fact, or a rejection "older than current" whose current value is gone.

So each affected key is decided again, with `ledger.decide.decide`, from its surviving statements
in their original log order (observations, reinforcements, retractions, decision-table rejections,
plus reviewers' resolutions, which no table can recompute).  The result is compared with the fold
of the survivors, and compensating events whose `cause` is the `Redacted` event close the gap:

* `FactObserved` for a value that is open only because of a surviving statement that was not an
  observation (its reinforcements follow as `FactReinforced`);
* `FactSuperseded` (reason `redaction`) for a fact the fold keeps open but re-decision closes;
* `FactReinstated` for a fact that is open again (also when the fold already reopened it, so the
  history records *why* it came back);
* `FactDisputed` for a dispute re-decision keeps; `FactReinforced` for a reinforcement that now
  counts towards a different fact.

Facts that re-decision would open and close again in between are not re-created (their statements
stay in the log), unless their value would leave the log with this redaction (a surviving
reinforcement of a scrubbed observation): those are recorded closed, so a later forget can give
them back.  A re-recording keeps its original statement's place in later re-decisions.  Appending goes through the live
projections, so the state after a forget is the
fold of the log: `replay --check` holds by construction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson

from .candidate import Candidate, value_key
from .confidence import BASIS_RANK, initial_confidence
from .decide import REJECTING_RULES, OpenFact, decide
from .events import Body, FactDisputed, FactObserved, FactReinforced, FactReinstated, FactRetracted, FactSuperseded
from .forget_plan import Plan
from .ids import new_id
from .registry import PredicateSpec, Registry

RULE = "redaction"


@dataclass
class Statement:
    seq: int
    candidate: Candidate
    origin: str | None = None             # fact id, when the statement is a surviving observation
    confidence: float | None = None
    resolution: dict | None = None        # a reviewer's DisputeResolved instead of a statement
    lossy: bool = False                   # its value lives only in an observation scrubbed now


@dataclass
class SimFact:
    sid: int
    first: Statement
    status: str = "current"
    basis: str = "stated"
    rule: str = ""
    extra: list[Statement] = field(default_factory=list)
    partners: set[int] = field(default_factory=set)
    closed_at: str | None = None
    closed_by: int | None = None
    closed_stmt: Statement | None = None  # the retraction that closed it, if one did
    fact_id: str | None = None

    @property
    def origin(self) -> str | None:
        return self.first.origin

    @property
    def sessions(self) -> list[str]:
        return [self.first.candidate.session] + [s.candidate.session for s in self.extra]

    def open_fact(self) -> OpenFact:
        c = self.first.candidate
        return OpenFact(str(self.sid), c.value, self.basis, self.status, c.said_at,
                        frozenset(self.sessions), c.effective_date)


def compensate(conn: sqlite3.Connection, plan: Plan, registry: Registry, cause: int,
               pre_open: set[str], append: Callable[[Body], object]) -> list[Body]:
    """Re-decide every affected key and append what brings the fold to the re-decided state."""
    if plan.scope.kind == "user" or not plan.keys:
        return []
    targets = set(plan.targets)
    appended: list[Body] = []

    def emit(body: Body) -> None:
        append(body)
        appended.append(body)

    statements = _statements(plan, targets)
    for key in sorted(plan.keys):
        spec = _spec(registry, plan, key)
        if spec is None:
            continue
        sims = _simulate(statements.get(key, []), spec)
        _reconcile(conn, plan, key, spec, sims, cause, pre_open, registry.sha256, emit)
    return appended


def _statements(plan: Plan, targets: set[int]) -> dict[tuple[str, str], list[Statement]]:
    app, user = plan.scope.app, plan.scope.user
    facts = plan.facts_by_id
    out: dict[tuple[str, str], list[Statement]] = {}
    seen: dict[tuple, Statement] = {}
    # A statement about a fact scrubbed by an earlier redaction has lost its value; that
    # redaction re-recorded it (a compensating event, `cause` set).  The re-recording keeps the
    # original statement's place in the log order: (session, evidence event, said_at, negated) -> seq.
    placeholder: dict[tuple, int] = {}

    def place(body: dict, seq: int, negated: bool) -> int:
        if body.get("cause") is None:
            return seq
        return placeholder.pop((body["session"], body["evidence_event"], body["said_at"], negated), seq)

    def add(key, st: Statement) -> None:
        if key not in plan.keys:
            return
        if st.resolution is None:
            c = st.candidate
            ident = (key, c.session, c.evidence_event, value_key(c.value), c.negated, c.effective_date)
            if ident in seen:                  # one utterance recorded twice (an earlier compensation)
                if st.origin and not seen[ident].origin:
                    seen[ident].origin = st.origin
                return
            seen[ident] = st
        out.setdefault(key, []).append(st)

    for e in plan.events:
        body = e.body
        if body is None or e.seq in targets:
            continue
        if e.type == "FactObserved":
            add((body["subject"], body["predicate"]), Statement(
                place(body, e.seq, False),
                _candidate(app, user, body, body["value"], body.get("effective_date")),
                origin=body["fact_id"], confidence=body.get("confidence")))
        elif e.type in ("FactReinforced", "FactRetracted"):
            negated = e.type == "FactRetracted"
            fact = facts.get(body["fact_id"])
            if fact is None:                   # its value went with an earlier redaction
                placeholder.setdefault((body["session"], body["evidence_event"], body["said_at"],
                                        negated), e.seq)
                continue
            add((fact["subject"], fact["predicate"]), Statement(
                place(body, e.seq, negated),
                _candidate(app, user, body, fact["value"], fact.get("effective_date"),
                           negated=negated, subject=fact["subject"], predicate=fact["predicate"]),
                confidence=body.get("confidence"), lossy=body["fact_id"] in plan.facts))
        elif e.type == "CandidateRejected" and body.get("rule") in REJECTING_RULES:
            # the table's rejections only (a reviewer's accept can be one), never a validator's,
            # a session validator's or a reviewer's rejection
            c = body.get("candidate") or {}
            try:
                cand = Candidate.model_construct(app=app, user=user, **c)
            except TypeError:
                continue
            if not all(hasattr(cand, name) for name in ("value", "session", "said_at")):
                continue
            add((c.get("subject", "user"), c.get("predicate")),
                Statement(e.seq, cand, confidence=c.get("confidence")))
        elif e.type == "DisputeResolved" and body.get("resolved_by") != "ledger":
            fact = facts.get(body["fact_id"])
            if fact is not None:
                add((fact["subject"], fact["predicate"]),
                    Statement(e.seq, None, resolution=body))  # type: ignore[arg-type]
    for items in out.values():
        items.sort(key=lambda st: st.seq)       # re-recordings in their original place (stable)
    return out


def _candidate(app: str, user: str, body: dict, value: str, effective_date: str | None, *,
               negated: bool = False, subject: str | None = None,
               predicate: str | None = None) -> Candidate:
    return Candidate.model_construct(
        app=app, user=user, subject=subject or body["subject"],
        predicate=predicate or body["predicate"], value=value, quote=body["quote"],
        session=body["session"], evidence_event=body["evidence_event"], author=body["author"],
        basis=body["basis"], negated=negated, confidence=None, said_at=body["said_at"],
        effective_date=effective_date)


def _spec(registry: Registry, plan: Plan, key: tuple[str, str]) -> PredicateSpec | None:
    spec = registry.resolve(key[1])
    if spec is not None and spec.name == key[1]:
        return spec
    recorded = next((b for b in plan.facts_by_id.values()
                     if (b["subject"], b["predicate"]) == key), None)
    if recorded is None:
        return None
    return PredicateSpec(name=key[1], cardinality=recorded["cardinality"],
                         sensitivity=recorded["sensitivity"], kind=recorded["kind"])


def _simulate(statements: list[Statement], spec: PredicateSpec) -> list[SimFact]:
    """The decision table over the surviving statements, in log order, with nothing written."""
    sims: list[SimFact] = []

    def close(fact: SimFact, status: str, at: str | None, by: int | None,
              stmt: Statement | None = None) -> None:
        if fact.status not in ("current", "disputed"):
            return
        for other in fact.partners:
            sims[other].partners.discard(fact.sid)
        fact.status, fact.partners, fact.closed_at, fact.closed_by = status, set(), at, by
        fact.closed_stmt = stmt

    for st in statements:
        open_ = [f for f in sims if f.status in ("current", "disputed")]
        if st.resolution is not None:
            _resolve(st.resolution, sims, open_, close)
            continue
        c = st.candidate
        decision = decide(c, [f.open_fact() for f in open_], spec)
        target = sims[int(decision.target.fact_id)] if decision.target else None
        closes = [sims[int(f.fact_id)] for f in decision.closes]
        if decision.action == "retract" and target is not None:
            close(target, "retracted", c.said_at, None, st)
            if decision.promotes is not None:  # the key passes to the strongest challenger
                _handover(sims, sims[int(decision.promotes.fact_id)],
                          [sims[int(f.fact_id)] for f in decision.redisputes])
        elif decision.action == "reinforce" and target is not None:
            target.extra.append(st)
            if BASIS_RANK[c.basis] > BASIS_RANK[target.basis]:
                target.basis = c.basis
            if decision.settles:
                for loser in closes:
                    close(loser, "superseded", target.first.candidate.said_at, target.sid)
                target.status = "current"
        elif decision.action in ("insert", "dispute", "supersede"):
            new = SimFact(len(sims), st, basis=c.basis, rule=decision.rule)
            sims.append(new)
            if decision.action == "dispute" and target is not None:
                new.status = "disputed"
                new.partners.add(target.sid)
                target.partners.add(new.sid)
            elif decision.action == "supersede":
                for old in closes:
                    close(old, "superseded", c.said_at, new.sid)
    return sims


def _handover(sims: list[SimFact], heir: SimFact, others: list[SimFact]) -> None:
    """As `ledger.plan.handover` records it: the heir is current, the other challengers dispute it."""
    heir.status = "current"
    for other in others:
        other.status = "disputed"
        other.partners.add(heir.sid)
        heir.partners.add(other.sid)


def _resolve(body: dict, sims: list[SimFact], open_: list[SimFact], close) -> None:
    by_origin = {f.origin: f for f in open_ if f.origin}
    winner = by_origin.get(body.get("winner_id"))
    for loser_id in body.get("loser_ids", ()):
        loser = by_origin.get(loser_id)
        if loser is not None:
            close(loser, body.get("loser_state", "superseded"), body.get("valid_to"),
                  winner.sid if winner else None)
    if winner is not None:
        # A reviewer's rejection of an incumbent hands the key over (ledger/resolve.py): the
        # challengers left without a partner dispute the new current fact.
        orphans = [f for f in open_ if f is not winner and f.status == "disputed" and not f.partners]
        _handover(sims, winner, orphans if winner.status == "disputed" else [])


def _fold_open(conn: sqlite3.Connection, app: str, user: str, key: tuple[str, str]) -> dict:
    rows = conn.execute("SELECT fact_id, status, disputes, sessions FROM facts_current"
                        " WHERE app = ? AND user = ? AND subject = ? AND predicate = ?",
                        (app, user, *key))
    return {fid: (status, orjson.loads(disputes), orjson.loads(sessions))
            for fid, status, disputes, sessions in rows}


def _reconcile(conn, plan: Plan, key, spec: PredicateSpec, sims: list[SimFact], cause: int,
               pre_open: set[str], registry_sha: str, emit) -> None:
    app, user = plan.scope.app, plan.scope.user
    common = dict(app=app, user=user, registry_sha256=registry_sha)
    open_sims = [f for f in sims if f.status in ("current", "disputed")]
    recorded = next((b for b in plan.facts_by_id.values()
                     if (b["subject"], b["predicate"]) == key), None)

    def observe_anew(sim) -> None:
        """Record a value whose observation is gone, from its first surviving statement."""
        c = sim.first.candidate
        emit(FactObserved(
            fact_id=sim.fact_id, rule=sim.rule or RULE, subject=c.subject, predicate=spec.name,
            value=c.value, session=c.session, evidence_event=c.evidence_event, quote=c.quote,
            author=c.author, basis=c.basis,
            confidence=initial_confidence(c.basis, sim.first.confidence),
            sensitivity=recorded["sensitivity"] if recorded else spec.sensitivity,
            kind=recorded["kind"] if recorded else spec.kind,
            cardinality=recorded["cardinality"] if recorded else spec.cardinality,
            said_at=c.said_at, effective_date=c.effective_date, cause=cause, **common))

    # 1. A value open only through a statement that was never its observation: observe it anew.
    for sim in open_sims:
        if sim.origin is not None:
            sim.fact_id = sim.origin
            continue
        sim.fact_id = new_id()
        observe_anew(sim)

    # 1b. A value re-decision opens and closes again, whose only record is an observation
    #     scrubbed now (a surviving reinforcement of it): record it, closed, so a later forget
    #     can still give it back.
    for sim in sims:
        if sim.origin is not None:
            sim.fact_id = sim.origin
    lost = [sim for sim in sims if sim not in open_sims and sim.origin is None and sim.first.lossy]
    for sim in lost:
        sim.fact_id = new_id()
    for sim in lost:
        observe_anew(sim)
        for st in sim.extra:
            if st.lossy:
                e = st.candidate
                emit(FactReinforced(
                    fact_id=sim.fact_id, rule=RULE, session=e.session,
                    evidence_event=e.evidence_event, quote=e.quote, author=e.author, basis=e.basis,
                    confidence=initial_confidence(e.basis, st.confidence), said_at=e.said_at,
                    cause=cause, **common))
        end = sim.closed_stmt
        if end is not None and end.lossy:
            e = end.candidate
            emit(FactRetracted(fact_id=sim.fact_id, rule=RULE, session=e.session,
                               evidence_event=e.evidence_event, quote=e.quote, author=e.author,
                               basis=e.basis, said_at=e.said_at, cause=cause, **common))
        else:
            closer = sims[sim.closed_by] if sim.closed_by is not None else None
            emit(FactSuperseded(fact_id=sim.fact_id, rule=RULE,
                                by_fact_id=closer.fact_id if closer is not None else None,
                                reason="redaction", valid_to=sim.closed_at, cause=cause, **common))

    # 2. Close what the fold keeps open and re-decision does not.
    keep = {sim.fact_id for sim in open_sims}
    by_origin = {f.origin: f for f in sims if f.origin}
    current = next((f for f in open_sims if f.status == "current"), None)
    for fact_id in sorted(_fold_open(conn, app, user, key)):
        if fact_id in keep:
            continue
        sim = by_origin.get(fact_id)
        closer = sims[sim.closed_by] if sim is not None and sim.closed_by is not None else current
        by = closer.fact_id if closer is not None and closer.fact_id in keep else None
        emit(FactSuperseded(fact_id=fact_id, rule=RULE, by_fact_id=by, reason="redaction",
                            valid_to=sim.closed_at if sim is not None else None, cause=cause,
                            **common))

    # 3. Reopen what re-decision keeps open, and restore its disputes.
    fold = _fold_open(conn, app, user, key)
    for sim in open_sims:
        if sim.origin is None:
            continue
        status = fold.get(sim.fact_id, (None,))[0]
        if sim.origin not in pre_open or status is None or (
                sim.status == "current" and status != "current"):
            emit(FactReinstated(fact_id=sim.fact_id, rule=RULE, cause=cause, reason="redaction",
                                **common))
    fold = _fold_open(conn, app, user, key)
    for sim in open_sims:
        if sim.status != "disputed":
            continue
        for partner in sorted(sims[p].fact_id for p in sim.partners):
            mine, theirs = fold.get(sim.fact_id), fold.get(partner)
            if (mine is None or theirs is None or mine[0] != "disputed" or partner not in mine[1]
                    or sim.fact_id not in theirs[1]):
                emit(FactDisputed(fact_id=sim.fact_id, rule=RULE, disputes=partner, cause=cause,
                                  **common))

    # 4. Reinforcements that now count towards a different fact.
    fold = _fold_open(conn, app, user, key)
    for sim in open_sims:
        counted = set(fold.get(sim.fact_id, (None, [], []))[2])
        for st in sim.extra:
            c = st.candidate
            if c.session in counted:
                continue
            counted.add(c.session)
            emit(FactReinforced(
                fact_id=sim.fact_id, rule=RULE, session=c.session, evidence_event=c.evidence_event,
                quote=c.quote, author=c.author, basis=c.basis,
                confidence=initial_confidence(c.basis, st.confidence), said_at=c.said_at,
                cause=cause, **common))
