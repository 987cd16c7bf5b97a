"""Ingesting one session: watermark, extract, validate, decide, append; one transaction.

Extraction runs outside the write transaction (a model call must not hold the ledger's lock);
the watermark is read again inside it, and if another writer moved it meanwhile the delta is
recomputed and extracted again, so two processes ingesting the same session never count an
event twice.  Everything the session causes (decisions, rejections, holds, the `SessionIngested`
watermark) commits together or not at all; an extractor failure appends only `IngestFailed`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from factledger.ledger.audit import served
from factledger.ledger.domain.candidate import refuse_reserved_user
from factledger.ledger.domain.clocksanity import refuse_future
from factledger.ledger.domain.events import CandidateRejected, IngestFailed, SessionIngested
from factledger.ledger.errors import LedgerError
from factledger.ledger.forget.scope import session_hash
from factledger.ledger.ingest import validator
from factledger.ledger.ingest.extractor import Context, ExtractionFailed, Extractor
from factledger.ledger.ingest.extractors import make_extractor
from factledger.ledger.ingest.formats import parse_adk
from factledger.ledger.ingest.session import Session, tail
from factledger.ledger.store.eventlog import snapshot
from factledger.ledger.unit import UnitOfWork
from factledger.ledger.vocabulary.ids import normalise_optional
from factledger.ledger.vocabulary.terminal import escape
from factledger.projections.current import partition_keys
from factledger.projections.erasures import is_forgotten
from factledger.projections.sessions import checked_state

MAX_DIGEST = 300
ATTEMPTS = 3


@dataclass
class SessionResult:
    """What ingesting one session did; the CLI summary adds these up."""

    source: str
    session: str | None = None
    app: str | None = None
    user: str | None = None
    status: str = "ingested"          # ingested | unchanged | failed (extractor) | error (input)
    events_read: int = 0
    candidates: int = 0
    counts: Counter = field(default_factory=Counter)
    error: str | None = None
    digest: str | None = None
    watermark: str | None = None
    seqs: list[int] = field(default_factory=list)
    # each proposal with the rule or pattern that made it and what became of it (`ingest --explain`)
    explained: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"source": self.source, "session": self.session, "app": self.app,
                "user": self.user, "status": self.status, "events_read": self.events_read,
                "candidates": self.candidates, "counts": dict(self.counts), "error": self.error,
                "digest": self.digest, "watermark": self.watermark}


def partition_of(session: Session, app: str | None, user: str | None) -> tuple[str, str]:
    """The caller's partition, checked against what the session says about itself."""
    where = f"{session.source}: session {session.id}"
    app, user = normalise_optional(app or None, "app"), normalise_optional(user or None, "user")
    for what, given, own in (("app", app, session.app), ("user", user, session.user)):
        if given and own and given != own:
            raise LedgerError(f"{where} belongs to {what} {own!r}, not {given!r}")
    app, user = app or session.app, user or session.user
    if not app:
        raise LedgerError(f"{where} names no app (give --app)")
    if not user:
        raise LedgerError(f"{where} names no user (give --user)")
    refuse_reserved_user(user, f"{where}: ")
    return app, user


def one_line(text: str | None) -> str | None:
    """A digest is data: one line, bounded, without control characters."""
    if not text:
        return None
    clean = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return clean[:MAX_DIGEST] or None


def ingest_session(work: UnitOfWork, session: Session | dict, app: str | None = None,
                   user: str | None = None, extractor: Extractor | str | None = None,
                   source: str | None = None, new_events=None, **options) -> SessionResult:
    """Ingest what is new in `session`; raises `LedgerError` for bad input, writing nothing.

    `new_events(ledger, session, app, user) -> Delta`, when given, decides what is new instead
    of the watermark, and so also what a forgotten session means (the google-adk service: skip
    what was erased, read what came after; adk/delta.py); it is asked again under the
    write lock, and a different answer (another writer, a forget) means extract again."""
    if isinstance(session, dict):
        session = parse_adk(session, source or "<memory>")
    elif not isinstance(session, Session):
        raise LedgerError("ingest_session needs an ADK session dict or a parsed Session")
    if extractor is None or isinstance(extractor, str):
        extractor = make_extractor(extractor, **options)
    app, user = partition_of(session, app, user)
    result = SessionResult(source=source or session.source, session=session.id, app=app, user=user)
    if new_events is None:
        _refuse_if_forgotten(work, app, user, session.id, result.source)   # before a model call
    sha = work.registry.sha256
    for _attempt in range(ATTEMPTS):
        state = checked_state(work.conn, app, user, session.id)
        mark = state["watermark"] if state else None
        mark_at = state["watermark_at"] if state else None
        delta = new_events(work, session, app, user) if new_events else tail(session, mark, mark_at)
        if not delta:
            result.status = "unchanged"
            result.watermark = mark
            return result
        _refuse_future_events(work, delta, result.source)          # before a model call
        context = Context(app, user, work.registry,
                          load_current=lambda: _current(work.conn, app, user))
        try:
            extraction = extractor.extract(delta, context)
        except ExtractionFailed as exc:
            return _failed(work, result, extractor, str(exc), path_of(result.source),
                           exc.attempts)
        with work.transaction():
            # Again under the write lock: a forget may have committed while we extracted.
            if new_events is None:
                _refuse_if_forgotten(work, app, user, session.id, result.source)
            elif not _same(new_events(work, session, app, user), delta):
                continue
            now = checked_state(work.conn, app, user, session.id)
            if (now["watermark"] if now else None) != mark:
                continue                       # another writer ingested it meanwhile: redo
            counts: Counter = Counter(candidates=len(extraction.proposals))
            with work.batched():
                _apply(work, extraction.proposals, delta, app, user, sha, counts, result)
            digest = one_line(extraction.digest)
            event = work.store.append(SessionIngested(
                app=app, user=user, session=session.id, watermark=delta.watermark.id,
                watermark_at=delta.watermark.said_at, events_read=delta.read,
                counts=dict(counts), extractor=extractor.name,
                model=extraction.model or getattr(extractor, "model", None),
                prompt_sha256=extraction.prompt_sha256, digest=digest, registry_sha256=sha,
                event_ids=list(delta.read_ids) if new_events else None))
            result.seqs.append(event.seq)
        result.events_read, result.candidates = delta.read, len(extraction.proposals)
        result.counts, result.digest, result.watermark = counts, digest, delta.watermark.id
        return result
    raise LedgerError(f"{result.source}: session {session.id} kept changing under concurrent "
                      f"ingestion; try again")


