"""A full rebuild folded by worker processes (`replay --jobs N`); the parent writes and commits once.

Every partitioned projection is a pure fold of one `(app, user)` partition, so partitions can be
folded anywhere; only writing them is the parent's.  What runs where (docs/decisions.md,
"Parallel replay"):

- the log is cut into shares: runs of whole partitions in `(app, user)` order, a few per worker
  so a slow share does not leave the other workers idle;
- each worker opens its own read-only connection to the log (SQLite `mode=ro`, a read-only
  PostgreSQL session), reads a share with one index range scan up to the head the parent holds,
  and folds it with the one-process rebuild's own code (`Projector.fold_partition`): the batch
  folds' rows are kept as the statements they would have run, the per-event projections fold
  into an in-memory SQLite copy of their tables, read back as rows;
- one worker task folds the Merkle tree, which is log-wide (every chain hash in seq order), into
  memory the same way, beside the shares;
- the parent holds the write transaction throughout: it clears the tables, writes the shares'
  rows in share order (each table gets its rows in the order a one-process rebuild writes them),
  then the tree, the deferred indexes and the position, and commits once.  A worker that raises
  or dies fails the replay with a `LedgerError` and the transaction rolls back: nothing is
  half-written.
"""

from __future__ import annotations

import marshal
import multiprocessing
import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from factledger.ledger.errors import LedgerError
from factledger.ledger.store.engines import engine_for
from factledger.ledger.store.reads import iter_partition_range, partition_sizes
from factledger.ledger.vocabulary.clock import system_clock

SHARES_PER_JOB = 8          # shares per worker: small enough to balance, large enough to batch
MIN_SHARE = 2_000           # events; below this a share costs more in messages than it saves

# What a share sends back: events folded, the batch folds' statements and rows (in first-run
# order), and each per-event table's columns and rows (in the order they were written).  They
# cross as one `marshal` blob: rows are tuples of str, int, float, bytes and None, which marshal
# writes and reads about twice as fast as pickle (parent and workers are one interpreter).
Folded = tuple[int, dict[str, list], list[tuple[str, tuple[str, ...], list]]]


