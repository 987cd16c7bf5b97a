"""Turns a decision into the events that record it.

The decision table says *what* happens; this module says *which events* say so, with the rule,
the registry hash and the provenance each one carries.  Kept apart from `decide` so the table
stays a pure function of its inputs.  Each body is the dict its model dumps to, built directly
(`ledger.domain.dumped`: the same bytes, validated by the same rules, for less).
"""

from __future__ import annotations

from collections.abc import Callable

from factledger.ledger.domain.candidate import Candidate
from factledger.ledger.domain.confidence import BASIS_RANK, initial_confidence
from factledger.ledger.domain.decision import Decision, Negation
from factledger.ledger.domain.dumped import dumped
from factledger.ledger.domain.events import (
    MODELS,
    CandidateHeld,
    CandidateRejected,
    DisputeResolved,
    FactDisputed,
    FactNegated,
    FactObserved,
    FactReinforced,
    FactRetracted,
    FactSplit,
    FactSuperseded,
)
from factledger.ledger.errors import LedgerError
from factledger.ledger.registry.predicates import PredicateSpec
from factledger.ledger.vocabulary.ids import new_id, split_id
from factledger.ledger.vocabulary.words import Reason, Rule


def observation(c: Candidate, spec: PredicateSpec, fact_id: str, rule: str, registry_sha: str,
                basis_claimed: str | None = None, hold_id: str | None = None,
                unchecked: bool = False) -> dict:
    return dumped(FactObserved,
        app=c.app, user=c.user, fact_id=fact_id, rule=rule, registry_sha256=registry_sha,
        subject=c.subject, predicate=spec.name, value=c.value, session=c.session,
        evidence_event=c.evidence_event, quote=c.quote, author=c.author, basis=c.basis,
        basis_claimed=basis_claimed, confidence=initial_confidence(c.basis, c.confidence),
        sensitivity=spec.sensitivity, kind=spec.kind, cardinality=spec.cardinality,
        said_at=c.said_at,
        effective_date=((c.effective_date or c.said_at[:10]) if spec.cardinality == "series" or spec.dated
                        else c.effective_date),
        hold_id=hold_id, unchecked=True if unchecked else None,
    )


Statements = Callable[[list[int]], dict[int, dict]]     # seqs -> the bodies that recorded them


def events_for(decision: Decision, c: Candidate, spec: PredicateSpec, registry_sha: str,
               basis_claimed: str | None = None, *, fact_id: str | None = None,
               statements: Statements | None = None) -> tuple[list[dict], str | None]:
    """The bodies to append, and the fact the decision is about (new or existing).

    The first body records the statement itself and carries all of it (key, value, quote, basis,
    time), whatever the decision: re-decision after a forget reads statements back from these
    bodies.  `fact_id` names a new fact (re-decision keeps a re-recorded observation's id).
    `statements` reads the bodies of a fact's statements by seq: only a split (`Decision.splits`)
    needs them, for the quote of the statement the fact holds again from and the authority of
    each part.
    """
    common = dict(app=c.app, user=c.user, registry_sha256=registry_sha)
    target = decision.target.fact_id if decision.target else None
    action = decision.action
    said = dict(subject=c.subject, predicate=spec.name, value=c.value, effective_date=c.effective_date,
                basis_claimed=basis_claimed)
    if action == "reject":
        return [dumped(CandidateRejected, reason=decision.reason, rule=decision.rule, candidate=c.record(),
                                          fact_id=target, basis_claimed=basis_claimed, **common)], target
    if action == "retract" and decision.splits is not None:
        return split(decision, c, spec, registry_sha, basis_claimed, fact_id, common, said, statements)
    if action == "retract":
        bodies = [dumped(FactRetracted, fact_id=target, rule=decision.rule, session=c.session,
                                        evidence_event=c.evidence_event, quote=c.quote, author=c.author,
                                        basis=c.basis, said_at=c.said_at, confidence=c.confidence, **said,
                                        **common)]
        if decision.promotes is not None:
            bodies += handover(decision.promotes.fact_id, [f.fact_id for f in decision.redisputes],
                               "incumbent_retracted", "ledger", decision.rule, common)
        return bodies, target
    if action == "reinforce":
        bodies: list[dict] = [dumped(FactReinforced,
            fact_id=target, rule=decision.rule, session=c.session, evidence_event=c.evidence_event,
            quote=c.quote, author=c.author, basis=c.basis,
            confidence=initial_confidence(c.basis, c.confidence), said_at=c.said_at, **said, **common)]
        if decision.settles:
            bodies.append(dumped(DisputeResolved,
                fact_id=target, rule=decision.rule, outcome="accept", winner_id=target,
                loser_ids=[f.fact_id for f in decision.closes], loser_state="superseded",
                resolved_by="ledger", reason=Reason.SETTLED_BY_AUTHORITY,
                valid_to=decision.target.said_at, **common))
        return bodies, target
    if action == "backfill":
        if decision.splits is not None:
            return split(decision, c, spec, registry_sha, basis_claimed, fact_id, common, said, statements)
        return backfilled(decision, c, spec, registry_sha, basis_claimed, fact_id, common, said)
    fact_id = fact_id or new_id()
    bodies = [observation(c, spec, fact_id, decision.rule, registry_sha, basis_claimed,
                          unchecked=decision.unchecked)]
    if action == "dispute":
        bodies.append(dumped(FactDisputed, fact_id=fact_id, rule=decision.rule, disputes=target, **common))
    elif action == "supersede":
        bodies += [dumped(FactSuperseded, fact_id=old.fact_id, rule=decision.rule, by_fact_id=fact_id,
                                          reason=Reason.SUPERSEDED, valid_to=c.said_at, **common)
                   for old in decision.closes]
    if decision.cuts is not None:
        bodies.append(cut_short(decision.cuts, fact_id, c.said_at, common))
    if decision.negated_at is not None:
        bodies.append(negated(fact_id, decision.negated_at, common))
    return bodies, fact_id