def _apply(work: UnitOfWork, proposals, delta, app: str, user: str, sha: str, counts: Counter,
           result: SessionResult) -> None:
    """Validate, decide and append each proposal of the delta, counting what happened."""
    proposals = validator.in_transcript_order(proposals, delta)
    every = [validator.check(p, delta, app, user, sha, work.registry) for p in proposals]
    clashes = validator.conflicting(every, work.registry)
    for index, (proposal, checked) in enumerate(zip(proposals, every)):
        if index in clashes:
            checked = validator.rejection(proposal, delta, app, user, sha, "conflicting_proposals")
        if isinstance(checked, CandidateRejected):
            result.seqs.append(work.store.append(checked).seq)
            counts["rejected"] += 1
            counts[f"rejected:{checked.reason}"] += 1
            result.explained.append(_explained(proposal, session=delta.session.id,
                                               outcome=f"rejected:{checked.reason}"))
            continue
        outcome = work.append_candidate(checked)
        result.seqs.extend(outcome.seqs)
        if outcome.decision == "reject":
            said = f"rejected:{outcome.reason}"
            counts["rejected"] += 1
        elif outcome.decision == "hold":
            said = f"held:{outcome.reason}"
            counts["held"] += 1
        else:
            said = f"applied:{outcome.decision}"
        counts[said] += 1
        result.explained.append(_explained(proposal, session=delta.session.id, outcome=said))


def _explained(proposal, **more) -> dict:
    return {"evidence_event": proposal.evidence_event, "subject": proposal.subject,
            "predicate": proposal.predicate, "value": proposal.value, "negated": proposal.negated,
            "pattern": proposal.pattern, "quote": proposal.quote, **more}


def _same(again, delta) -> bool:
    """The same events new, and the same ones settled (read before, or erased meanwhile)."""
    return (again.read_ids, again.earlier_ids) == (delta.read_ids, delta.earlier_ids)


class SessionErased(LedgerError):
    """The session was forgotten: ingesting it again is refused (a batch reports it as skipped)."""


def _refuse_future_events(work: UnitOfWork, delta, source: str) -> None:
    """A session event dated after the ledger's clock (plus its tolerance) fails the session."""
    now = work.clock()
    for event in (*delta.events, delta.watermark):
        refuse_future(event.said_at, now, work.future_tolerance,
                      f"{source}: session {delta.session.id}: event {event.id} timestamp")


def _refuse_if_forgotten(work: UnitOfWork, app: str, user: str, session: str, source: str) -> None:
    if is_forgotten(work.conn, app, "session", session_hash(app, user, session)):
        raise SessionErased(f"{source}: session {session} was forgotten; it cannot be ingested again")


def _current(conn, app: str, user: str) -> list[dict]:
    """The partition's open facts an extractor is shown (a model's context), as the log says them
    (`served.check`, `check_open`: a forged row must not steer what the model proposes)."""
    with snapshot(conn):
        found = partition_keys(conn, app, user)
        served.check(conn, found, table="facts_current")
        served.check_open(conn, app, user, {f["fact_id"] for f in found}, include_sensitive=True)
    return [{"subject": f["subject"], "predicate": f["predicate"], "value": f["value"]} for f in found]


def path_of(source: str) -> str | None:
    """Only a real file can be re-read by `--retry-failed`."""
    return None if source.startswith("<") else source.split("[", 1)[0] if source.endswith("]") else source


def _failed(work: UnitOfWork, result: SessionResult, extractor, message: str,
            path: str | None, attempts: int) -> SessionResult:
    with work.transaction():
        event = work.store.append(IngestFailed(
            app=result.app, user=result.user, session=result.session, error=escape(message)[:500],
            extractor=extractor.name, model=getattr(extractor, "model", None), source=path,
            attempts=attempts))
    result.status, result.error, result.seqs = "failed", message, [event.seq]
    return result
