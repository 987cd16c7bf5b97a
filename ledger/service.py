"""`Ledger`: the one object a library user opens.

It wires the store, the registry, the decision table and the projections together, and owns the
transaction boundary: one logical operation, its events, the projection rows they change and the
projections' position commit together or not at all.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from factledger.projections import vectors
from factledger.projections.runner import OBSOLETE_INDEXES, Projector

from . import queries
from .bounds import check_days, check_log_window
from .candidate import Candidate
from .checkpoint import Checkpointer
from .clocksanity import refuse_future, tolerance
from .decide import decide
from .errors import LedgerError
from .ids import normalize_id, normalize_optional, normalize_partition
from .ledger_file import prepare as prepare_file
from .plan import events_for, held, rejected
from .registry import Registry, load_registry
from .rowcheck import first_bad_row
from .semantic.dedup import same_meaning
from .semantic.embedder import wanted
from .semantic.review import contradictions, with_suggestions
from .store import EventStore, connect
from .timeutil import Clock, normalise_time, parse_time, system_clock
from .validate import check


@dataclass
class Outcome:
    """What happened to one candidate: the decision and the seqs of the events that record it."""

    decision: str
    fact_id: str | None
    reason: str
    rule: str
    seqs: list[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"decision": self.decision, "fact_id": self.fact_id, "reason": self.reason,
                "rule": self.rule, "seqs": self.seqs}


class Ledger:
    def __init__(self, path: str | os.PathLike = "factledger.db",
                 registry: Registry | str | os.PathLike | None = None, clock: Clock | None = None,
                 busy_timeout: float = 5.0, synchronous: str = "FULL", create: bool = True,
                 future_tolerance: timedelta | float | str | None = None):
        self.path = Path(path)
        if not create and str(path) != ":memory:" and not self.path.exists():
            raise LedgerError(f"no ledger at {path} (run `factledger init` first)")
        prepare_file(path, create)            # 0600 from birth; never alter a foreign database
        self.registry = registry if isinstance(registry, Registry) else load_registry(registry)
        self.clock = clock or system_clock
        # said_at later than clock + this is refused (ledger/clocksanity.py); default one day
        self.future_tolerance = tolerance(future_tolerance)
        self.conn = connect(path, busy_timeout, synchronous)
        self.store = EventStore(self.conn, self.clock)
        self.projector = Projector()
        self.store.on_append(lambda event: self.projector.apply(self.conn, event))
        self.checkpointer: Checkpointer | None = None
        try:
            if Checkpointer.applies_to(str(path)):
                self.checkpointer = Checkpointer(self.conn, synchronous)
                self.checkpointer.take_over()
                self.store.before_begin(lambda: self.checkpointer.before_begin(self.conn))
                self.store.on_commit(self.checkpointer.after_commit)
            self._ensure_schema()
            vectors.sync(self.conn, self.transaction)   # vectors of the encoder in use (semantic extra)
        except BaseException:
            self.conn.close()                 # no half-opened ledger keeps the file (or its lock)
            raise

    def _ensure_schema(self) -> None:
        """Create what is missing; a projection added since the file was made is folded from the log.

        An index this version no longer keeps is dropped and one it added is built (a file made by
        an earlier version then writes and reads like a new one).  Only reads when nothing is
        missing, so a read-only ledger still opens (and keeps its old indexes when only they differ).
        """
        present = {row[0] for row in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")}
        schema = self.store.schema + self.projector.schema
        tables = {"events", "projection_positions", *self.projector.all_tables}
        indexes = set(re.findall(r"CREATE (?:UNIQUE )?INDEX IF NOT EXISTS (\w+)", schema))
        obsolete = sorted(present & set(OBSOLETE_INDEXES))
        if tables <= present and indexes <= present and not obsolete:
            return
        drops = "".join(f"DROP INDEX IF EXISTS {name};" for name in obsolete)
        try:
            self.conn.executescript("BEGIN IMMEDIATE;" + drops + schema + "COMMIT;")
        except sqlite3.DatabaseError:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            if tables <= present:
                # Only indexes differ: a read-only or busy file, or a damaged page that `verify`
                # and `replay --check` must still be able to report, opens with the old ones.
                return
            raise
        if "events" in present and not {"projection_positions", *self.projector.all_tables} <= present:
            self.replay()

    def close(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.close()
        self.conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[EventStore]:
        with self.store.transaction() as tx:
            self.projector.discard()          # nothing read before the lock is trusted
            try:
                yield tx
                self.projector.flush(self.conn)
                if self.store.last_seq:
                    self.projector.set_position(self.conn, self.store.last_seq)
            finally:
                self.projector.discard()      # nothing a projection holds outlives its transaction

    # --- writing -------------------------------------------------------------------------

    def observe(self, candidate: Candidate) -> Outcome:
        return self.observe_many([candidate])[0]

    def observe_many(self, candidates: Iterable[Candidate]) -> list[Outcome]:
        """Decide and append a batch in one transaction; each candidate sees the ones before it
        (through the projections' unwritten state), and the projections write once at the end."""
        with self.transaction(), self.projector.batched():
            return [self.append_candidate(c) for c in candidates]

    def append_candidate(self, candidate: Candidate, hold_id: str | None = None,
                         review: dict | None = None) -> Outcome:
        """Validate, decide and append one candidate; call inside `with ledger.transaction():`.

        `hold_id` names the review-queue item a reviewer's decision closes (issue 3): it is set
        on the events that record the decision, and a candidate that would be held again is
        refused instead.  `review` (reviewed_by, review_reason) is set on the same events.
        """
        stamp = {"hold_id": hold_id, **(review or {})}
        sha = self.registry.sha256
        refuse_future(candidate.said_at, self.clock(), self.future_tolerance)
        verdict = check(candidate, self.registry)
        if verdict.action == "hold":
            if hold_id is not None:
                raise LedgerError(f"{candidate.predicate!r} is not a predicate of the registry")
            event = self.store.append(held(candidate, verdict.reason, sha))
            return Outcome("hold", None, verdict.reason, "validator", [event.seq])
        if verdict.action == "reject":
            body = rejected(candidate, verdict.reason, "validator", sha)
            if hold_id is not None:
                body = body.model_copy(update=stamp)
            event = self.store.append(body)
            return Outcome("reject", None, verdict.reason, "validator", [event.seq])
        c, spec = verdict.candidate, verdict.spec
        facts = self.projector.key_view(self.conn, c.app, c.user, c.subject, spec.name)
        restates = (same_meaning(c, spec, facts, lambda: vectors.key_vectors(self.conn, c.app, c.user, spec.name))
                    if wanted() else (None, None))
        decision = decide(c, facts, spec, restates)
        bodies, fact_id = events_for(decision, c, spec, sha, verdict.basis_claimed)
        if hold_id is not None:
            bodies = [b.model_copy(update=stamp) if "hold_id" in type(b).model_fields
                      else b for b in bodies]
        seqs = [self.store.append(body).seq for body in bodies]
        return Outcome(decision.action, fact_id, decision.reason, decision.rule, seqs)

    def resolve(self, fact_id: str, accept: bool, by: str, reason: str) -> Outcome:
        """A reviewer settles a dispute; the decision is recorded as `DisputeResolved`."""
        from .resolve import resolution

        fact_id = normalize_id(fact_id, "fact id")
        with self.transaction():
            bodies = resolution(self.conn, fact_id, accept, by, reason, self.registry.sha256)
            seqs = [self.store.append(body).seq for body in bodies]
        return Outcome("resolve", fact_id, bodies[0].outcome, bodies[0].rule, seqs)

    # --- reading -------------------------------------------------------------------------

    def facts(self, app: str, user: str, **filters) -> list[dict]:
        app, user = normalize_partition(app, user)
        return queries.facts(self.conn, app, user, now=self.clock(), registry=self.registry, **filters)

    def history(self, app: str, user: str, **filters) -> list[dict]:
        app, user = normalize_partition(app, user)
        return queries.history(self.conn, app, user, registry=self.registry, now=self.clock(), **filters)

    def why(self, fact_id: str) -> dict:
        return queries.why(self.conn, normalize_id(fact_id, "fact id"), now=self.clock())

    def log(self, **filters) -> list[dict]:
        for name in ("app", "user"):
            if name in filters:
                filters[name] = normalize_optional(filters[name], name)
        check_log_window(filters.get("after", 0), filters.get("limit"))
        return queries.log(self.conn, **filters)

    def stats(self) -> dict:
        return queries.stats(self.conn)

    def head(self) -> tuple[int, str]:
        return self.store.head()

    # --- recall (issue 5: ledger/recall.py, ledger/render.py) ---------------------------

    def recall(self, app: str, user: str, query: str | None = "", *, explain: bool = False,
               **options):
        """The few current facts that belong in the next prompt, rendered and explained.

        Options (see `ledger.recall_options.RecallOptions.build`): clearance, min_confidence,
        max_age, recency_weight, half_life, limit, budget, preload, domain, mode; and `as_of` (a
        time: the facts open then, scored as of then).  Returns a `RecallResult`:
        `.text` is the block for the model, `.selected` the facts, `.candidates` the explanation.
        """
        from .recall import RecallOptions, recall

        as_of = options.pop("as_of", None)     # serve what would have been served then
        app, user = normalize_partition(app, user)
        opts = options.pop("options", None) or RecallOptions.build(**options)
        at = normalise_time(as_of) if as_of is not None else None
        return recall(self.conn, app, user, query, now=parse_time(at) if at else self.clock(),
                      options=opts, registry=self.registry, explain=explain, as_of=at)

    # --- end recall ----------------------------------------------------------------------

    # --- ingestion (issue 3: ledger/ingest/, projections/sessions.py) --------------------

    def ingest_session(self, session, app: str | None = None, user: str | None = None,
                       extractor=None, **options):
        """Ingest what is new in one session (an ADK session dict, camelCase or snake_case, or a
        parsed `ledger.ingest.Session`): one transaction, re-ingestion appends nothing.
        `extractor` is a name (patterns | anthropic | candidates) or an extractor object.
        Returns a `SessionResult`; bad input raises `LedgerError` with nothing written."""
        from .ingest.pipeline import ingest_session

        app, user = normalize_optional(app or None, "app"), normalize_optional(user or None, "user")
        return ingest_session(self, session, app, user, extractor, **options)

    def session_state(self, app: str, user: str, session: str) -> dict | None:
        from factledger.projections.sessions import session_state

        app, user = normalize_partition(app, user)
        session = normalize_id(session, "session")
        return session_state(self.conn, app, user, session)

    def sessions(self, app: str, user: str) -> list[dict]:
        from factledger.projections.sessions import list_sessions

        app, user = normalize_partition(app, user)
        return list_sessions(self.conn, app, user)

    def ingest_queue(self, app: str | None = None, user: str | None = None,
                     status: str | None = "open") -> list[dict]:
        from factledger.projections.sessions import queue

        app, user = normalize_optional(app, "app"), normalize_optional(user, "user")
        return queue(self.conn, app, user, status)

    def held(self, app: str | None = None, user: str | None = None,
             status: str | None = "open") -> list[dict]:
        from .ingest.review import held_rows

        app, user = normalize_optional(app, "app"), normalize_optional(user, "user")
        return with_suggestions(held_rows(self.conn, app, user, status), self.registry)

    def contradictions(self, app: str | None = None, user: str | None = None) -> list[dict]:
        """Open facts of registry-declared contradicting predicates with equal values."""
        app, user = normalize_optional(app, "app"), normalize_optional(user, "user")
        return contradictions(self.conn, self.registry, app, user)

    def review_accept(self, hold_id: str, predicate: str, *, by: str | None = None,
                      reason: str | None = None) -> Outcome:
        """Apply a held candidate under `predicate`; `by` and `reason` are recorded in its events."""
        from .ingest.review import accept

        return accept(self, normalize_id(hold_id, "hold id"), predicate, by=by, reason=reason)

    def review_reject(self, hold_id: str, reason: str, *, by: str | None = None) -> Outcome:
        from .ingest.review import reject

        return reject(self, normalize_id(hold_id, "hold id"), reason, by=by)

    # --- end ingestion -------------------------------------------------------------------

    # --- forgetting (issue 4: ledger/forget*.py, ledger/redecide.py, ledger/export.py) ----

    def forget(self, app: str, user: str, *, session: str | None = None, fact: str | None = None,
               predicate: str | None = None, sensitivity: str | None = None,
               reason: str | None = None, requested_by: str | None = None,
               dry_run: bool = False, vacuum: bool = False, ticket: str | None = None) -> dict:
        """Erase a user, or one session / fact / predicate / sensitivity class of it; the receipt."""
        from .forget import forget
        from .scope import build_scope

        app, user = normalize_partition(app, user)
        session, fact = normalize_optional(session, "session"), normalize_optional(fact, "fact id")
        scope = build_scope(app, user, session=session, fact=fact, predicate=predicate,
                            sensitivity=sensitivity, registry=self.registry)
        return forget(self, scope, reason, requested_by, dry_run=dry_run, vacuum=vacuum, ticket=ticket)

    def retain(self, **options) -> dict:
        """Forget facts past retention (`ledger.forget.retain`); a dry run unless apply=True."""
        from .forget import retain

        for name in ("app", "user"):
            if name in options:
                options[name] = normalize_optional(options[name], name)
        check_days("--older-than", options.get("older_than"), self.clock())
        return retain(self, **options)

    def erasures(self, app: str | None = None) -> list[dict]:
        from .forget import erasures

        return erasures(self.conn, normalize_optional(app, "app"))

    def is_forgotten_session(self, app: str, user: str, session: str) -> bool:
        from .forget import is_forgotten_session

        app, user = normalize_partition(app, user)
        session = normalize_id(session, "session")
        return is_forgotten_session(self.conn, app, user, session)

    def export_log(self, out, app: str | None = None, user: str | None = None) -> int:
        from .export import export_log

        app, user = normalize_optional(app, "app"), normalize_optional(user, "user")
        return export_log(self.conn, out, app, user)

    def export_subject(self, app: str, user: str) -> dict:
        from .export import export_subject

        app, user = normalize_partition(app, user)
        return export_subject(self, app, user)

    def import_log(self, source) -> dict:
        from .export import import_log

        return import_log(self, source)

    # --- end forgetting ------------------------------------------------------------------

    # --- checking ------------------------------------------------------------------------

    def verify(self, expect_head: str | None = None) -> dict:
        from .verify import verify

        return verify(self.conn, expect_head)

    def replay(self, progress=None) -> int:
        """Throw the projections away and refold them from the log."""
        with self.transaction():
            return self.projector.rebuild(self.conn, progress=progress)

    def replay_differences(self) -> list[str]:
        """What a rebuild would change; first, a log row of the wrong shape (rowcheck)."""
        bad = first_bad_row(self.conn)
        if bad is not None:                    # nothing folded from a damaged log is worth comparing
            return [f"the log's row at seq {bad[0]}: {bad[1]} (run factledger verify)"]
        return self.projector.differences(self.conn)

    # --- proofs: checkpoints, inclusion and consistency (ledger/proofs.py) -----------------

    def checkpoint(self, signer=None, origin: str | None = None) -> dict:
        """Issue a checkpoint of the Merkle tree (signed when `signer`, a `tlog_note.Signer`, is given)."""
        from .proofs import issue

        return issue(self, signer, origin)

    def prove_inclusion(self, seq: int, checkpoint: str | None = None) -> dict:
        from .proofs import inclusion

        return inclusion(self.conn, seq, checkpoint)

    def prove_consistency(self, older: str, newer: str) -> dict:
        from .proofs import consistency

        return consistency(self.conn, older, newer)

    def verify_checkpoint(self, checkpoint: str, pubkey=None, witnesses=(), quorum: int | None = None,
                          older: str | None = None) -> dict:
        """`pubkey` and `witnesses` are `tlog_verify.VerifierKey`s; the failed check is named in the result."""
        from .proofs import verify

        return verify(self.conn, checkpoint, pubkey, list(witnesses), quorum, older)
