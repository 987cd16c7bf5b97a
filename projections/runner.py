"""Runs the projections: live (inside the appending transaction), full rebuild, and the check.

Positions are committed with the projection rows they describe, so after a crash a projection is
never ahead of or behind the log it claims to have read.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import groupby
from operator import attrgetter

from factledger.ledger.domain.eventrow import Event
from factledger.ledger.domain.textindex import TextMemo, remembering
from factledger.ledger.store.engines import SQLITE, engine_of
from factledger.ledger.store.eventlog import head, iter_events
from factledger.ledger.store.reads import iter_partitioned
from factledger.projections import negations, vectors
from factledger.projections.base import (
    REBUILD,
    BufferedProjection,
    KeyReader,
    LogWideProjection,
    Projection,
    WholeLogRebuild,
    check_order,
    clear,
)
from factledger.projections.catalog import all_projections

# Secondary indexes that no fold reads while it runs (readers and `decide` use them, folds look
# facts up by fact_id).  A full rebuild drops them and builds each once at the end, one sort
# instead of a random B-tree insert per row; the tables' rows are the same either way.
# A rebuild's batch folds (`rebuild_partition`) read no table at all, so the open-interval and
# recall partition indexes can wait too.
DEFERRED_INDEXES = ("fact_history_intervals", "fact_history_past", "facts_current_key",
                    "fact_events_partition", "fact_history_open", "recall_index_partition")

# Of those, the ones a parallel rebuild keeps: each is led by (app, user), and the shares arrive
# in (app, user) order, so every row it adds lands at the index's right edge, while the workers
# still fold; built at the end they were most of the serial tail (7 s of a 1M-event replay,
# docs/performance.md, "Parallel replay").  A one-job rebuild has nothing to overlap them with.
ORDERED_INDEXES = ("fact_history_intervals", "fact_history_past", "facts_current_key",
                   "fact_events_partition", "recall_index_partition")

# Indexes earlier versions kept and this one does not (a file made by one loses them on open).
OBSOLETE_INDEXES = ("fact_history_key", "fact_history_as_of")

POSITIONS = "CREATE TABLE IF NOT EXISTS projection_positions (name TEXT PRIMARY KEY, seq INTEGER NOT NULL);"


class Projector:
    """Applies events to every projection, and flushes what they hold back.

    A projection with `flush` keeps what an event changes in memory until the projector flushes
    it: after every event, or, inside `batched()`, once when the transaction ends (the
    ledger's `transaction()` flushes before it records the position and commits, and discards
    on the way out, so nothing held outlives its transaction).
    """

    def __init__(self, projections: Iterable[Projection] | None = None):
        projections = tuple(all_projections() if projections is None else projections)
        check_order(projections)
        # Log-wide projections (the Merkle tree) fold every event in seq order; they are rebuilt
        # only whole, never cleared with a partition, and own no partitioned table.
        self.log_wide = tuple(p for p in projections if isinstance(p, LogWideProjection))
        self.projections = tuple(p for p in projections if p not in self.log_wide)
        self._flushing = tuple(p for p in self.projections if isinstance(p, BufferedProjection)) + self.log_wide
        self._buffered = tuple(isinstance(p, BufferedProjection) for p in self.projections)
        # the event types a per-event projection acts on, where it names them (`event_types`): a
        # rebuild skips it for a partition that holds none of them
        self._event_types = tuple(getattr(p, "event_types", None) for p in self.projections)
        self._plan = tuple(zip(self.projections, self._buffered, self._event_types))
        self._acting: dict[str, tuple] = {}   # event type -> the projections `apply` hands it to
        self._facts = next((p for p in self.projections if isinstance(p, KeyReader)), None)
        # the projection that keeps a key's negations (read up front for a batch), if any
        self._negations = next((p for p in self.projections if hasattr(p, "forget_heard")), None)
        self._batched = False
        # `check_key(conn, key, facts)`: raises unless a key's stored open facts (dicts of the
        # snapshot's columns) are what the log says, before the decision table reads them; set by
        # the facade (`ledger.service`, with `ledger.audit.served`), which this layer cannot import.
        self.check_key: Callable | None = None
        # The same for what else the table reads of a key, each once per key per transaction:
        # `check_past(conn, key, facts, past_ids, changed)` its closed facts,
        # `check_negations(conn, key)` the negations it heard (with its first read),
        # `check_kind(conn, app, user, predicate, kind)` an open key's kind.
        self.check_past: Callable | None = None
        self.check_negations: Callable | None = None
        self.check_kind: Callable | None = None
        # The same for many keys at once (a batch's keys read up front, `prefetch_keys`):
        # `check_keys(conn, [(key, facts, open_ids)], [(key, past facts, past_ids, changed)])`
        # (the open facts and the past) and `check_keys_negations(conn, keys)`.
        self.check_keys: Callable | None = None
        self.check_keys_negations: Callable | None = None
        self._checked: set[tuple] = set()

    obsolete_indexes = OBSOLETE_INDEXES       # indexes an earlier version kept; dropped on open

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(t for p in self.projections for t in p.tables)

    @property
    def all_tables(self) -> tuple[str, ...]:
        """Every projection table, the log-wide ones included (`tables` are the partitioned ones)."""
        return self.tables + tuple(t for p in self.log_wide for t in p.tables)

    def partition_counts(self, conn: sqlite3.Connection, app: str, user: str) -> dict[str, int]:
        """How many rows each partitioned table holds for one partition (a forget reports what it
        removed as the difference)."""
        return {table: conn.execute(f"SELECT COUNT(*) FROM {table} WHERE app = ? AND user = ?",
                                    (app, user)).fetchone()[0] for table in self.tables}

    @property
    def schema(self) -> str:
        """DDL for every projection table plus their positions (safe to run twice)."""
        names = ", ".join(f"('{p.name}', 0)" for p in self.projections)
        return (POSITIONS + "".join(p.schema for p in self.projections + self.log_wide) +
                f"INSERT OR IGNORE INTO projection_positions VALUES {names};")

    def create(self, conn: sqlite3.Connection) -> None:
        conn.executescript(self.schema)

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        acting = self._acting.get(event.type)
        if acting is None:
            acting = self._acting[event.type] = self._acting_on(event.type)
        for projection in acting:
            projection.apply(conn, event)
        if not self._batched:
            self.flush(conn)

    def _acting_on(self, type_: str) -> tuple:
        """The projections whose `apply` acts on events of this type, in order (those that name
        their `event_types` and not this one do nothing with it: the live fold skips them, as a
        rebuild skips them for a partition without their types), then the log-wide ones."""
        return tuple(p for p, types in zip(self.projections, self._event_types, strict=True)
                     if types is None or type_ in types) + self.log_wide

    @contextmanager
    def batched(self) -> Iterator[None]:
        """Hold every flush until the transaction ends: one write per table for the batch."""
        outer, self._batched = self._batched, True
        try:
            yield
        finally:
            self._batched = outer

    def flush(self, conn: sqlite3.Connection) -> None:
        try:
            for projection in self._flushing:
                projection.flush(conn)
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        for projection in self._flushing:
            projection.discard()
        if self._negations is not None:
            self._negations.forget_heard()
        self._checked.clear()

    def _once(self, what: str, key: tuple) -> bool:
        """True the first time this transaction asks for `what` of `key` (then it is checked)."""
        if (what, key) in self._checked:
            return False
        self._checked.add((what, key))
        return True

    def _check_key(self, conn: sqlite3.Connection, key: tuple, facts: list[dict], open_ids: set[str]) -> None:
        self.check_key(conn, key, facts, open_ids)
        if self.check_negations is not None and self._once("negations", key):
            self.check_negations(conn, key)

    def _check_past(self, conn: sqlite3.Connection, key: tuple, facts: list[dict], past_ids: set[str],
                    changed: set[str]) -> None:
        if self._once("past", key):
            self.check_past(conn, key, facts, past_ids, changed)

    def checked_kind(self, conn: sqlite3.Connection, app: str, user: str, predicate: str,
                     kind: str | None) -> str | None:
        """An open key's kind as `queries.key_kind` read it, checked against the log once per
        key per transaction (`check_kind`)."""
        if self.check_kind is not None and self._once("kind", (app, user, predicate)):
            self.check_kind(conn, app, user, predicate, kind)
        return kind

    def key_view(self, conn: sqlite3.Connection, app: str, user: str, subject: str, predicate: str):
        """The open facts of a key as the open transaction has them (the decision table's read:
        a `projections.keyindex.KeyView`)."""
        return self._facts.key_view(conn, app, user, subject, predicate,
                                    self._check_key if self.check_key is not None else None)

    def minted(self, conn: sqlite3.Connection, fact_id: str) -> None:
        """A fact id minted in this transaction, about to be observed: no table holds it."""
        self._facts.minted(conn, fact_id)

    def prefetch_keys(self, conn: sqlite3.Connection, keys) -> None:
        """Read the open facts of these keys (app, user, subject, predicate) now, in one read,
        for the decisions this transaction will make on them."""
        keys = list(keys)
        if self._negations is not None:
            self._negations.prefetch(conn, keys)
        check_many = self._check_keys if self.check_key is not None and self.check_keys is not None else None
        self._facts.prefetch_keys(conn, keys, self._check_key if self.check_key is not None else None,
                                  check_many)

    def _check_keys(self, conn: sqlite3.Connection, items: list[tuple[tuple, list[dict], set[str]]],
                    past: list[tuple[tuple, list[dict], set[str], set[str]]]) -> None:
        """`_check_key` and `_check_past` of many keys, in a few statements (`check_keys`,
        `check_keys_negations`)."""
        past = [item for item in past if self._once("past", item[0])] if self.check_past is not None else []
        self.check_keys(conn, items, past)
        if self.check_negations is not None:
            keys = [key for key, _facts, _ids in items if self._once("negations", key)]
            if keys:
                if self.check_keys_negations is not None:
                    self.check_keys_negations(conn, keys)
                else:
                    for key in keys:
                        self.check_negations(conn, key)

    def negations_of(self, conn: sqlite3.Connection, app: str, user: str, subject: str, predicate: str,
                     wanted: str) -> list:
        """The key's negations of one value as the open transaction has them (read up front for a
        batch's keys)."""
        if self._negations is None:
            return negations.negations_of(conn, app, user, subject, predicate, wanted)
        return self._negations.negations_of(conn, app, user, subject, predicate, wanted)

    def key_past(self, conn: sqlite3.Connection, app: str, user: str, subject: str, predicate: str):
        """The closed facts of a key that held it for a while (decide's `past`, read lazily)."""
        return self._facts.key_past(conn, app, user, subject, predicate,
                                    self._check_past if self.check_past is not None else None)

    def set_position(self, conn: sqlite3.Connection, seq: int) -> None:
        conn.execute("UPDATE projection_positions SET seq = ?", (seq,))

    def position(self, conn: sqlite3.Connection) -> int:
        return conn.execute("SELECT " + FOLDED_TO).fetchone()[0] or 0

    def rebuild(self, conn: sqlite3.Connection, source: sqlite3.Connection | None = None,
                app: str | None = None, user: str | None = None,
                progress: Callable[[int], None] | None = None, jobs: int = 1,
                location: str | None = None) -> int:
        """Clear and refold (one partition, or everything) from `source`'s log; caller holds the transaction.

        Every projection's state is per `(app, user)` partition, so the log is folded partition by
        partition (a full rebuild streams it in `events_partition` order: memory is bounded by the
        largest partition, not the log).  A projection with `rebuild_partition(conn, events,
        state)` folds a partition in memory and writes its rows at once; one without is applied
        event by event.  The rows are the live fold's (tests/projections/test_fold_rebuild.py, `replay --check`).

        `jobs` above 1 (a full rebuild only): the partitions are folded by that many worker
        processes reading the log at `location` themselves, and written here in the same order
        (`projections/parallel.py`); the tables are the same as with one.
        """
        source = source or conn
        if source is conn:
            self.flush(conn)                  # what this transaction holds goes in before the clear
        upto = head(source)[0]
        workers = None
        if jobs > 1 and app is None:
            from factledger.projections import parallel  # process pools cost an import; most rebuilds need none

            workers = parallel.Workers(str(location), jobs, upto, type(self), parallel.plan(source, upto, jobs))
        try:
            deferred = []
            if app is None:
                deferred = self.drop_deferred_indexes(conn, keep=ORDERED_INDEXES if workers else ())
            for projection in self.projections:
                clear(conn, projection, app, user)
            if workers is not None:
                count = self._write_folded(conn, workers, progress)
            else:
                # a full rebuild on SQLite from its own log: the projections that can write their
                # rows from the log in one statement do (`rebuild_whole`), the rest fold here
                whole = () if app is not None or source is not conn or engine_of(conn) is not SQLITE else \
                    tuple(p for p in self.projections if isinstance(p, WholeLogRebuild))
                count = self._fold_here(conn, source, app, user, progress,
                                        tuple(step for step in self._plan if step[0] not in whole))
                for projection in whole:
                    projection.rebuild_whole(conn, upto)
            for sql in deferred:
                conn.execute(sql)
            if app is None and workers is None:
                for projection in self.log_wide:
                    projection.rebuild(conn, source, upto)
        finally:
            if workers is not None:
                workers.close()
        self.set_position(conn, upto)
        return count

    def _fold_here(self, conn: sqlite3.Connection, source: sqlite3.Connection, app: str | None,
                   user: str | None, progress: Callable[[int], None] | None, plan: tuple) -> int:
        if app is None:
            partitions = iter_partitioned(source)
        else:
            partitions = iter([list(iter_events(source, app, user))])
        count = reported = 0
        buffer = RowBuffer(conn)
        with remembering(TextMemo()):         # texts cut once per rebuild; the memo ends with it
            for events in partitions:
                self.fold_partition(conn, buffer, events, plan)
                count += len(events)
                while progress and count - reported >= 10_000:
                    progress(10_000)
                    reported += 10_000
            buffer.flush()
        if progress:
            progress(count - reported)
        return count

    def _write_folded(self, conn: sqlite3.Connection, workers,
                      progress: Callable[[int], None] | None) -> int:
        """Write what the workers fold, share by share in partition order, and the log-wide
        tables between two shares as soon as their fold has ended (they are tables of their own,
        and copied early they are not left for the serial end of the rebuild)."""
        count, log_wide_written = 0, False
        with engine_of(conn).image_loader(conn) as load:
            for folded, image in workers.folded(progress):
                count += folded
                load(image, self.tables)
                if not log_wide_written and workers.log_wide_ready():
                    self._write_log_wide(conn, load, workers)
                    log_wide_written = True
            if not log_wide_written:
                self._write_log_wide(conn, load, workers)
        return count

    def _write_log_wide(self, conn: sqlite3.Connection, load: Callable, workers) -> None:
        for projection in self.log_wide:
            clear(conn, projection)
        load(workers.log_wide_image(), [t for p in self.log_wide for t in p.tables])

    def fold_into(self, conn: sqlite3.Connection, events: Iterable[Event]) -> int:
        """A replay worker's fold of a share (events in `(app, user, seq)` order) into `conn`
        (its in-memory copy of the tables, inside a transaction); how many events there were."""
        buffer, count = RowBuffer(conn), 0
        with remembering(TextMemo()):
            for _key, group in groupby(events, key=attrgetter("app", "user")):
                partition = list(group)
                self.fold_partition(conn, buffer, partition)
                count += len(partition)
            buffer.flush()
        return count

    def drop_deferred_indexes(self, conn: sqlite3.Connection, keep: tuple[str, ...] = ()) -> list[str]:
        """Drop the indexes a full rebuild builds once at its end (all of DEFERRED_INDEXES but
        `keep`); returns their DDL."""
        return _drop_deferred_indexes(conn, tuple(n for n in DEFERRED_INDEXES if n not in keep))

    def fold_partition(self, conn: sqlite3.Connection, buffer: RowBuffer,
                       events: list[Event], plan: tuple | None = None) -> None:
        """Fold one partition from nothing: the batch folds into `buffer`, the others into `conn`
        (`plan`: the projections to fold, each with whether it is buffered and the event types
        it acts on; all of them unless given)."""
        state: dict = {REBUILD: buffer.once}
        types = None
        for projection, buffered, wanted in (self._plan if plan is None else plan):
            if buffered:
                projection.rebuild_partition(buffer, events, state)
                continue
            if wanted is not None:            # most partitions hold no event it acts on
                if types is None:
                    types = {event.type for event in events}
                if wanted.isdisjoint(types):
                    continue
            for event in events:
                projection.apply(conn, event)

    def differences(self, conn: sqlite3.Connection, jobs: int = 1, location: str | None = None,
                    progress: Callable[[int], None] | None = None) -> list[str]:
        """Rebuild into memory and compare with the live tables: 'rebuild == live', checked
        (`jobs`, `location`: folded by worker processes, as `rebuild`); the meaning vectors are
        checked as stored, not refolded (`projections.vectors.check`)."""
        fresh = sqlite3.connect(":memory:", isolation_level=None)
        self.create(fresh)
        fresh.execute("BEGIN")
        with vectors.left_out(self):
            self.rebuild(fresh, source=conn, jobs=jobs, location=location, progress=progress)
        fresh.execute("COMMIT")
        problems = []
        # As verify compares (ledger/audit/projcheck.py): the live file attached read-only to the
        # rebuilt database when the engine can lend it, so a table that agrees is found so inside
        # SQLite; only one that does not (or an engine that cannot attach) is read into Python,
        # on the caller's own connection, to count what differs.
        engine = engine_of(conn)
        attached = engine.attach_live(conn, fresh)
        for table in self.all_tables:
            if attached and table != vectors.TABLE and engine.same_rows(fresh, table):
                continue
            if table == vectors.TABLE:
                # checked as stored, against the rebuilt open facts: the verdict must not depend
                # on the checker's encoder (`projections.vectors.check`)
                found, _state = vectors.check(conn, fresh)
                if found is not None:
                    problems.append(found["problem"])
                continue
            # the rebuilt table's columns (a backend may keep one more: PostgreSQL's explicit rowid)
            columns = ", ".join(d[0] for d in fresh.execute(f"SELECT * FROM {table} LIMIT 0").description)
            live = _rows(conn, table, columns)
            rebuilt = _rows(fresh, table, columns)
            if live != rebuilt:
                only_live = len(set(live) - set(rebuilt))
                only_rebuilt = len(set(rebuilt) - set(live))
                problems.append(f"{table}: {len(live)} live rows, {len(rebuilt)} rebuilt; "
                                f"{only_live} only live, {only_rebuilt} only rebuilt")
        fresh.close()
        return problems


