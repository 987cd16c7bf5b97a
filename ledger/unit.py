"""The unit of work: what a use case is handed, instead of the whole `Ledger`.

A use case (observe, ingest, review, forget, import) needs a connection, a transaction, a way to
append, the projections (to batch their writes or read a key), the registry and the clock.  This
object is exactly that, and owns the transaction boundary: one logical operation, its events, the
projection rows they change and the projections' position commit together or not at all.  The
`Ledger` facade opens one and hands it to the use cases; nothing below the facade imports it.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from factledger.ledger.domain.candidate import Candidate
from factledger.ledger.domain.clocksanity import latest_allowed, refuse_future, tolerance
from factledger.ledger.domain.eventrow import Event
from factledger.ledger.domain.events import EVENT, Body, MeaningChecked
from factledger.ledger.domain.outcome import Outcome
from factledger.ledger.domain.record import events_for, held, rejected, stamped
from factledger.ledger.domain.support import UNSUPPORTED, unsupported
from factledger.ledger.domain.textindex import remembering as text_memo
from factledger.ledger.domain.validate import check
from factledger.ledger.errors import UNUSABLE, LedgerError
from factledger.ledger.registry.kinds import open_key_name
from factledger.ledger.registry.predicates import Registry, load_registry
from factledger.ledger.semantic import embedder as encoders
from factledger.ledger.semantic import entail
from factledger.ledger.semantic.dedup import KeyVectors, same_meaning
from factledger.ledger.semantic.embedder import remembering
from factledger.ledger.store.backend import Engine, EventLog
from factledger.ledger.store.engines import engine_for
from factledger.ledger.store.reads import owed_meaning_checks, statement_bodies
from factledger.ledger.vocabulary.clock import Clock, system_clock
from factledger.ledger.vocabulary.words import Rule
from factledger.projections import vectors
from factledger.projections.keystate import StoredKey, decide_key
from factledger.projections.queries import key_kind
from factledger.projections.recallcache import KeptScopes
from factledger.projections.runner import Projector


class UnitOfWork:
    def __init__(self, path: str | os.PathLike = "factledger.db",
                 registry: Registry | str | os.PathLike | None = None, clock: Clock | None = None,
                 busy_timeout: float = 5.0, synchronous: str = "FULL", create: bool = False,
                 future_tolerance: timedelta | float | str | None = None,
                 read_only: bool = False, repair: bool = False, leave_schema: bool = False):
        # read_only: opened so that it cannot write (docs/decisions.md, "Read-only opens"): the
        # schema is reported, not repaired, and nothing is refolded or re-embedded.  repair: the
        # schema also gets back what is altered (`factledger repair`).  leave_schema: opened for
        # writing but the schema reported as a read reports it (a dry run, which plans inside a
        # transaction it rolls back, changes nothing, not even a missing trigger).
        self.read_only = read_only
        create = create and not read_only
        self.path = Path(path)
        self.location = str(path)             # as given: a file path, or a postgresql:// URL
        self.engine: Engine = engine_for(path)
        # a file: 0600 from birth (a read-only open tightens too: a mode, not a byte); never a foreign database
        tightened = self.engine.prepare(path, create)
        self.registry = registry if isinstance(registry, Registry) else load_registry(registry)
        self.clock = clock or system_clock
        # said_at later than clock + this is refused (ledger/domain/clocksanity.py); default one day
        self.future_tolerance = tolerance(future_tolerance)
        self.store: EventLog = self.engine.open(path, self.clock, busy_timeout, synchronous, create,
                                                read_only=read_only)
        self.conn = self.store.conn
        self.projector = Projector()
        self._stored_keys: dict = {}          # per transaction: (app, user, predicate) -> KeyVectors
        # per transaction: the latest said_at the clock allowed when last read; a candidate said
        # before it is not from the future (the clock does not run back inside a transaction,
        # whose events share one recorded_at), so the clock is read again only for one after it
        self._future_floor: str | None = None
        self.recall_kept = KeptScopes()       # what recall keeps between calls (this ledger's only)
        self.store.on_append(lambda event: self.projector.apply(self.conn, event))
        self.checkpointer: Any = None         # what the engine attached (SQLite: its WAL checkpointer)
        self.schema_report: list[str] = []
        try:
            self.checkpointer = self.engine.attach(self.store, path, synchronous, read_only=read_only)
            mode = "read" if read_only or leave_schema else "repair" if repair else "write"
            refold, self.schema_report = self.engine.ensure_schema(self.store, self.projector, self.clock, mode)
            self.schema_report = tightened + self.schema_report     # what opening changed, said once
            if refold:
                self.replay()
            if not (read_only or leave_schema):   # a reader skips rows of another encoder instead
                vectors.sync(self.conn, self.transaction)   # vectors of the encoder in use (semantic extra)
                if vectors.checks_owed(self.conn):
                    self._recheck_on_open()           # dedup checks an encoder failure deferred
        except BaseException:
            self.conn.close()                 # no half-opened ledger keeps the file (or its lock)
            raise

    @property
    def where(self) -> str:
        """The ledger's location for messages (a URL without its password, with its schema)."""
        return self.engine.describe(self.location, self.conn)

    @property
    def postgres(self) -> bool:
        """Whether the ledger is on a server (tests pick their raw SQL by it)."""
        return self.engine.server

    def schema_problems(self) -> list[str]:
        """Each table, index and guard trigger missing or altered now (`verify` fails on them)."""
        return self.engine.schema_problems(self.store, self.projector)

    def foreign_objects(self) -> list[str]:
        """Each object in the ledger's schema it did not create (a forget refuses beside one)."""
        return self.engine.foreign_objects(self.store, self.projector)

    def purge(self, vacuum: bool | None = None, partitions=None) -> dict:
        """After a forget's commit: make the scrub physical, the engine's way (the receipt's `purge`);
        `partitions`, the (app, user) pairs the forget changed, when known."""
        return self.engine.purge(self.conn, vacuum=vacuum, tables=self.projector.all_tables,
                                 checkpointer=self.checkpointer, partitions=partitions)

    def close(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.close()
        self.conn.close()

    @contextmanager
    def transaction(self, partitions=None) -> Iterator[EventLog]:
        """`partitions`: the (app, user) pairs of every event the transaction will append, when
        known up front (an observe): the store may then let writers of other partitions decide
        meanwhile (`EventStore.transaction`)."""
        with remembering(), text_memo(self.recall_kept.texts), self.store.transaction(partitions) as tx:
            self.projector.discard()          # nothing read before the lock is trusted
            self._stored_keys.clear()
            self._future_floor = None
            try:
                yield tx
                self._stored_keys.clear()
                self.store.closing()          # what is left is writes (and the log-wide fold's reads)
                self.store.write_pending()    # the log's rows first: a projection may read them back
                self.projector.flush(self.conn)
                if self.store.last_seq:
                    self.projector.set_position(self.conn, self.store.last_seq)
            finally:
                self.projector.discard()      # nothing a projection holds outlives its transaction
                self._stored_keys.clear()

    @contextmanager
    def batched(self) -> Iterator[None]:
        """Inside `transaction()`: the projections flush once at its end, and the log's rows are
        written with one `executemany` (`EventStore.buffered`) before them."""
        with self.projector.batched(), self.store.buffered():
            yield

    def read_keys(self, candidates: list[Candidate]) -> None:
        """Inside `batched()`: read the open facts of every key these candidates name, up front
        and in a few statements, so each decision reads the key from memory.  Only a read: a
        candidate whose key the validator names otherwise is read when it is decided."""
        if len(candidates) < 2:
            return
        resolve, keys = self.registry.resolve, []
        for c in candidates:
            spec = resolve(c.predicate)
            if spec is not None:
                keys.append((c.app, c.user, c.subject, spec.name))
        self.projector.prefetch_keys(self.conn, keys)

    def append(self, body: Body) -> Event:
        """Append one event inside `transaction()`; the projections fold it at once."""
        return self.store.append(body)

    def append_candidate(self, candidate: Candidate, hold_id: str | None = None,
                         review: dict | None = None) -> Outcome:
        """Validate, decide and append one candidate; call inside `transaction()`.

        `hold_id` names the review-queue item a reviewer's decision closes: it is set on the
        events that record the decision, and a candidate that would be held again is refused.
        `review` (reviewed_by, review_reason) is set on the same events.
        """
        sha = self.registry.sha256
        if self._future_floor is None or candidate.said_at > self._future_floor:
            now = self.clock()
            refuse_future(candidate.said_at, now, self.future_tolerance)
            self._future_floor = latest_allowed(now, self.future_tolerance)
        verdict = check(candidate, self.registry, self._key_kind(candidate))
        if verdict.action == "hold":
            if hold_id is not None:
                raise LedgerError(f"{candidate.predicate!r} is not a predicate of the registry")
            event = self.store.append(held(candidate, verdict.reason, sha))
            return Outcome("hold", None, verdict.reason, Rule.VALIDATOR, [event.seq])
        if verdict.action == "reject":
            body = rejected(candidate, verdict.reason, Rule.VALIDATOR, sha)
            if hold_id is not None:
                body = body.model_copy(update={"hold_id": hold_id, **(review or {})})
            event = self.store.append(body)
            return Outcome("reject", None, verdict.reason, Rule.VALIDATOR, [event.seq])
        c, spec = verdict.candidate, verdict.spec
        key = StoredKey(self.projector, self.conn, c.app, c.user, c.subject, spec.name)
        meaning = encoders.wanted()           # asked once a candidate (it reads the environment)
        if hold_id is None:                   # a reviewer's accept is the support a hold waited for
            reason = unsupported(c, spec, [f.value for f in key.view()] if spec.cardinality == "one" else None,
                                 entail.supports if meaning else None)
            if reason == UNSUPPORTED:
                event = self.store.append(held(c, reason, sha))
                return Outcome("hold", None, reason, Rule.VALIDATOR, [event.seq])
            if reason is not None:
                event = self.store.append(rejected(c, reason, Rule.VALIDATOR, sha))
                return Outcome("reject", None, reason, Rule.VALIDATOR, [event.seq])
        decision = decide_key(c, spec, key, lambda: self._stored_key(c.app, c.user, spec.name))
        bodies, fact_id = events_for(decision, c, spec, sha, verdict.basis_claimed,
                                     statements=self._statements)
        bodies = stamped(bodies, hold_id, review)
        if bodies and bodies[0]["type"] == EVENT.FactObserved and (
                decision.target is None or bodies[0]["fact_id"] != decision.target.fact_id):
            # events_for minted this id just now (`new_id`): no table can hold it yet, so the facts
            # fold need not look it up
            self.projector.minted(self.conn, bodies[0]["fact_id"])
            if spec.cardinality == "many" and meaning:
                self._key_vector(c, spec, bodies[0]["fact_id"])
        seqs = [self.store.append(body).seq for body in bodies]
        return Outcome(decision.action, fact_id, decision.reason, decision.rule, seqs)

    def recheck_meaning(self) -> dict:
        """Run the dedup meaning checks an encoder failure deferred (`FactObserved.unchecked`), in
        log order, each against the key's values open before its fact (as the live check saw
        them), and record each answer as a `MeaningChecked` event: the value it only restates
        (its statements then count towards that one) or none.  A fact closed since is not
        checked.  An encoder that fails again leaves the rest owed (a warning says so).  Returns
        counts: checked, merged, owed (still)."""
        counts = {"checked": 0, "merged": 0, "owed": 0}
        if self.read_only or not encoders.wanted():
            return counts
        owed: list = []
        try:
            with self.transaction():
                owed = owed_meaning_checks(self.conn)
                for _seq, body in owed:
                    found = self._recheck(body)
                    if found is not None:         # None: closed since, nothing to merge
                        self.store.append(found)
                        counts["checked"] += 1
                        counts["merged"] += found.by_fact_id is not None
                vectors.checks_done(self.conn)
        except LedgerError:
            raise
        except Exception as exc:    # noqa: BLE001 - the encoder failed again: the checks stay owed
            warnings.warn(f"factledger: the encoder failed again ({type(exc).__name__}: {exc}); "
                          f"{len(owed)} meaning check(s) stay owed", RuntimeWarning, stacklevel=2)
            return {"checked": 0, "merged": 0, "owed": len(owed)}     # the transaction rolled back
        return counts

    def _recheck_on_open(self) -> None:
        try:
            self.recheck_meaning()
        except UNUSABLE:
            raise                             # not a ledger that merely cannot be written now
        except LedgerError:                   # busy, or the encoder is not usable: still owed
            return

    def _recheck(self, body: dict) -> MeaningChecked | None:
        key = StoredKey(self.projector, self.conn, body["app"], body["user"], body["subject"], body["predicate"])
        facts = list(key.view())
        ids = [f.fact_id for f in facts]
        if body["fact_id"] not in ids:
            return None
        earlier = facts[:ids.index(body["fact_id"])]
        said = SimpleNamespace(value=body["value"], subject=body["subject"], quote=body["quote"], negated=False)
        spec = SimpleNamespace(name=body["predicate"], cardinality=body["cardinality"])
        restated, rule = same_meaning(said, spec, earlier,
                                      lambda: self._stored_key(body["app"], body["user"], body["predicate"]))
        return MeaningChecked(app=body["app"], user=body["user"], fact_id=body["fact_id"],
                              rule=rule if restated is not None else Rule.MEANING_RETRY,
                              by_fact_id=restated.fact_id if restated is not None else None,
                              registry_sha256=self.registry.sha256)

    def _statements(self, seqs: list[int]) -> dict[int, dict]:
        """The bodies of these events (a split reads its fact's statements back from the log)."""
        self.store.write_pending()
        return statement_bodies(self.conn, seqs)

    def _key_kind(self, candidate: Candidate) -> str | None:
        """The kind of the partition's open key of this name, for a candidate that names no kind
        and no registry predicate (a later statement of an open key need not repeat its kind)."""
        if candidate.kind is not None or self.registry.resolve(candidate.predicate) is not None:
            return None
        name = open_key_name(candidate.predicate)
        if name is None:
            return None
        return self.projector.checked_kind(self.conn, candidate.app, candidate.user, name,
                                           key_kind(self.conn, candidate.app, candidate.user, name))

    def _stored_key(self, app: str, user: str, predicate: str) -> KeyVectors:
        """A key's vectors (`semantic.dedup.KeyVectors`): those stored, read once per transaction
        (the table changes only when the transaction's projections flush), then those of the
        facts the transaction opens on it (`_key_vector`)."""
        found = self._stored_keys.get((app, user, predicate))
        if found is None:
            found = KeyVectors(vectors.key_vectors(self.conn, app, user, predicate))
            self._stored_keys[(app, user, predicate)] = found
        return found

    def _key_vector(self, c: Candidate, spec, fact_id: str) -> None:
        """A fact just opened on a `many` key joins its key's vectors for the next candidates: its
        sentence's vector is the one its stored row will hold (the embedding is remembered for
        the transaction, so the vectors projection does not run the encoder again)."""
        model = encoders.get()
        if model is None:
            return
        try:
            vector = model.embed(encoders.sentence(c.subject, spec.name, c.value, c.quote))
        except LedgerError:
            raise
        except Exception:       # noqa: BLE001 - as dedup: the encoder failing costs the comparison, not the fact
            return
        self._stored_key(c.app, c.user, spec.name).add(fact_id, vector)

    def replay(self, progress=None, jobs: int = 1) -> int:
        """Throw the projections away and refold them from the log (`jobs` worker processes fold,
        this transaction writes and commits once: `projections/parallel.py`)."""
        with self.transaction():
            folded = self.projector.rebuild(self.conn, progress=progress, jobs=jobs, location=self.location)
        self.engine.after_rebuild(self.conn, self.projector.all_tables, jobs)
        return folded
