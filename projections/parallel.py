"""A full rebuild folded by worker processes (`replay --jobs N`); the parent writes and commits once.

Every partitioned projection is a pure fold of one `(app, user)` partition, so partitions can be
folded anywhere; only writing them is the parent's.  What runs where (docs/decisions.md,
"Parallel replay"):

- the log is cut into shares: runs of whole partitions in `(app, user)` order, a few per worker
  so a slow share does not leave the other workers idle, and smaller at the end so the workers
  finish together and little is left to copy after the last fold (`plan`);
- each worker opens its own read-only connection to the log (`Engine.scan_reader`: SQLite
  `mode=ro` with the file memory-mapped, a read-only PostgreSQL session), reads a share with
  one index range scan up to the head the parent holds, and folds it with the one-process
  rebuild's own code (`Projector.fold_partition`) into an in-memory SQLite copy of the
  projections' tables, which it sends back whole as an image (`Connection.serialize()`: one
  copy of memory, however many rows);
- one worker task folds the Merkle tree, which is log-wide (every chain hash in seq order), into
  memory the same way, beside the shares;
- the parent holds the write transaction throughout: it hands the workers their tasks, clears
  the tables while they fold, writes the shares' images in share order (each table gets its
  rows in the order a one-process rebuild writes them; how is the engine's,
  `Engine.image_loader`: SQLite copies them inside the database) and the tree's between two
  shares once it is folded, then the deferred indexes and the position, and commits once.  A
  worker that raises or dies fails the replay with a `LedgerError` and the transaction rolls
  back: nothing is half-written.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from itertools import islice

from factledger.ledger.errors import LedgerError
from factledger.ledger.store.engines import engine_for
from factledger.ledger.store.reads import iter_partition_range, partition_sizes
from factledger.ledger.vocabulary.clock import system_clock

SHARES_PER_JOB = 8          # shares per worker: small enough to balance, large enough to batch
MIN_SHARE = 2_000           # events; below this a share costs more in messages than it saves
# Events; above it a ledger is cut into more shares, not larger ones.  The parent holds up to
# `2 x jobs` shares' images and each worker one, so this bounds their memory whatever the
# ledger's size: a 50,000-event share's image is about 55 MB on the bench's ledgers.
MAX_SHARE = 50_000
# The last `jobs` shares' worth of the log is cut this many times finer.  Whatever the parent
# still has to copy when the last fold ends is serial time, and so is a worker idle while the
# other folds a long last share; small shares at the end keep both to a fraction of a second
# (docs/performance.md, "Parallel replay").
TAIL_SPLIT = 4

# What a share sends back: how many events it folded, and the image of the in-memory database it
# folded them into (every partitioned table, rows in the order the folds wrote them).
Folded = tuple[int, bytes]


def plan(conn: sqlite3.Connection, upto: int, jobs: int) -> list[tuple[tuple[str, str], tuple[str, str], int]]:
    """The shares of the log up to seq `upto`: (first partition, last partition, events), each a
    run of whole partitions in `(app, user)` order of about the same number of events (at most
    MAX_SHARE, unless one partition holds more), and TAIL_SPLIT times smaller over the last
    `jobs` shares' worth of events."""
    sizes = partition_sizes(conn, upto)
    total = sum(n for _app, _user, n in sizes)
    target = min(MAX_SHARE, max(MIN_SHARE, -(-total // (jobs * SHARES_PER_JOB))))
    tail = max(MIN_SHARE, target // TAIL_SPLIT)
    shares, first, last, held, planned = [], None, None, 0, 0
    for app, user, n in sizes:
        if first is not None and held + n > MAX_SHARE:      # this partition would pass the bound
            shares.append((first, last, held))
            first, planned, held = None, planned + held, 0
        if first is None:
            first = (app, user)
        last = (app, user)
        held += n
        if held >= (target if total - planned > jobs * target else tail):
            shares.append((first, last, held))
            first, planned, held = None, planned + held, 0
    if first is not None:
        shares.append((first, last, held))
    return shares


class Workers:
    """The worker processes of one rebuild, handed the whole plan as they start (they fold while
    the parent clears the tables) and stopped however the rebuild ends."""

    def __init__(self, location: str, jobs: int, upto: int, projector: type, shares: list):
        if location == ":memory:":
            raise LedgerError("a ledger in memory cannot be replayed with --jobs above 1 "
                              "(worker processes read the log from a file or a server)")
        self.upto = upto
        # spawn, not fork: the parent holds a database connection (and, on SQLite, a checkpoint
        # thread) that a forked child must never share
        self.pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=_start, initargs=(location, projector))
        # Every worker started by the first `submit`, before the pool's manager thread runs, as a
        # fork pool starts them.  Left to start one per `submit` (CPython 3.11's way for spawned
        # workers), a worker that died while the next one was starting made the manager thread
        # iterate its table of processes as this thread added to it: a RuntimeError traceback on
        # stderr, and (issue 30's first hang) a worker the broken pool never terminated.
        self.pool._safe_to_dynamically_spawn_children = False
        # The tasks go in now, the log-wide fold (the longest single task) first, so the workers
        # start and fold while the parent clears the tables (on SQLite, zeroing every freed page:
        # seconds on a large ledger).  Workers read only the log, which the parent's lock keeps
        # still.
        try:
            self.log_wide = self._submit(_fold_log_wide, upto)
            self.todo = iter(shares)
            # shares in flight: bounds what the parent holds unwritten
            self.pending = [self._submit(_fold_share, first, last, upto)
                            for first, last, _n in islice(self.todo, jobs * 2)]
        except BaseException:
            self.close()
            raise

    def _submit(self, task: Callable, *args) -> Future:
        """Hand a task to the pool; a pool a dead worker broke is a `LedgerError` here too."""
        try:
            return self.pool.submit(task, *args)
        except BrokenProcessPool:
            raise _died() from None

    def folded(self, progress: Callable[[int], None] | None = None) -> Iterator[Folded]:
        """Each share's image, in share order, as soon as that share is folded."""
        try:
            while self.pending:
                folded = result(self.pending.pop(0))
                nxt = next(self.todo, None)
                if nxt is not None:
                    self.pending.append(self._submit(_fold_share, nxt[0], nxt[1], self.upto))
                yield folded
                if progress:
                    progress(folded[0])
        finally:
            for future in self.pending:
                future.cancel()

    def log_wide_ready(self) -> bool:
        """Whether the log-wide fold has ended (its image can be read without waiting)."""
        return self.log_wide.done()

    def log_wide_image(self) -> bytes:
        """The log-wide projections' tables, folded by a worker beside the shares."""
        return result(self.log_wide)

    def close(self) -> None:
        """Stop the workers, however the rebuild ended: tasks not started are cancelled, the ones
        running finish (a share takes seconds) and their answers are read and dropped.

        No worker is killed here.  A killed worker may be halfway through sending an image (one
        message of megabytes): the pool's thread, already reading it, then waits for the rest
        forever, since this process holds the pipe's other end too, and `shutdown` waits on that
        thread.  A pool a dead worker broke terminates the others itself, from that thread, which
        is then reading nothing.  (An earlier version killed the workers after any failure, for a
        worker the broken pool could miss while a `submit` started it; every worker now starts
        before any can die, `__init__`.)"""
        self.pool.shutdown(wait=True, cancel_futures=True)


def result(future: Future):
    """A worker task's answer; a worker that died is a `LedgerError` too."""
    try:
        return future.result()
    except BrokenProcessPool:
        raise _died() from None


def _died() -> LedgerError:
    return LedgerError("a replay worker process died before it finished (killed, or out of "
                       "memory); nothing was written")


# In each worker process: its own read-only connection and projector, for every task it runs.
_reader = None
_projector = None


def _start(location: str, projector: type) -> None:
    """`projector`: the parent's `Projector` class (handed over, not imported: the runner imports
    this module), so a worker folds with exactly the projections the parent's rebuild names."""
    global _reader, _projector
    _reader = engine_for(location).scan_reader(location, system_clock).conn
    _projector = projector()


def _scratch() -> sqlite3.Connection:
    """An in-memory copy of the projections' tables, without the indexes a rebuild defers (only
    the rows travel; the parent builds those indexes once, over every share)."""
    scratch = sqlite3.connect(":memory:", isolation_level=None)
    _projector.create(scratch)
    _projector.drop_deferred_indexes(scratch)
    scratch.execute("BEGIN")
    return scratch


def _image(scratch: sqlite3.Connection) -> bytes:
    scratch.execute("COMMIT")
    try:
        return scratch.serialize()
    finally:
        scratch.close()


def _fold_share(first: tuple[str, str], last: tuple[str, str], upto: int) -> Folded:
    try:
        scratch = _scratch()
        count = _projector.fold_into(scratch, iter_partition_range(_reader, first, last, upto))
        return count, _image(scratch)
    except Exception as exc:
        raise _failed(exc) from None


def _fold_log_wide(upto: int) -> bytes:
    try:
        scratch = _scratch()
        for projection in _projector.log_wide:
            projection.rebuild(scratch, _reader, upto)
        return _image(scratch)
    except Exception as exc:
        raise _failed(exc) from None


def _failed(exc: Exception) -> LedgerError:
    """What crosses back to the parent: a plain `LedgerError` with the worker's words (an
    exception of another class may not survive the trip)."""
    if isinstance(exc, LedgerError):
        return LedgerError(f"a replay worker failed: {exc}")
    return LedgerError(f"a replay worker failed: {type(exc).__name__}: {exc}")
