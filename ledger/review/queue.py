"""The review queue's two verbs: accept a held candidate under a registry predicate, or reject it.

Both are events.  Accepting runs the candidate through the normal write path (registry rules,
decision table) with its `hold_id` set, so the fact's provenance still names the session, the
evidence event and the quote, and the queue item closes when the decision is appended.
Rejecting appends `CandidateRejected` with the reviewer's reason.
"""

from __future__ import annotations

from factledger.ledger.domain.candidate import make_candidate
from factledger.ledger.domain.events import CandidateRejected
from factledger.ledger.domain.outcome import Outcome
from factledger.ledger.errors import LedgerError
from factledger.ledger.unit import UnitOfWork
from factledger.ledger.vocabulary.words import Rule
from factledger.projections.review import open_item


def _reviewer(by: str | None, reason: str | None = None) -> dict:
    """The reviewer's name and words as the events record them (absent when not given)."""
    out = {"reviewed_by": (by or "").strip()[:200], "review_reason": (reason or "").strip()[:500]}
    return {key: value for key, value in out.items() if value}


def accept(work: UnitOfWork, hold_id: str, predicate: str, *, by: str | None = None,
           reason: str | None = None) -> Outcome:
    if not predicate or not predicate.strip():
        raise LedgerError("say which predicate: --as PREDICATE")
    spec = work.registry.resolve(predicate)
    if spec is None:
        raise LedgerError(f"{predicate!r} is not a predicate of the registry")
    with work.transaction():
        item = open_item(work.conn, hold_id)
        fields = dict(item["candidate"], predicate=spec.name, app=item["app"], user=item["user"])
        candidate = make_candidate(**fields)
        return work.append_candidate(candidate, hold_id=hold_id, review=_reviewer(by, reason))


def reject(work: UnitOfWork, hold_id: str, reason: str, *, by: str | None = None) -> Outcome:
    if not reason or not reason.strip():
        raise LedgerError("say why: --reason R")
    with work.transaction():
        item = open_item(work.conn, hold_id)
        event = work.store.append(CandidateRejected(
            app=item["app"], user=item["user"], reason=reason.strip()[:500], rule=Rule.REVIEWER,
            candidate=item["candidate"], hold_id=hold_id, registry_sha256=work.registry.sha256,
            **_reviewer(by)))
    return Outcome("reject", None, reason.strip(), Rule.REVIEWER, [event.seq])
