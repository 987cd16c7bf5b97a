"""Statements read back from the log: what re-decision after a forget decides again.

A key's events are of two kinds.  *Statements* are what someone said or judged: an observation,
a reinforcement, a retraction, a candidate the decision table rejected, a reviewer's settlement.
*Decisions* are what the ledger concluded from them: a supersession, a dispute, a handover, a
settlement by authority, a reinstatement.  Re-decision keeps the statements, in log order, and
derives the decisions again through the live path (`ledger.redecide`).

Every statement body carries all a decision needs (key, value, quote, author, basis, time).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from factledger.ledger.domain.candidate import Candidate, value_key
from factledger.ledger.domain.decide import REJECTING_RULES
from factledger.ledger.domain.decision import Negation
from factledger.ledger.domain.events import EVENT
from factledger.ledger.vocabulary.words import Rule

Key = tuple[str, str]                     # (subject, predicate)
FACT_EVENTS = (EVENT.FactObserved, EVENT.FactReinforced, EVENT.FactRetracted, EVENT.FactSuperseded, EVENT.FactDisputed,
               EVENT.DisputeResolved, EVENT.FactReinstated, EVENT.FactSplit, EVENT.FactNegated, EVENT.MeaningChecked)


@dataclass(frozen=True)
class Resolution:
    """A reviewer's accept or reject of one fact (`ledger.resolve.settlement` applies it)."""

    fact_id: str
    accept: bool
    by: str
    reason: str


@dataclass(frozen=True)
class Statement:
    seq: int                              # the event that recorded it
    candidate: Candidate | None = None    # None for a reviewer's resolution
    basis_claimed: str | None = None
    hold_id: str | None = None
    fact_id: str | None = None            # the fact it observed when first recorded (`observed_as`), if any
    resolution: Resolution | None = None
    review: tuple[tuple[str, str], ...] = ()   # reviewed_by / review_reason of a reviewer's accept

    def masked(self, mask) -> Statement:
        """The statement with `mask` applied to its quote (or a resolution's reason)."""
        if self.resolution is not None:
            reason = mask(self.resolution.reason, "")
            return self if reason == self.resolution.reason else replace(
                self, resolution=replace(self.resolution, reason=reason))
        c = self.candidate
        quote = mask(c.quote, c.value)
        return self if quote == c.quote else replace(self, candidate=c.model_copy(update={"quote": quote}))


def key_of(event_type: str, body: dict, facts_by_id: dict[str, dict]) -> Key | None:
    """The key an event is about, or None for an event about no key (sessions, holds, ...)."""
    if event_type == EVENT.FactObserved:
        return (body["subject"], body["predicate"])
    if event_type in FACT_EVENTS:
        if body.get("predicate") is not None:
            return (body["subject"], body["predicate"])
        fact = facts_by_id.get(body.get("fact_id"))
        return (fact["subject"], fact["predicate"]) if fact is not None else None
    if event_type == EVENT.CandidateRejected and body.get("rule") in REJECTING_RULES:
        c = body.get("candidate") or {}
        if isinstance(c.get("predicate"), str):
            return (c.get("subject", "user"), c["predicate"])
    return None


def is_statement(event_type: str, body: dict) -> bool:
    if event_type in (EVENT.FactObserved, EVENT.FactReinforced, EVENT.FactRetracted):
        return True
    if event_type == EVENT.CandidateRejected:
        return body.get("rule") in REJECTING_RULES
    return event_type == EVENT.DisputeResolved and body.get("resolved_by") != "ledger"


def heard_negation(seq: int, event_type: str, body: dict) -> tuple[Key, str, Negation] | None:
    """(key, value key, negation) of a negation the decision table heard, whatever it decided: a
    retraction, or a rejection by the table (nothing to retract, older than the fact, too weak).
    The key keeps them (projections/negations.py; re-decision's `KeyFold`): a statement of the
    value learnt later but said before one of them opens a fact that negation ended."""
    if event_type == EVENT.FactRetracted:
        said = body
    elif event_type == EVENT.CandidateRejected and body.get("rule") == Rule.NEGATION:
        said = body.get("candidate") or {}
        if said.get("negated") is not True:
            return None
    else:
        return None
    return ((said.get("subject") or "user", said["predicate"]), value_key(said["value"]),
            Negation(said["said_at"], said.get("basis") or "stated", seq))


def statement_of(seq: int, event_type: str, body: dict, app: str, user: str) -> Statement | None:
    """The statement an event records, or None (a decision)."""
    if not is_statement(event_type, body):
        return None
    if event_type == EVENT.DisputeResolved:
        return Statement(seq, resolution=Resolution(body["fact_id"], body["outcome"] == "accept",
                                                    body["resolved_by"], body["reason"]))
    if event_type == EVENT.CandidateRejected:
        try:
            c = Candidate.model_construct(app=app, user=user, **body["candidate"])
        except TypeError:
            return None
        return Statement(seq, c, body.get("basis_claimed"), body.get("hold_id"), body.get("observed_as"),
                         review=_review(body))
    fields = dict(subject=body["subject"], predicate=body["predicate"], value=body["value"],
                  effective_date=body.get("effective_date"))
    c = Candidate.model_construct(
        app=app, user=user, quote=body["quote"], session=body["session"],
        evidence_event=body["evidence_event"], author=body["author"], basis=body["basis"],
        negated=event_type == EVENT.FactRetracted, confidence=body.get("confidence"),
        said_at=body["said_at"], **fields)
    return Statement(seq, c, body.get("basis_claimed"), body.get("hold_id"),
                     body["fact_id"] if event_type == EVENT.FactObserved else body.get("observed_as"),
                     review=_review(body))


def _review(body: dict) -> tuple[tuple[str, str], ...]:
    return tuple((k, body[k]) for k in ("reviewed_by", "review_reason") if body.get(k) is not None)
