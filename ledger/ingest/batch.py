"""Many sessions at once: the CLI's `ingest` and `ingest --retry-failed`, and their summary.

Each session is its own transaction, so a bad file or a failed extraction costs only that
session; the summary names every source that failed, and the caller decides the exit code
(the CLI exits 1 when anything failed, after ingesting everything that could be).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TextIO

from factledger.ledger.audit.projcheck import check_partitions
from factledger.ledger.errors import UNUSABLE, LedgerError
from factledger.ledger.ingest.candidates import CandidatesExtractor
from factledger.ledger.ingest.extractor import Extractor
from factledger.ledger.ingest.extractors import make_extractor
from factledger.ledger.ingest.pipeline import SessionErased, SessionResult, ingest_session
from factledger.ledger.ingest.session import Session
from factledger.ledger.ingest.sources import Skipped, SourceError, load, read_source
from factledger.ledger.unit import UnitOfWork
from factledger.projections.sessions import queue


@dataclass
class Summary:
    results: list[SessionResult] = field(default_factory=list)
    unmatched_candidates: int = 0
    ambiguous_candidates: list[dict] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    extractors: set[str] = field(default_factory=set)    # the extractors that ran, said in the result
    meaning_checks: dict | None = None     # `--retry-failed`: the deferred dedup checks run (`recheck_meaning`)

    @property
    def failed(self) -> list[SessionResult]:
        return [r for r in self.results if r.status in ("failed", "error")]

    def as_dict(self) -> dict:
        counts: Counter = Counter()
        for r in self.results:
            counts.update(r.counts)
        by = lambda prefix: {k.split(":", 1)[1]: v for k, v in sorted(counts.items())  # noqa: E731
                             if k.startswith(prefix + ":")}
        return {
            "sessions": sum(1 for r in self.results if r.session is not None),
            # every session or file tried, each counted once below (ingested, unchanged, skipped, failed)
            "sources": len(self.results),
            "ingested": sum(1 for r in self.results if r.status == "ingested"),
            "unchanged": sum(1 for r in self.results if r.status == "unchanged"),
            "skipped_erased": sum(1 for r in self.results if r.status == "skipped"),
            "failed": len(self.failed),
            "events_read": sum(r.events_read for r in self.results),
            "candidates": sum(r.candidates for r in self.results),
            "applied": by("applied"),
            "rejected": by("rejected"),
            "held": by("held"),
            "unmatched_candidates": self.unmatched_candidates,
            "ambiguous_candidates": self.ambiguous_candidates,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "failures": [{"source": r.source, "session": r.session, "error": r.error}
                         for r in self.failed],
            "extractor": ", ".join(sorted(self.extractors)) or None,
            **({"meaning_checks": self.meaning_checks} if self.meaning_checks is not None else {}),
            "results": [r.as_dict() for r in self.results],
        }


def ingest_paths(work: UnitOfWork, paths: Iterable[str], app: str | None, user: str | None,
                 extractor: str | None = None, model: str | None = None,
                 candidates: str | None = None, stdin: TextIO | None = None,
                 progress: Callable[[int], None] | None = None,
                 on_total: Callable[[int], None] | None = None, **options) -> Summary:
    skipped: list[Skipped] = []
    sessions, errors = load(paths, stdin, skipped)
    summary = ingest_loaded(work, sessions, errors, app, user, extractor, model, candidates,
                            progress=progress, on_total=on_total, **options)
    summary.skipped = skipped
    return summary


def ingest_loaded(work: UnitOfWork, sessions: list[Session], errors: list[SourceError],
                  app: str | None, user: str | None, extractor: str | None = None,
                  model: str | None = None, candidates: str | None = None,
                  progress: Callable[[int], None] | None = None,
                  on_total: Callable[[int], None] | None = None, **options) -> Summary:
    """`ingest_paths` for sessions already read by `sources.load` (the files are not read again)."""
    summary = Summary([SessionResult(source=e.source, status="error", error=e.error) for e in errors])
    if on_total:
        on_total(len(sessions))
    chosen: Extractor = make_extractor(extractor, model=model, candidates=candidates, **options)
    summary.extractors.add(chosen.name)
    if isinstance(chosen, CandidatesExtractor):
        chosen.route(sessions, app, user)
    for session in sessions:
        summary.results.append(_one(work, session, app, user, chosen))
        if progress:
            progress(1)
    if isinstance(chosen, CandidatesExtractor):
        summary.unmatched_candidates = chosen.unmatched
        summary.ambiguous_candidates = chosen.ambiguous
    return summary


def retry_failed(work: UnitOfWork, app: str | None = None, user: str | None = None,
                 extractor: str | None = None, model: str | None = None,
                 progress: Callable[[int], None] | None = None,
                 on_total: Callable[[int], None] | None = None, **options) -> Summary:
    """Re-read and re-ingest every open item of the retry queue (optionally one partition's), then
    run the dedup meaning checks an encoder failure deferred (the whole ledger's)."""
    items = queue(work.conn, app, user, "open")
    # what a retry re-reads (a source path, an extractor, a partition) is the log's: the listed
    # partitions' queue rows against a fold of their events, so a forged row reads no other file
    check_partitions(work.conn, work.projector, {(i["app"], i["user"]) for i in items}, ("ingest_queue",))
    if on_total:
        on_total(len(items))
    summary = Summary()
    summary.meaning_checks = work.recheck_meaning()
    for item in items:
        source = item["source"] or "<not a file>"
        try:
            if not item["source"]:
                raise LedgerError(f"session {item['session']} was not read from a file; "
                                  "ingest it again from its source")
            found = [s for s in read_source(item["source"]) if s.id == item["session"]]
            if not found:
                raise LedgerError(f"{source}: no longer holds session {item['session']}")
            chosen = make_extractor(extractor or item["extractor"],
                                    model=model or item["model"], **options)
            summary.extractors.add(chosen.name)
            summary.results.append(_one(work, found[0], item["app"], item["user"], chosen))
        except UNUSABLE:
            raise                               # the ledger itself, not this session: stop
        except LedgerError as exc:
            summary.results.append(SessionResult(source=source, session=item["session"],
                                                 app=item["app"], user=item["user"],
                                                 status="error", error=str(exc)))
        if progress:
            progress(1)
    return summary


def _one(work, session, app, user, extractor) -> SessionResult:
    try:
        return ingest_session(work, session, app, user, extractor)
    except SessionErased:
        # forgotten on purpose: not a failure, and never ingested again
        return SessionResult(source=session.source, session=session.id, status="skipped",
                             error="erased")
    except UNUSABLE:
        raise
    except LedgerError as exc:
        return SessionResult(source=session.source, session=session.id, status="error",
                             error=str(exc))