def plan(conn: sqlite3.Connection, upto: int, jobs: int) -> list[tuple[tuple[str, str], tuple[str, str], int]]:
    """The shares of the log up to seq `upto`: (first partition, last partition, events), each a
    run of whole partitions in `(app, user)` order of about the same number of events."""
    sizes = partition_sizes(conn, upto)
    total = sum(n for _app, _user, n in sizes)
    target = max(MIN_SHARE, -(-total // (jobs * SHARES_PER_JOB)))
    shares, first, held = [], None, 0
    for app, user, n in sizes:
        if first is None:
            first = (app, user)
        held += n
        if held >= target:
            shares.append((first, (app, user), held))
            first, held = None, 0
    if first is not None:
        shares.append((first, sizes[-1][:2], held))
    return shares


class Workers:
    """The worker processes of one rebuild, started before the parent clears anything (they
    import while it does) and stopped however the rebuild ends."""

    def __init__(self, location: str, jobs: int, upto: int, projector: type):
        if location == ":memory:":
            raise LedgerError("a ledger in memory cannot be replayed with --jobs above 1 "
                              "(worker processes read the log from a file or a server)")
        self.upto = upto
        # spawn, not fork: the parent holds a database connection (and, on SQLite, a checkpoint
        # thread) that a forked child must never share
        self.pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=_start, initargs=(location, projector))
        self.window = jobs * 2              # shares in flight: bounds what the parent holds unwritten

    def folded(self, shares: list, progress: Callable[[int], None] | None = None) -> Iterator[Folded]:
        """Each share's rows, in share order, as soon as that share is folded."""
        pending: list[Future] = []
        todo = iter(shares)
        try:
            for first, last, _n in todo:
                pending.append(self.pool.submit(_fold_share, first, last, self.upto))
                if len(pending) >= self.window:
                    break
            while pending:
                folded = marshal.loads(result(pending.pop(0)))
                nxt = next(todo, None)
                if nxt is not None:
                    pending.append(self.pool.submit(_fold_share, nxt[0], nxt[1], self.upto))
                yield folded
                if progress:
                    progress(folded[0])
        finally:
            for future in pending:
                future.cancel()

    def log_wide(self) -> Future:
        """The log-wide projections' rows, folded by a worker beside the shares."""
        return self.pool.submit(_fold_log_wide, self.upto)

    def close(self, failed: bool = False) -> None:
        """Stop the workers; after a failure, kill the ones still alive first.

        Why kill: when a worker dies, CPython's pool (3.11) marks itself broken and terminates the
        workers it holds without the lock a `submit` holds while it spawns one, so a worker
        spawned in that instant is never terminated; it runs its share, blocks sending rows no one
        reads, and `shutdown(wait=True)` waits on it forever.  Only this thread spawns workers,
        so every one of them is in the pool's table by now."""
        if failed:
            for process in list(self.pool._processes.values()):
                if process.is_alive():
                    process.kill()
        self.pool.shutdown(wait=True, cancel_futures=True)


def log_wide_rows(future: Future) -> list[tuple[str, tuple[str, ...], list]]:
    """The log-wide tables' rows, once their worker task is done."""
    return marshal.loads(result(future))


def result(future: Future):
    """A worker task's answer; a worker that died is a `LedgerError` too."""
    try:
        return future.result()
    except BrokenProcessPool:
        raise LedgerError("a replay worker process died before it finished (killed, or out of "
                          "memory); nothing was written") from None


# In each worker process: its own read-only connection and projector, for every task it runs.
_reader = None
_projector = None


def _start(location: str, projector: type) -> None:
    """`projector`: the parent's `Projector` class (handed over, not imported: the runner imports
    this module), so a worker folds with exactly the projections the parent's rebuild names."""
    global _reader, _projector
    _reader = engine_for(location).open(location, system_clock, create=False, read_only=True).conn
    _projector = projector()


def _scratch() -> sqlite3.Connection:
    """An in-memory copy of the projections' tables, for the folds that write as they go."""
    scratch = sqlite3.connect(":memory:", isolation_level=None)
    _projector.create(scratch)
    return scratch


def _fold_share(first: tuple[str, str], last: tuple[str, str], upto: int) -> bytes:
    try:
        scratch = _scratch()
        count, statements = _projector.fold_apart(scratch, iter_partition_range(_reader, first, last, upto))
        tables = [_dump(scratch, table) for table in _projector.event_tables]
        scratch.close()
        return marshal.dumps((count, statements, tables))
    except Exception as exc:
        raise _failed(exc) from None


def _fold_log_wide(upto: int) -> bytes:
    try:
        scratch = _scratch()
        for projection in _projector.log_wide:
            projection.rebuild(scratch, _reader, upto)
        tables = [_dump(scratch, table) for p in _projector.log_wide for table in p.tables]
        scratch.close()
        return marshal.dumps(tables)
    except Exception as exc:
        raise _failed(exc) from None


def _failed(exc: Exception) -> LedgerError:
    """What crosses back to the parent: a plain `LedgerError` with the worker's words (an
    exception of another class may not survive the trip)."""
    if isinstance(exc, LedgerError):
        return LedgerError(f"a replay worker failed: {exc}")
    return LedgerError(f"a replay worker failed: {type(exc).__name__}: {exc}")


def _dump(scratch: sqlite3.Connection, table: str) -> tuple[str, tuple[str, ...], list]:
    cursor = scratch.execute(f"SELECT * FROM {table} ORDER BY rowid")
    return table, tuple(d[0] for d in cursor.description), cursor.fetchall()


def write_rows(conn: sqlite3.Connection, tables: list[tuple[str, tuple[str, ...], list]]) -> None:
    """Write dumped tables' rows into the parent's (cleared) tables, in the order they came.
    `INSERT OR IGNORE`: a key spanning partitions (a forgotten scope) keeps its first row, as the
    one-process fold's `INSERT OR IGNORE` does."""
    for table, columns, rows in tables:
        if rows:
            conn.executemany(f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) "
                             f"VALUES ({', '.join('?' for _ in columns)})", rows)
