"""`Ledger`: the one object a library user opens.

A facade: it opens a unit of work (`ledger/unit.py`: the connection, the store, the projections,
the registry, the clock and the transaction boundary) and hands that, never itself, to the use
cases: observe, ingest, review, resolve, forget, import; reads go to the projections' and the
log's read modules.  Nothing below this module imports it.

The shells (CLI, web view, ADK service) use this module only: the reads they need beyond facts,
history and recall are `Ledger` methods (`ledger/reads.py`), and what they ask of a location
before a ledger is open (is it a PostgreSQL URL, how to print it) are the functions at the end.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from functools import partial

from factledger.ledger import export
from factledger.ledger.audit import access, served, verifycheck
from factledger.ledger.audit.checkfolds import CheckFolds
from factledger.ledger.audit.projcheck import check_partitions, projection_problem
from factledger.ledger.audit.verify import verify
from factledger.ledger.domain import recall_options
from factledger.ledger.domain.candidate import Candidate
from factledger.ledger.domain.events import EVENT
from factledger.ledger.domain.outcome import Outcome
from factledger.ledger.domain.support import refused
from factledger.ledger.domain.textindex import remembering
from factledger.ledger.errors import CandidateRefused, LedgerError, ProjectionMismatch
from factledger.ledger.forget.residue import residue
from factledger.ledger.forget.scope import build_scope, pseudonym
from factledger.ledger.groups import Erased, Lookup, Notices, Serves
from factledger.ledger.reads import Reads
from factledger.ledger.recall.serve import DOMAIN_USER, RecallOptions, recall
from factledger.ledger.registry.kinds import open_key_name
from factledger.ledger.registry.predicates import Registry
from factledger.ledger.review import queue as review
from factledger.ledger.review.dispute import resolve
from factledger.ledger.review.suggest import contradictions, with_suggestions
from factledger.ledger.store import engines
from factledger.ledger.store import reads as logread
from factledger.ledger.store.errors import storage_errors_at_the_door
from factledger.ledger.store.eventlog import EventStore, head, snapshot
from factledger.ledger.store.rowcheck import first_bad_row
from factledger.ledger.unit import UnitOfWork
from factledger.ledger.vocabulary.bounds import check_days, check_jobs, check_log_window
from factledger.ledger.vocabulary.clock import Clock, normalise_time, parse_time
from factledger.ledger.vocabulary.ids import normalise_id, normalise_optional, normalise_partition
from factledger.ledger.vocabulary.progress import SILENT, Progress
from factledger.projections import queries, serves
from factledger.projections import vectors as vectors_projection
from factledger.projections.erasures import receipts
from factledger.projections.factcolumns import FACT_FIELDS
from factledger.projections.logkept import forget_kept
from factledger.projections.review import held_rows
from factledger.projections.sessions import list_sessions, queue, session_state

# Ingestion (`ledger.ingest.pipeline`), forgetting (`ledger.forget.erase`) and the proofs
# (`ledger.audit.proofs`) are imported by the methods that use them, not here: every command opens
# a `Ledger`, and a read such as `facts` need not pay for importing the write paths it never takes
# (docs/performance.md, "Imports that cost nothing").

__all__ = ["FACT_FIELDS", "Ledger", "LedgerError", "Outcome", "display_location",
           "holds_location", "is_fresh_server_location", "is_server_location", "parse_clearance",
           "DEFAULT_CLEARANCE", "AUDIT_CLEARANCE", "EVENT",
           "refuse_output", "remove_location", "query", "registry_rows", "evaluate_probes", "probe_report"]


@storage_errors_at_the_door
class Ledger(Reads):
    def __init__(self, path: str | os.PathLike = "factledger.db",
                 registry: Registry | str | os.PathLike | None = None, clock: Clock | None = None,
                 busy_timeout: float = 5.0, synchronous: str = "FULL", create: bool = False,
                 future_tolerance: timedelta | float | str | None = None, read_only: bool = False,
                 repair: bool = False, leave_schema: bool = False):
        """`read_only`: opened so that it cannot write (SQLite `mode=ro` and `query_only`; a
        PostgreSQL session of read-only transactions): a schema that differs is reported in
        `schema_report`, never repaired, and any write raises `LedgerReadOnly`
        (docs/decisions.md, "Read-only opens").  `repair`: a write open that also puts back an
        altered guard trigger or index (`factledger repair`; `schema_report` says what it did).
        `leave_schema`: a write open that reports the schema as a read does, repairing nothing (a
        dry run's)."""
        # said_at later than clock + future_tolerance is refused (ledger/domain/clocksanity.py); default one day
        self._work = UnitOfWork(path, registry, clock, busy_timeout, synchronous, create,
                                future_tolerance=future_tolerance, read_only=read_only, repair=repair,
                                leave_schema=leave_schema)
        self._served_kept = served.KeptFolds()   # this ledger's verified folds (ledger/audit/served.py)
        # the write path's folds of the facts it checks, kept across transactions by the seqs
        # that touched them (ledger/audit/checkfolds.py)
        self._check_folds = CheckFolds()
        # the decision table's read of a key is checked against the log before it is decided on
        self._work.projector.check_key = partial(served.check_key_rows, folds=self._check_folds)
        self._work.projector.check_past = served.check_key_past
        self._work.projector.check_negations = served.check_key_negations
        self._work.projector.check_kind = served.check_key_kind
        self._work.projector.check_keys = partial(served.check_keys_rows, folds=self._check_folds)  # a batch's keys
        self._work.projector.check_keys_negations = served.check_keys_negations

    # What the unit of work holds that a caller may inspect.  The connection, the store and the
    # unit of work itself stay private: the shells ask the facade's methods (docs/architecture.md,
    # "One door"), and the use cases are handed the unit of work.
    path = property(lambda self: self._work.path)
    registry = property(lambda self: self._work.registry)
    clock = property(lambda self: self._work.clock)
    _conn = property(lambda self: self._work.conn)
    _store = property(lambda self: self._work.store)
    projector = property(lambda self: self._work.projector)
    checkpointer = property(lambda self: self._work.checkpointer)
    future_tolerance = property(lambda self: self._work.future_tolerance)

    # The grouped reads the shells use beside the supported API (ledger/groups.py, docs/api.md)
    erased = property(Erased)
    serves = property(Serves)
    notices = property(Notices)
    lookup = property(Lookup)

    def close(self) -> None:
        self._work.close()

    def refuse_output(self, path: str | os.PathLike) -> None:
        """`LedgerError` when `path` is, or lies in, one of this ledger's own files (on
        PostgreSQL: the server's data directory or a tablespace, as far as the session may see
        them): a command's output file must never be written over the evidence."""
        refuse_output(path, self._work.location, self._conn)

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[EventStore]:
        with self._work.transaction() as tx:
            yield tx

    # Writing.

    def observe(self, candidate: Candidate) -> Outcome:
        return self.observe_many([candidate])[0]

    def observe_many(self, candidates: Iterable[Candidate]) -> list[Outcome]:
        """Decide and append a batch in one transaction; each candidate sees the ones before it
        (through the projections' unwritten state), and the projections write once at the end.

        A candidate offered directly meets the checks ingestion makes of an extractor's proposal
        before anything is written: its quote must be evidence (of some substance, and a negation
        must negate), or the whole batch is refused with `CandidateRefused` and nothing is
        appended.  A value its quote does not support is held for review (`unsupported_by_quote`,
        docs/ingestion.md), never lost.  The said-at bounds and the registry's author and basis
        rules run as for ingestion; a candidate's `kind` opens a key of its own
        (docs/ingestion.md, "Open keys")."""
        candidates, registry, work = list(candidates), self.registry, self._work
        for candidate in candidates:
            refuse_unsupported(candidate, registry)
        # every event of a candidate is of its (app, user): writers of other partitions decide
        # meanwhile (on PostgreSQL; docs/scale.md, "Writers")
        with work.transaction({(c.app, c.user) for c in candidates}), work.batched():
            work.read_keys(candidates)
            return [work.append_candidate(c) for c in candidates]

    def append_candidate(self, candidate: Candidate, hold_id: str | None = None,
                         review: dict | None = None) -> Outcome:
        """Validate, decide and append one candidate; call inside `with ledger.transaction():`."""
        return self._work.append_candidate(candidate, hold_id, review)

    def resolve(self, fact_id: str, accept: bool, by: str, reason: str) -> Outcome:
        """A reviewer settles a dispute; the decision is recorded as `DisputeResolved`."""
        return resolve(self._work, normalise_id(fact_id, "fact id"), accept, by, reason, check=_check_key)

    # Reading.

    # Every read of more than one statement runs in one read transaction (`store.snapshot`).

    # Every fact a read hands out is checked against the log first (`ledger.audit.served`): a
    # projection row that disagrees raises `ProjectionMismatch`; nothing is dropped silently.

    def facts(self, app: str, user: str, **filters) -> list[dict]:
        app, user = normalise_partition(app, user)
        if filters.get("kinds") is not None:
            filters["kinds"] = self._known_kinds(filters["kinds"])
        with snapshot(self._conn), served.keeping(self._served_kept):
            found = queries.facts(self._conn, app, user, now=self.clock(), registry=self.registry, **filters)
            as_of, valid_at = filters.get("as_of"), filters.get("valid_at")
            if as_of is None and valid_at is None:
                served.check(self._conn, found, table="facts_current")
                spec = self.registry.resolve(filters["predicate"]) if filters.get("predicate") else None
                served.check_open(self._conn, app, user, {f["fact_id"] for f in found},
                                  subject=filters.get("subject"),
                                  predicate=spec.name if spec else filters.get("predicate"),
                                  include_sensitive=bool(filters.get("include_sensitive")),
                                  kinds=filters.get("kinds"))
            else:
                served.check(self._conn, found, table="fact_history",
                             at=normalise_time(as_of) if as_of is not None else None)
                served.check_known(self._conn, app, user)
        return found

    def _key_kind(self, app: str, user: str, predicate: str) -> str | None:
        """The kind the partition recorded an open key of this name under (None: it has none), so
        a read or a forget can name a key the registry does not (docs/ingestion.md, "Open keys")."""
        name = open_key_name(predicate)
        if name is None or self.registry.resolve(predicate) is not None:
            return None
        app, user = normalise_partition(app, user)
        return queries.key_kind(self._conn, app, user, name)

    def _known_kinds(self, kinds) -> tuple[str, ...] | None:
        """Kind names checked against the registry's kinds (an unknown one is an error that
        names the known ones, not an empty answer)."""
        parsed = recall_options.parse_kinds(kinds)
        unknown = [k for k in parsed or () if k not in self.registry.kinds]
        if unknown:
            raise LedgerError(f"unknown kind {unknown[0]!r} (known: {', '.join(self.registry.kinds)})")
        return parsed

    def history(self, app: str, user: str, **filters) -> list[dict]:
        app, user = normalise_partition(app, user)
        with snapshot(self._conn), served.keeping(self._served_kept):
            found = queries.history(self._conn, app, user, registry=self.registry, now=self.clock(), **filters)
            served.check(self._conn, found, table="fact_history", history=True)
            served.check_known(self._conn, app, user)
        return found

    def why(self, fact_id: str) -> dict:
        with snapshot(self._conn), served.keeping(self._served_kept):
            found = queries.why(self._conn, normalise_id(fact_id, "fact id"), now=self.clock())
            served.check(self._conn, [found["fact"]], table="fact_history")
            served.check_touching(self._conn, found["fact"]["fact_id"], found["events"])
            served.check_current(self._conn, found["fact"]["fact_id"])
        found["events"] = _once_each(found["events"])
        return found

    def log(self, **filters) -> list[dict]:
        for name in ("app", "user"):
            if name in filters:
                filters[name] = normalise_optional(filters[name], name)
        check_log_window(filters.get("after", 0), filters.get("limit"))
        return logread.log(self._conn, **filters)

    def stats(self) -> dict:
        with snapshot(self._conn), served.keeping(self._served_kept):
            return queries.stats(self._conn)

    def head(self) -> tuple[int, str]:
        return self._store.head()

    def recall(self, app: str, user: str, query: str | None = "", *, explain: bool = False,
               served_to: str | None = None, surface: str = "library", record: bool | None = None,
               **options):
        """The few current facts that belong in the next prompt, rendered and explained.

        Options (see `ledger.recall_options.RecallOptions.build`): clearance, min_confidence,
        max_age, recency_weight, half_life, limit, budget, preload, domain, mode, kinds (only
        facts of these kinds); and `as_of` (a time: the facts open then, scored as of then).  Returns a `RecallResult`:
        `.text` is the block for the model, `.selected` the facts, `.candidates` the explanation.

        On a ledger open for writing every recall of the present is a serve, recorded (a
        `FactsServed` event, `.served_seq`) before the text is returned: `served_to` names the
        caller ("anonymous" when None), `surface` where it left (docs/audit.md).  A read-only
        open records nothing, unless `served_to` asks it to, which fails there; `record=False`
        is a caller's inspection that hands nothing out (the CLI's second, explaining call)."""
        as_of = options.pop("as_of", None)     # serve what would have been served then
        app, user = normalise_partition(app, user)
        if isinstance(query, str):             # the encoder and the text index take only Unicode
            try:
                query.encode("utf-8")
            except UnicodeEncodeError:
                raise LedgerError("the query is not valid Unicode text (lone surrogate)") from None
        opts = options.pop("options", None) or RecallOptions.build(**options)
        self._known_kinds(opts.kinds)
        at = normalise_time(as_of) if as_of is not None else None
        kept = self._work.recall_kept
        records = record is not False and at is None and (served_to is not None or not self._work.read_only)
        with snapshot(self._conn), served.keeping(self._served_kept), remembering(kept.texts):
            # the head the read sees (a serve re-renders from there), unless nothing will be recorded
            head_seq = self._store.head()[0] if record is not False else 0
            result = recall(self._conn, app, user, query, now=parse_time(at) if at else self.clock(),
                            options=opts, registry=self.registry, explain=explain, as_of=at, kept=kept)
            users = [user] + ([DOMAIN_USER] if opts.domain and user != DOMAIN_USER else [])
            served.check_recall(self._conn, app, users, result.selected + result.candidates, at)
            if result.options.mode != "lexical":     # meaning asked for: say when the ledger has none
                # kept with the scope's rows while the head is unchanged (`recallcache.ScopeMemo`)
                def count() -> str | None:
                    return vectors_projection.meaning_notice(self._conn, app, users)
                derived = getattr(result.scope, "derived", None)
                missing = derived(("meaning_notice",), count) if derived is not None else count()
                if missing:
                    result.notices.append(missing)
            # A quote never carries a value above the clearance: of an open fact withheld here, or
            # of one retracted or superseded (a health value once said is still a health value).
            mask = self._clearance_mask(app, user, opts.clearance, kept=result.scope)
        result.scope = None        # the caller keeps the facts it was served, not the whole scope
        if mask:
            for fact in result.selected + result.candidates:
                fact.update(mask.row(fact))
        result.head_seq = head_seq
        if records:
            self._record_recall(result, served_to=served_to, surface=surface)
        return result

    def _record_recall(self, result, *, served_to: str | None, surface: str) -> int:
        """Record `result` (a `RecallResult`, perhaps read on another connection of this ledger:
        an MCP reader) as served to `served_to`; its seq, also set as `result.served_seq`."""
        return self._record_recalls([(result, served_to, surface)])[0]

    def _record_recalls(self, served: list[tuple]) -> list[int]:
        """Record several recalls, each `(result, served_to, surface)`, in one transaction (one
        commit: the group commit of concurrent readers' serves, `mcp_server/tools.py`); their
        seqs, each also set as its `result.served_seq`.  All are recorded, or none."""
        serves = []
        for result, served_to, surface in served:
            opts = result.options
            users = [result.user] + ([DOMAIN_USER] if opts.domain and result.user != DOMAIN_USER else [])
            serves.append(dict(app=result.app, user=result.user, users=users, caller=served_to, surface=surface,
                               clearance=opts.clearance, facts=result.selected, text=result.text,
                               head_seq=result.head_seq, withheld=result.withheld, limit=opts.limit,
                               query=result.query or None))
        seqs = access.record_many(self._work, serves)
        for (result, _served_to, _surface), seq in zip(served, seqs):
            result.served_seq = seq
        return seqs

    def _record_serve(self, app: str, user: str, *, caller: str | None, surface: str, tool: str,
                     clearance, facts: list[dict], text: str, query: str | None = None,
                     users: list[str] | None = None, head_seq: int | None = None,
                     held: list[str] | None = None) -> int:
        """Record a serve of `facts` (dicts with `fact_id`, and `user` for another partition's) as
        `text`, by a shell that hands out values itself (an MCP tool's facts, history or why, a
        web page); the seq of its `FactsServed`.  `head_seq`: the head its read saw (else now);
        `held`: the hold ids of held candidates the text shows (the review page)."""
        app, user = normalise_partition(app, user)
        once = list({f["fact_id"]: f for f in facts}.values())      # a history lists a fact per interval
        return access.record(self._work, app=app, user=user, users=users or [user], caller=caller,
                             surface=surface, tool=tool, clearance=clearance, facts=once, text=text,
                             head_seq=self._store.head()[0] if head_seq is None else head_seq, query=query,
                             held=held)

    # The access ledger: what was served, to whom (ledger/audit/access.py, docs/audit.md).

    def served(self, app: str, user: str, *, since: str | None = None, until: str | None = None,
               by: str | None = None, fact: str | None = None, surface: str | None = None) -> list[dict]:
        """The serves recorded for one partition, oldest first (`factledger served`)."""
        app, user = normalise_partition(app, user)
        since = normalise_time(since) if since is not None else None
        until = normalise_time(until) if until is not None else None
        filters = dict(since=since, until=until, caller=normalise_optional(by, "caller"),
                       fact=normalise_optional(fact, "fact id"), surface=surface)
        with snapshot(self._conn):
            # a forgotten user's serve records live on under the pseudonym (ledger/forget/restate.py)
            return [row for who in (user, pseudonym(app, user))
                    for row in serves.serve_rows(self._conn, app, who, **filters)]

    def _served_show(self, seq: int) -> dict:
        """Serve `seq` re-rendered from the log at its position, compared with its recorded hash."""
        with snapshot(self._conn):
            return access.show(self._conn, seq)

    def access_report(self, app: str, user: str) -> dict:
        """The accounting of disclosures for one user: per class and caller, what was served when."""
        app, user = normalise_partition(app, user)
        with snapshot(self._conn):
            return access.accounting(self._conn, app, user)

    def _served_counts(self, app: str, user: str, domain: bool = True) -> dict[str, int]:
        """fact_id -> how many recorded serves handed it out (`facts --served`)."""
        app, user = normalise_partition(app, user)
        users = [user] + ([DOMAIN_USER] if domain and user != DOMAIN_USER else [])
        with snapshot(self._conn):
            return serves.served_counts(self._conn, app, users)

    # Ingestion and review.

    def ingest_session(self, session, app: str | None = None, user: str | None = None,
                       extractor=None, **options):
        """Ingest what is new in one session (an ADK session dict, camelCase or snake_case, or a
        parsed `ledger.ingest.Session`): one transaction, re-ingestion appends nothing.
        `extractor` is a name (patterns | anthropic | candidates) or an extractor object.
        Returns a `SessionResult`; bad input raises `LedgerError` with nothing written."""
        from factledger.ledger.ingest import pipeline

        app, user = normalise_optional(app or None, "app"), normalise_optional(user or None, "user")
        decide_new = options.pop("new_events", None)
        if decide_new is not None:
            # `new_events(ledger, session, app, user)` is the caller's and is given this facade
            # (its reads), not the unit of work the pipeline holds; it runs on the same connection.
            options["new_events"] = lambda _work, parsed, app, user: decide_new(self, parsed, app, user)
        return pipeline.ingest_session(self._work, session, app, user, extractor, **options)

    def ingest_paths(self, paths, app: str | None, user: str | None, extractor=None, model: str | None = None,
                     candidates: list[str] | None = None, progress=None, on_total=None, **options):
        """Ingest session files, directories or "-" (stdin), each session its own transaction;
        a file or session that fails is recorded in the retry queue and the others go on.
        `options` go to the extractor.  Returns a `Summary` (`ledger.ingest.batch.ingest_paths`)."""
        from factledger.ledger.ingest import batch

        return batch.ingest_paths(self._work, paths, app, user, extractor, model, candidates,
                                  progress=progress, on_total=on_total, **options)

    def retry_failed(self, app: str | None = None, user: str | None = None, extractor=None,
                     model: str | None = None, progress=None, on_total=None, **options):
        """Ingest again the sources whose extraction failed (the retry queue), as `ingest_paths`
        would; returns a `Summary` (`ledger.ingest.batch.retry_failed`)."""
        from factledger.ledger.ingest import batch

        return batch.retry_failed(self._work, app, user, extractor, model, progress=progress,
                                  on_total=on_total, **options)

    def _session_state(self, app: str, user: str, session: str) -> dict | None:
        app, user = normalise_partition(app, user)
        session = normalise_id(session, "session")
        return session_state(self._conn, app, user, session)

    def sessions(self, app: str, user: str) -> list[dict]:
        """The partition's ingested sessions with their digests, checked first against a fold of
        the partition's events (`check_partitions`): a digest is served only as the log gives it."""
        app, user = normalise_partition(app, user)
        with snapshot(self._conn):
            check_partitions(self._conn, self.projector, [(app, user)], ("sessions",))
            return list_sessions(self._conn, app, user)

    def _ingest_queue(self, app: str | None = None, user: str | None = None,
                     status: str | None = "open") -> list[dict]:
        app, user = normalise_optional(app, "app"), normalise_optional(user, "user")
        return queue(self._conn, app, user, status)

    def held(self, app: str | None = None, user: str | None = None,
             status: str | None = "open") -> list[dict]:
        app, user = normalise_optional(app, "app"), normalise_optional(user, "user")
        return with_suggestions(held_rows(self._conn, app, user, status), self.registry)

    def contradictions(self, app: str | None = None, user: str | None = None) -> list[dict]:
        """Open facts with equal values of contradicting predicates: declared in the registry, or
        inferred from what the predicates mean (docs/semantic.md)."""
        app, user = normalise_optional(app, "app"), normalise_optional(user, "user")
        with snapshot(self._conn), served.keeping(self._served_kept):
            found = contradictions(self._conn, self.registry, app, user)
            # both facts of each pair, as the log says them (a page shows both values)
            served.check(self._conn, [fact for pair in found for fact in (
                {k: pair[k] for k in ("fact_id", "app", "user", "subject", "predicate", "value")},
                {"fact_id": pair["other_fact_id"], "app": pair["app"], "user": pair["user"],
                 "subject": pair["subject"], "predicate": pair["other_predicate"], "value": pair["other_value"]})],
                table="facts_current")
        return found

    def review_accept(self, hold_id: str, predicate: str | None = None, *, by: str | None = None,
                      reason: str | None = None, confirm_sensitivity: str | None = None,
                      kind: str | None = None) -> Outcome:
        """Apply a held candidate under `predicate` (None: its own, with its own kind; `kind`: as
        an open key of that kind); `by` and `reason` are recorded in its events.
        A predicate of another sensitivity than the candidate's needs `confirm_sensitivity` set to
        that class (`SensitivityUnconfirmed` otherwise); a closed vocabulary must hold the value."""
        return review.accept(self._work, normalise_id(hold_id, "hold id"), predicate, by=by, reason=reason,
                             confirm_sensitivity=confirm_sensitivity, kind=kind)

    def _held_class(self, predicate: str | None) -> str:
        """The sensitivity class a held candidate of `predicate` has until a reviewer places it
        (`ledger.review.queue.held_sensitivity`): a target of another class asks for confirmation."""
        return review.held_sensitivity(self.registry, {"predicate": predicate})

    def review_reject(self, hold_id: str, reason: str, *, by: str | None = None) -> Outcome:
        return review.reject(self._work, normalise_id(hold_id, "hold id"), reason, by=by)

    # Forgetting, export and import.

    def forget(self, app: str, user: str, *, session: str | None = None, fact: str | None = None,
               predicate: str | None = None, sensitivity: str | None = None,
               reason: str | None = None, requested_by: str | None = None,
               dry_run: bool = False, vacuum: bool | None = None, ticket: str | None = None) -> dict:
        """Erase a user, or one session / fact / predicate / sensitivity class of it; the receipt.

        `vacuum`: None is the engine's default (PostgreSQL: VACUUM FULL of the touched tables, so
        no data file keeps the bytes; SQLite: the WAL truncated, the file not compacted); True
        also compacts a SQLite file; False on PostgreSQL defers the rewrite (a plain VACUUM: the
        bytes stay in freed page space until the next VACUUM FULL, as the receipt says)."""
        from factledger.ledger.forget import erase as forget

        app, user = normalise_partition(app, user)
        session, fact = normalise_optional(session, "session"), normalise_optional(fact, "fact id")
        scope = build_scope(app, user, session=session, fact=fact, predicate=predicate,
                            sensitivity=sensitivity, registry=self.registry,
                            open_keys=lambda name: self._key_kind(app, user, name) is not None)
        try:
            return forget.forget(self._work, scope, reason, requested_by, dry_run=dry_run, vacuum=vacuum,
                                 ticket=ticket)
        finally:
            self._served_kept.clear()          # no forgotten value stays in the reads' kept folds
            self._check_folds.clear()          # nor in the write path's
            forget_kept()                      # nor a forgotten session's id in the log's kept folds

    def retain(self, **options) -> dict:
        """Forget facts past retention (`ledger.forget.retain`); a dry run unless apply=True."""
        from factledger.ledger.forget import erase as forget

        for name in ("app", "user"):
            if name in options:
                options[name] = normalise_optional(options[name], name)
        check_days("--older-than", options.get("older_than"), self.clock())
        check_days("--serves-older-than", options.get("serves_older_than"), self.clock())
        try:
            return forget.retain(self._work, **options)
        finally:
            self._served_kept.clear()
            self._check_folds.clear()
            forget_kept()

    def erasures(self, app: str | None = None, ticket: str | None = None) -> list[dict]:
        """The erasure receipts, oldest first, each with the `ticket` it was filed under; with
        `ticket`, only that case's (surrounding spaces and letter case forgiven, as a DPO types a
        case number: one rule for the CLI and the web view)."""
        from factledger.ledger.forget.erase import check_ticket
        from factledger.ledger.forget.scope import ERASURES_USER

        app = normalise_optional(app, "app")
        with snapshot(self._conn):
            # the receipts as the log gives them: each app's receipt partition folded again
            # (a receipt row deleted, added or edited is damage, not a shorter list)
            rows = receipts(self._conn, app)
            apps = [app] if app is not None else sorted({r["app"] for r in rows} | set(logread.apps(self._conn)))
            check_partitions(self._conn, self.projector,
                             [(a, ERASURES_USER) for a in apps], ("erasures", "forgotten_scopes"))
        tickets = self._receipt_tickets()
        for row in rows:
            row["ticket"] = tickets.get(row["redaction_seq"])
        wanted = check_ticket(ticket)
        if wanted is not None:
            rows = [r for r in rows if (r["ticket"] or "").strip().casefold() == wanted.casefold()]
        return rows

    def _is_forgotten_session(self, app: str, user: str, session: str) -> bool:
        from factledger.ledger.forget import erase as forget

        app, user = normalise_partition(app, user)
        session = normalise_id(session, "session")
        return forget.is_forgotten_session(self._conn, app, user, session)

    def export_log(self, out, app: str | None = None, user: str | None = None,
                   progress: Progress = SILENT) -> int:
        app, user = normalise_optional(app, "app"), normalise_optional(user, "user")
        return export.export_log(self._conn, out, app, user, progress)

    def export_subject(self, app: str, user: str, third_parties: bool = False) -> dict:
        app, user = normalise_partition(app, user)
        return export.export_subject(self._work, app, user, third_parties)

    def residue(self) -> dict:
        """Where copies of forgotten bytes may still be, beyond the live tables (`ledger/forget/residue.py`)."""
        with snapshot(self._conn), served.keeping(self._served_kept):
            return residue(self._conn, self._work.location)

    def standby(self) -> dict | None:
        """Where this ledger is a read-only replica (a hot standby): how far it has replayed its
        primary's log (`--read-db`, docs/scale.md); None on a primary or a file."""
        return self._work.engine.standby(self._conn)

    def import_log(self, source, progress: Progress = SILENT) -> dict:
        return export.import_log(self._work, source, progress)

    # Checking.

    def verify(self, expect_head: str | None = None, log_only: bool = False, vectors: bool = False,
               progress: Progress = SILENT, record: str | os.PathLike | None = None, full: bool = False) -> dict:
        """The chain, the commitments and the append-only triggers; then, unless `log_only`, every
        projection a read serves from against a rebuild from the log (`ledger.audit.projcheck`),
        the first disagreeing row named (`vectors`: the meaning vectors recomputed too, not only
        which facts have one).  `checked` says which parts were checked; `progress` hears of
        each stage (`ledger/vocabulary/progress.py`).

        `record`: a file of the verifier's own (outside the ledger's reach), where a full check
        that finds nothing records the projections' pages; the next check then refolds only the
        partitions that may have changed since (`ledger.audit.verifycheck`; `incremental` in the
        result says what it read), unless `full`.  A disagreement it finds is named by a full check."""
        progress.stage("verifying the chain", logread.count(self._conn))
        result = verify(self._conn, expect_head, progress)
        result["checked"] = ["chain", "commitments", "triggers", "indexes"]
        if result["ok"]:
            # The guards verify checks (ledger/audit/verify.py) and the rest of the schema: an
            # index or table missing or altered is named too (a read-only open only reports it).
            seen = set(result.get("triggers") or ())
            schema = [line for line in self._work.schema_problems() if line not in seen]
            if schema:
                result.update(ok=False, first_bad_seq=0, problem="; ".join(schema), schema=schema)
        if log_only or not result["ok"]:
            return result
        with snapshot(self._conn), served.keeping(self._served_kept):
            quick = None
            if record is not None and not full:
                # once a checkpoint commits the projections, only the record it commits is used
                committed = verifycheck.commitment(self._conn)
                start = record if committed is None else verifycheck.committed_record(record)
                quick = verifycheck.check(self._conn, self.projector, start, vectors=vectors, progress=progress,
                                          expect=committed)
            if quick is not None and quick[1]:
                tables, problem, meaning = quick[0], None, quick[2]
                result["incremental"] = quick[3]
            else:
                tables, problem, meaning = projection_problem(self._conn, self.projector, vectors=vectors,
                                                              progress=progress)
                if problem is None and record is not None:
                    verifycheck.write(self._conn, self.projector, record)
        result["checked"].append("projections")
        if vectors and (meaning.get("recomputed") or not meaning.get("vectors")):
            result["checked"].append("vectors")
        result["projections"] = tables
        if meaning:
            # the meaning index's state (stale or absent is not damage), and what this install
            # could not check or will not use (`projections.vectors.notices`)
            result["meaning"] = meaning
            result["notices"] = vectors_projection.notices(meaning, recompute=vectors)
        if problem is not None:
            result.update(ok=False, problem=problem["problem"], projection=problem)
        return result

    def verify_record(self) -> str | None:
        """Where `factledger verify` keeps its record of the last full check of this ledger
        (`ledger.audit.verifycheck.default_record`); None for a ledger on a database server, whose
        verify always refolds the log."""
        if is_server_location(self._work.location):
            return None
        return str(verifycheck.default_record(self._work.location))

    def replay(self, progress=None, jobs: int | str = 1) -> int:
        """Throw the projections away and refold them from the log, in one transaction; `jobs`
        worker processes fold the partitions (`--jobs`: a whole number from 1 to MAX_JOBS)."""
        self._check_folds.clear()              # a replay starts the write path's checks afresh too
        return self._work.replay(progress, check_jobs(jobs))

    def _meaning_index(self) -> dict:
        """The meaning index's state (`state`: current, stale or absent; the encoders that made
        it; open facts without a vector) and the notices for this install, from the live tables
        (`replay --check` prints them; `verify` gives the same in its result)."""
        with snapshot(self._conn):
            _damaged, report = vectors_projection.check(self._conn, self._conn)
        return {**report, "notices": vectors_projection.notices(report)} if report else {}

    def replay_differences(self, jobs: int | str = 1, progress: Progress = SILENT) -> list[str]:
        """What a rebuild would change; first, a log row of the wrong shape (rowcheck).
        `progress` hears of the rebuild's events."""
        jobs = check_jobs(jobs)
        bad = first_bad_row(self._conn)
        if bad is not None:                    # nothing folded from a damaged log is worth comparing
            return [f"the log's row at seq {bad[0]}: {bad[1]} (run factledger verify)"]
        progress.stage("rebuilding the projections", logread.count(self._conn))
        return self.projector.differences(self._conn, jobs=jobs, location=self._work.location,
                                          progress=progress.update)

    # Proofs: checkpoints of the Merkle tree, inclusion and consistency (ledger/audit/proofs.py).

    def checkpoint(self, signer=None, origin: str | None = None, projections: bool = False) -> dict:
        """Issue a checkpoint of the Merkle tree (signed when `signer`, a `tlog_note.Signer`, is given).
        `projections`: first prove the projections as `verify` does (from this verifier's record,
        else the whole log), keep the record beside it (`verifycheck.committed_record`) and commit
        its digest in the checkpoint, so that later verifies start from it (docs/audit.md)."""
        from factledger.ledger.audit import proofs

        committed = self._prove_projections() if projections else None
        return proofs.issue(self._work, signer, origin, committed)

    def _prove_projections(self) -> tuple[int, str]:
        record = self.verify_record()
        if record is None:
            raise LedgerError("checkpoint --projections needs a ledger file: a server's tables have no pages to record")
        with snapshot(self._conn), served.keeping(self._served_kept):
            walked = verify(self._conn)                 # the incremental check stands on the chain's
            if not walked["ok"]:
                raise LedgerError(f"the log fails verify at seq {walked['first_bad_seq']}: {walked['problem']}")
            committed = verifycheck.commitment(self._conn)
            start = record if committed is None else verifycheck.committed_record(record)
            quick = verifycheck.check(self._conn, self.projector, start, expect=committed)
            if quick is None or not quick[1]:
                _tables, problem, _meaning = projection_problem(self._conn, self.projector)
                if problem is not None:                 # nothing is committed that verify would fail
                    raise ProjectionMismatch(problem.get("table") or "the projections", None, None, problem["problem"])
            seq = head(self._conn)[0]
            digest = verifycheck.write(self._conn, self.projector, verifycheck.committed_record(record))
        return seq, digest

    def prove_inclusion(self, seq: int, checkpoint: str | None = None) -> dict:
        from factledger.ledger.audit import proofs

        return proofs.inclusion(self._conn, seq, checkpoint)

    def prove_consistency(self, older: str, newer: str) -> dict:
        from factledger.ledger.audit import proofs

        return proofs.consistency(self._conn, older, newer)

    def verify_checkpoint(self, checkpoint: str, pubkey=None, witnesses=(), quorum: int | None = None,
                          older: str | None = None) -> dict:
        """`pubkey` and `witnesses` are `tlog_verify.VerifierKey`s; the failed check is named in the result."""
        from factledger.ledger.audit import proofs

        return proofs.verify(self._conn, checkpoint, pubkey, list(witnesses), quorum, older)


# What a shell asks of a location before (or without) opening a ledger there: the store's
# engines answer (`ledger/store/engines.py`), so no shell names the store.
def _check_key(conn, key: tuple, facts: list[dict]) -> None:
    """A key's open facts as `facts_current` holds them are the log's, and all of them (what a
    reviewer's settlement acts on: `ledger.review.dispute.resolve`)."""
    app, user, subject, predicate = key
    served.check(conn, facts, table="facts_current")
    served.check_open(conn, app, user, {f["fact_id"] for f in facts}, subject=subject, predicate=predicate,
                      include_sensitive=True)


def _once_each(events: list[dict]) -> list[dict]:
    """A fact's events with each event once: one event can touch a fact in two roles (a resolved
    dispute's `DisputeResolved` names the fact as its subject and as the loser).  `role` stays the
    first, `roles` lists them all (`Ledger.fact_relations` reads each)."""
    merged: dict[int, dict] = {}
    for event in events:
        seen = merged.get(event["seq"])
        if seen is None:
            merged[event["seq"]] = {**event, "roles": [event["role"]]}
        elif event["role"] not in seen["roles"]:
            seen["roles"].append(event["role"])
    return list(merged.values())


is_server_location = engines.is_server_location
display_location = engines.display_location
is_fresh_server_location = engines.is_fresh_server_location
holds_location = engines.holds_location
remove_location = engines.remove_location


def refuse_output(path: str | os.PathLike, location: str | os.PathLike, conn=None) -> None:
    """`LedgerError` when writing `path` would overwrite the ledger at `location`: its file or
    its -wal, -shm or -journal, after symbolic links, relative names and hard links (a server's
    files are known only through an open ledger: `Ledger.refuse_output`)."""
    owned = engines.output_clash(path, location, conn)
    if owned is None:
        return
    what = "the ledger" if os.path.realpath(owned) == os.path.realpath(location) else f"the ledger's {owned}"
    inside = os.path.realpath(path) != os.path.realpath(owned) and os.path.isdir(owned)
    raise LedgerError(f"{path} {'lies in' if inside else 'is'} {what}: an output file is never written "
                      "over the ledger; name another file (nothing was written)")


# The clearance words a caller may be given (`personal,health`, `all`) as the sensitivities they
# admit: a shell that filters facts by clearance (the MCP server) reads them as recall does.
parse_clearance = recall_options.parse_clearance
# The clearance a caller gets when it names none: an agent's (recall, facts, the ADK service, MCP)
# and an auditor's (`history`, `why`); both written once, in `ledger/domain/recall_options.py`.
DEFAULT_CLEARANCE = recall_options.DEFAULT_CLEARANCE
AUDIT_CLEARANCE = recall_options.AUDIT_CLEARANCE


def refuse_unsupported(candidate: Candidate, registry: Registry) -> None:
    """`CandidateRefused` when the candidate's quote is no evidence at all (too short) or a
    negation's does not negate, with the reason ingestion would record (docs/ingestion.md)."""
    reason = refused(candidate, registry.spec_for(candidate.predicate, candidate.kind))
    if reason is None:
        return
    what = f"{candidate.predicate} = {candidate.value!r}" + (" (negated)" if candidate.negated else "")
    why = {"quote_too_short": "the quote is too short to say anything",
           "negation_not_in_quote": "the quote does not negate the value"}.get(reason, reason)
    raise CandidateRefused(f"refused {what}: {why} ({reason}; quote {candidate.quote!r}); "
                           "nothing was written", reason)


# What a shell asks that needs no open `Ledger`: ad-hoc SQL over a file, the registry as rows, and
# an extractor scored on a probe set (each on ledgers of its own).  They live behind the facade so
# that no shell imports a use case's module (docs/architecture.md, "One door").

def query(location: str | os.PathLike, sql: str, params: dict | None = None) -> list[dict]:
    """`factledger query`: one read-only statement over a ledger file, behind SQLite's own locks
    (`ledger/audit/query.py`)."""
    from factledger.ledger.audit.query import query as run

    return run(location, sql, params or {})


def registry_rows(registry: Registry, what: str) -> list[dict]:
    """The registry as rows: its `predicates`, its `kinds`, or each predicate's offline rules
    (`coverage`, what `predicates --check` lints)."""
    from factledger.ledger.audit import inventory

    readers = {"predicates": inventory.predicates, "kinds": inventory.kinds, "coverage": inventory.pattern_coverage}
    return readers[what](registry)


def evaluate_probes(path: str, extractor: str = "patterns", model: str | None = None,
                    candidates: list[str] | None = None, registry=None) -> dict:
    """`factledger eval`: an extractor scored on a probe set, each probe's sessions ingested into a
    throwaway ledger (`ledger/ingest/evaluate.py`)."""
    from factledger.ledger.ingest.evaluate import run_probes

    return run_probes(path, extractor=extractor, model=model, candidates=candidates, registry=registry)


def probe_report(report: dict) -> str:
    """`evaluate_probes`' report as the table `factledger eval` prints."""
    from factledger.ledger.ingest.evaluate import render_report

    return render_report(report)