def cut_short(held, fact_id: str, t: str, common: dict) -> dict:
    """The closed fact that held the key when a value learnt late was said ends then instead."""
    return dumped(FactSuperseded, fact_id=held.fact_id, rule=Rule.BACKFILL, by_fact_id=fact_id,
                  reason=Reason.BACKFILLED, valid_to=t, **common)


def negated(fact_id: str, negation: Negation, common: dict) -> dict:
    """A fact just opened by a statement learnt after a negation of its value said later: in
    said order that negation retracted it, so it closes `retracted` at the negation's time."""
    return dumped(FactNegated, fact_id=fact_id, rule=Rule.NEGATED_LATER, valid_to=negation.said_at, **common)


def backfilled(decision: Decision, c: Candidate, spec: PredicateSpec, registry_sha: str,
               basis_claimed: str | None, fact_id: str | None, common: dict,
               said: dict) -> tuple[list[dict], str | None]:
    """A statement said before the key's current fact, placed in valid time (decide's Row 5b).

    `earlier_same_value`: the next known value is this one, so that fact held from this earlier
    statement on (a reinforcement that becomes the fact's first statement).  `backfill`: a new fact,
    closed at once as `superseded` by the next known value, valid until that value was said.  Either
    way the closed fact that held the key when it was said (`cuts`) ends then instead: a correction
    in valid time, recorded (like every change) in transaction time."""
    if decision.rule == Rule.EARLIER_SAME_VALUE:
        fact_id = decision.target.fact_id
        bodies: list[dict] = [dumped(FactReinforced,
            fact_id=fact_id, rule=decision.rule, session=c.session, evidence_event=c.evidence_event,
            quote=c.quote, author=c.author, basis=c.basis,
            confidence=initial_confidence(c.basis, c.confidence), said_at=c.said_at, **said, **common)]
    elif decision.negated_at is not None:
        fact_id = fact_id or new_id()
        bodies = [observation(c, spec, fact_id, decision.rule, registry_sha, basis_claimed),
                  negated(fact_id, decision.negated_at, common)]
    else:
        fact_id = fact_id or new_id()
        bodies = [observation(c, spec, fact_id, decision.rule, registry_sha, basis_claimed),
                  dumped(FactSuperseded, fact_id=fact_id, rule=decision.rule, by_fact_id=decision.until.fact_id,
                                         reason=Reason.BACKFILLED, valid_to=decision.valid_to, **common)]
    if decision.cuts is not None:
        bodies.append(cut_short(decision.cuts, fact_id, c.said_at, common))
    return bodies, fact_id