# The seq every projection has folded up to (NULL before any position is recorded), as a scalar
# subquery a reader can put beside others in one statement.
FOLDED_TO = "(SELECT MIN(seq) FROM projection_positions)"


def _rows(conn: sqlite3.Connection, table: str, columns: str) -> list[tuple]:
    return sorted(map(tuple, conn.execute(f"SELECT {columns} FROM {table}").fetchall()), key=repr)


def _drop_deferred_indexes(conn: sqlite3.Connection, names: tuple[str, ...] = DEFERRED_INDEXES) -> list[str]:
    """Drop the named indexes (inside the caller's transaction); returns the DDL to rebuild them."""
    marks = ", ".join("?" for _ in names)
    found = conn.execute(f"SELECT name, sql FROM sqlite_master WHERE type = 'index' AND name IN ({marks})",
                         names).fetchall()
    for name, _sql in found:
        conn.execute(f"DROP INDEX {name}")
    return [sql for _name, sql in found]


class RowBuffer:
    """Stands in for the connection's `executemany` in `rebuild_partition`: rows are gathered per
    statement across partitions and written a few thousand at a time (most partitions are a
    handful of rows).  Each table is written by one projection only, so the order of rows within
    a table is unchanged; the per-event projections write their own tables directly.  Statements
    are written in the order the buffer first saw them, at every flush: one that copies rows
    from a table inside SQL (facts_current from fact_history, the recall index from
    facts_current) is first handed over after the one that fills that table."""

    LIMIT = 20_000

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.pending: dict[str, list] = {}
        self.size = 0
        self.once: dict = {}             # the rebuild-wide state of the projections (`base.REBUILD`)
        # statement -> what makes its rows of the rows it was handed, when they are written (the
        # recall index's terms: the texts of thousands of facts cut in one pass, not a few a partition)
        self.finish: dict[str, Callable[[list], list]] = {}

    def executemany(self, sql: str, rows) -> None:
        pending = self.pending.get(sql)
        if pending is None:
            pending = self.pending[sql] = []
        before = len(pending)
        pending.extend(rows)
        self.size += len(pending) - before
        if self.size >= self.LIMIT:
            self.flush()

    def flush(self) -> None:
        for sql, rows in self.pending.items():
            if rows:
                finish = self.finish.get(sql)
                self.conn.executemany(sql, rows if finish is None else finish(rows))
                rows.clear()
        self.size = 0

