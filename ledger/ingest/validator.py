"""The validator rules that need the session (docs/ingestion.md).

An extractor's proposal is only a claim about the transcript, so before the registry rules and
the decision table see it, it is checked against the session: the evidence event exists, is in
the delta being ingested and is not partial; the quote occurs in its text and is evidence (of
substance, a negation that negates); author and said_at are the event's own; two proposals giving
one single-valued key different values from one event are both rejected; the candidate is
well-formed data.  Each rule and its rejection reason: docs/ingestion.md, "The validator".  A
rejection is a `CandidateRejected` body to append, so "was it stored, and if not why?" is always
answered in the log.
"""

from __future__ import annotations

from pydantic import ValidationError

from factledger.ledger.domain.candidate import Candidate, describe_validation_error, value_key
from factledger.ledger.domain.events import CandidateRejected
from factledger.ledger.domain.support import UNSUPPORTED, plain_typography, refused, unsupported
from factledger.ledger.ingest.proposal import Proposal
from factledger.ledger.ingest.session import Delta
from factledger.ledger.registry.predicates import Registry
from factledger.ledger.vocabulary.words import Rule

RULE = Rule.SESSION_VALIDATOR
_RECORD_LIMIT = 500


def normalise_quote(text: str) -> str:
    """The form quotes are compared in: NFC, typographic quotes folded, whitespace collapsed."""
    return " ".join(plain_typography(text).split())


def quote_occurs(quote: str, text: str) -> bool:
    wanted = normalise_quote(quote)
    return bool(wanted) and wanted in normalise_quote(text)


def in_transcript_order(proposals: list[Proposal], delta: Delta) -> list[Proposal]:
    """Proposals ordered by their evidence event, so the later statement is decided last
    whatever order the extractor (a model) listed them in."""
    order = {e.id: i for i, e in enumerate(delta.session.events)}
    return sorted(proposals, key=lambda p: order.get(p.evidence_event, -1))


def conflicting(checked: list, registry: Registry | None) -> set[int]:
    """Indexes of the valid candidates that give one single-valued key different values from one
    event: the event cannot say both, so neither is kept (instead of silently keeping the last).
    Only values the quote supports count: one the write path will hold for a reviewer
    (`unsupported_by_quote`) takes nothing from a value the same event does say."""
    values: dict[tuple, set[str]] = {}
    keys = []
    for c in checked:
        spec = registry.spec_for(c.predicate, c.kind) if registry and isinstance(c, Candidate) else None
        key = None
        if (spec is not None and spec.cardinality == "one" and not c.negated
                and unsupported(c, spec) != UNSUPPORTED):
            key = (c.subject, spec.name, c.evidence_event)
            values.setdefault(key, set()).add(value_key(c.value))
        keys.append(key)
    return {i for i, key in enumerate(keys) if key is not None and len(values[key]) > 1}


def rejection(proposal: Proposal, delta: Delta, app: str, user: str, registry_sha: str,
              reason: str, **extra) -> CandidateRejected:
    """The `CandidateRejected` body for a proposal, with the evidence event's author and time."""
    event = delta.session.event(proposal.evidence_event)
    record = {k: (v[:_RECORD_LIMIT] if isinstance(v, str) else v)
              for k, v in proposal.record().items()}
    record["session"] = delta.session.id
    if event is not None:
        record.update(author=event.author, said_at=event.said_at)
    record.update(extra)
    return CandidateRejected(app=app, user=user, reason=reason, rule=RULE, candidate=record,
                             registry_sha256=registry_sha)


def check(proposal: Proposal, delta: Delta, app: str, user: str,
          registry_sha: str, registry: Registry | None = None) -> Candidate | CandidateRejected:
    """A candidate carrying the evidence event's author and time, or the rejection to append."""
    session = delta.session
    event = session.event(proposal.evidence_event)

    def reject(reason: str, **extra) -> CandidateRejected:
        return rejection(proposal, delta, app, user, registry_sha, reason, **extra)

    if event is None:
        return reject("evidence_event_missing")
    if event.id in delta.earlier_ids:
        return reject("evidence_already_ingested")
    if event.partial:
        return reject("evidence_event_partial")
    if not quote_occurs(proposal.quote, event.text):
        return reject("quote_not_in_evidence")
    try:
        candidate = Candidate(
            app=app, user=user, subject=proposal.subject, predicate=proposal.predicate,
            value=proposal.value, quote=proposal.quote, session=session.id,
            evidence_event=event.id, author=event.author, basis=proposal.basis,
            negated=proposal.negated, confidence=proposal.confidence, said_at=event.said_at,
            effective_date=proposal.effective_date, kind=proposal.kind, sensitivity=proposal.sensitivity)
    except ValidationError as exc:
        return reject("invalid_candidate", error=describe_validation_error(exc)[:_RECORD_LIMIT])
    # the value's support (held, not rejected, when the quote does not give it) is the write
    # path's, for every writer alike (`UnitOfWork.append_candidate`); here only what refuses
    reason = refused(proposal, registry.spec_for(proposal.predicate, proposal.kind) if registry else None)
    return candidate if reason is None else reject(reason)