def split(decision: Decision, c: Candidate, spec: PredicateSpec, registry_sha: str,
          basis_claimed: str | None, fact_id: str | None, common: dict, said: dict,
          statements: Statements | None) -> tuple[list[dict], str | None]:
    """A statement said between two statements of one fact (decide's Row 5c), which splits it
    there (`FactSplit`): the part before gets a new id, and the fact keeps its id, status and
    end for the part a reviewer, recall and `why` already name.  A value: a new fact for it first,
    then the split, then the new fact closed as `superseded` by the fact, at its next statement.
    A negation: its `FactRetracted` names the part before (which the split then opens, retracted)."""
    held, first = decision.splits, decision.resumes
    if statements is None:
        raise LedgerError("internal: a split needs the statements of the fact it splits")
    bodies_by_seq = statements([s[2] for s in held.said])
    if any(s[2] not in bodies_by_seq for s in held.said):
        raise LedgerError(f"internal: a statement of fact {held.fact_id} is missing from the log")
    resumed = bodies_by_seq[first[2]]

    def strength(part: list) -> tuple[str, float]:
        said = [bodies_by_seq[s[2]] for s in part]
        return (max((b["basis"] for b in said), key=BASIS_RANK.__getitem__), max(b["confidence"] for b in said))

    t = c.said_at
    early_basis, early_confidence = strength([s for s in held.said if s[0] <= t])
    basis, confidence = strength([s for s in held.said if s[0] > t])
    early_id = split_id(held.fact_id, t)
    if c.negated:
        said_by: dict = dumped(FactRetracted, fact_id=early_id, rule=decision.rule, session=c.session,
                                              evidence_event=c.evidence_event, quote=c.quote, author=c.author,
                                              basis=c.basis, said_at=t, confidence=c.confidence, **said, **common)
        by, state = None, "retracted"
    else:
        fact_id = fact_id or new_id()
        said_by = observation(c, spec, fact_id, decision.rule, registry_sha, basis_claimed)
        by, state = fact_id, "superseded"
    bodies: list[dict] = [said_by, dumped(FactSplit,
        fact_id=held.fact_id, rule=Rule.SPLIT, split_id=early_id, by_fact_id=by, early_state=state, at=t,
        said_at=first[0], session=first[1], evidence_event=resumed["evidence_event"], quote=resumed["quote"],
        author=resumed["author"], basis=basis, confidence=confidence, early_basis=early_basis,
        early_confidence=early_confidence, subject=c.subject, predicate=spec.name, **common)]
    if c.negated:
        return bodies, early_id
    if decision.negated_at is not None:
        return bodies + [negated(fact_id, decision.negated_at, common)], fact_id
    return bodies + [dumped(FactSuperseded, fact_id=fact_id, rule=decision.rule, by_fact_id=held.fact_id,
                                            reason=Reason.BACKFILLED, valid_to=decision.valid_to, **common)], fact_id


def stamped(bodies: list[dict], hold_id: str | None, review: dict | None = None) -> list[dict]:
    """A reviewer's accept of a held candidate: the statement's bodies name the hold (and the
    reviewer, `reviewed_by` / `review_reason`), so the review queue item closes with them."""
    if hold_id is None:
        return bodies
    stamp = {"hold_id": hold_id, **(review or {})}
    return [updated(b, stamp) if "hold_id" in MODELS[b["type"]].model_fields else b for b in bodies]


def updated(body: dict, update: dict) -> dict:
    """A body built here with these fields set too (as `model_copy(update=...)` of the model it
    was dumped from, validated again)."""
    return dumped(MODELS[body["type"]], **{**body, **update})


def handover(heir: str, others: list[str], reason: str, by: str, rule: str, common: dict) -> list[dict]:
    """A key whose current fact closed passes to its strongest challenger; the rest dispute it."""
    bodies: list[dict] = [dumped(DisputeResolved, fact_id=heir, rule=rule, outcome="accept", winner_id=heir,
                                                  loser_ids=[], resolved_by=by, reason=reason, **common)]
    bodies += [dumped(FactDisputed, fact_id=other, rule=rule, disputes=heir, **common) for other in others]
    return bodies


def held(c: Candidate, reason: str, registry_sha: str) -> CandidateHeld:
    return CandidateHeld(app=c.app, user=c.user, hold_id=new_id(), reason=reason,
                         candidate=c.record(), registry_sha256=registry_sha)


def rejected(c: Candidate, reason: str, rule: str, registry_sha: str) -> CandidateRejected:
    return CandidateRejected(app=c.app, user=c.user, reason=reason, rule=rule,
                             candidate=c.record(), registry_sha256=registry_sha)
