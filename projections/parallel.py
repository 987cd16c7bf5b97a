"""A full rebuild folded by worker processes (`replay --jobs N`); the parent writes and commits once.

Every partitioned projection is a pure fold of one `(app, user)` partition, so partitions are
folded in spawned workers, in shares of whole partitions (finer at the tail, `plan`), each read
through the worker's own read-only connection and sent back as an in-memory SQLite image; one
task folds the log-wide Merkle tree.  The parent holds the write transaction throughout, writes
the images in share order (`Engine.image_loader`) and commits once.  A worker that raises or dies
fails the replay with a `LedgerError`, the others are killed and nothing is written; each worker
has its own pipe and dies with the parent.  Why each choice: docs/decisions.md, "Parallel replay"
and "Replay workers that die".
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import pickle
import signal
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import suppress
from multiprocessing import connection

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
    """The worker processes of one rebuild, each with a pipe of its own, handed tasks one at a
    time as they finish the last, and stopped however the rebuild ends (docs/decisions.md,
    "Replay workers that die").

    Why not a `ProcessPoolExecutor`: its workers share one result pipe whose write end the
    parent holds too, so a worker killed halfway through sending an image (one message of
    megabytes) left the pool's thread waiting for the rest forever, with the write lock held.
    Here only the worker holds the write end of its pipe: its death is an end of file in the
    middle of the message, and `connection.wait` on the process sentinels sees a death between
    messages.  A worker dies with the parent too (`_start`)."""

    def __init__(self, location: str, jobs: int, upto: int, projector: type, shares: list):
        if location == ":memory:":
            raise LedgerError("a ledger in memory cannot be replayed with --jobs above 1 "
                              "(worker processes read the log from a file or a server)")
        self.upto, self.jobs = upto, jobs
        self.shares = shares
        self.results: dict = {}           # share index (or LOG_WIDE) -> what came back, not yet taken
        self.sent = 0                     # shares handed out so far (in share order)
        self.taken = 0                    # shares `folded` has yielded
        self.log_wide_sent = False
        self.workers: list[_Worker] = []
        try:
            # spawn, not fork: the parent holds a database connection (and, on SQLite, a
            # checkpoint thread) that a forked child must never share
            context = multiprocessing.get_context("spawn")
            for _ in range(jobs):
                self.workers.append(_Worker(context, location, projector))
            # The tasks go in now, the log-wide fold (the longest single task) first, so the
            # workers fold while the parent clears the tables (on SQLite, zeroing every freed
            # page: seconds on a large ledger).  Workers read only the log, which the parent's
            # lock keeps still.
            self._hand_out()
        except BaseException:
            self.close()
            raise

    def _hand_out(self) -> None:
        """Give each idle worker its next task: the log-wide fold first, then the shares in
        order, at most `2 x jobs` shares ahead of what the parent has taken (which bounds the
        images it holds unwritten)."""
        for worker in self.workers:
            if worker.task is not None:
                continue
            if not self.log_wide_sent:
                worker.give(LOG_WIDE, ("log_wide", self.upto))
                self.log_wide_sent = True
            elif self.sent < len(self.shares) and self.sent < self.taken + 2 * self.jobs:
                first, last, _n = self.shares[self.sent]
                worker.give(self.sent, ("share", first, last, self.upto))
                self.sent += 1

    def _receive(self, timeout: float | None = None) -> None:
        """Wait (up to `timeout`; None: until one arrives) for answers, store them and hand out
        more work; a worker that died, at any moment, is a `LedgerError` here."""
        busy = {worker.conn: worker for worker in self.workers if worker.task is not None}
        deaths = {worker.process.sentinel: worker for worker in self.workers}
        ready = connection.wait([*busy, *deaths], timeout)
        for conn in ready:
            if conn in busy:
                worker = busy[conn]
                task, answer = worker.task, worker.answer()
                self.results[task] = answer
        if any(sentinel in deaths for sentinel in ready):
            raise _died()
        self._hand_out()

    def folded(self, progress: Callable[[int], None] | None = None) -> Iterator[Folded]:
        """Each share's image, in share order, as soon as that share is folded."""
        while self.taken < len(self.shares):
            while self.taken not in self.results:
                self._receive()
            folded = self.results.pop(self.taken)
            self.taken += 1
            self._hand_out()
            yield folded
            if progress:
                progress(folded[0])

    def log_wide_ready(self) -> bool:
        """Whether the log-wide fold has ended (its image can be read without waiting)."""
        if LOG_WIDE not in self.results:
            self._receive(0)
        return LOG_WIDE in self.results

    def log_wide_image(self) -> bytes:
        """The log-wide projections' tables, folded by a worker beside the shares."""
        while LOG_WIDE not in self.results:
            self._receive()
        return self.results.pop(LOG_WIDE)[1]

    def close(self) -> None:
        """Stop the workers, however the rebuild ended: an idle worker is told to stop, a busy
        or unanswering one is killed (its pipe is its own: nothing waits on the rest of a
        message it was sending), and each is waited for, so none outlives the rebuild."""
        for worker in self.workers:
            worker.stop()
        self.results.clear()


LOG_WIDE = "log-wide"


class _Worker:
    """One worker process and the parent's end of its pipe."""

    def __init__(self, context, location: str, projector: type):
        self.task = None                  # what it is folding (a share index or LOG_WIDE), or None
        self.conn, theirs = context.Pipe(duplex=True)
        try:
            self.process = context.Process(target=_serve, args=(theirs, location, projector, os.getpid()),
                                           name="factledger-replay-worker", daemon=True)
            self.process.start()
        finally:
            theirs.close()                # only the worker holds its end now: its death is an EOF here

    def give(self, task, message: tuple) -> None:
        try:
            self.conn.send(message)
        except OSError:                   # its end is closed: it died
            raise _died() from None
        self.task = task

    def answer(self) -> Folded:
        """Read the answer to its task (the conn is readable); an end of file before or inside
        a message is a death."""
        try:
            status, value = self.conn.recv()
            if status != "ok":
                raise LedgerError(value)
            image = self.conn.recv_bytes()
        except (EOFError, OSError, pickle.UnpicklingError):
            raise _died() from None
        self.task = None
        return value, image

    def stop(self) -> None:
        process = self.process
        if process.is_alive():
            if self.task is None:
                with suppress(OSError):
                    self.conn.send(None)
                process.join(STOP_WAIT)
            if process.is_alive():
                process.kill()
            process.join()
        self.conn.close()
        process.close()


STOP_WAIT = 5.0      # seconds an idle worker is given to leave on its own before it is killed


def _died() -> LedgerError:
    return LedgerError("a replay worker process died before it finished (killed, or out of "
                       "memory); nothing was written")


# In each worker process: its own read-only connection and projector, for every task it runs.
_reader = None
_projector = None
PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Ask Linux to kill this process when the parent dies (the parent-death signal), and leave
    at once if it has died already.  Elsewhere the pipe is the watch: a worker between tasks
    reads EOF when the parent is gone, and one folding finds out when it sends."""
    if sys.platform.startswith("linux"):
        with suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _serve(conn, location: str, projector: type, parent: int) -> None:
    """A worker's life: die with the parent, open the log, then fold each task the parent sends
    and send back ("ok", count) and the image, or ("error", words), until told to stop (None)
    or the parent's end is gone."""
    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # Ctrl-C is the parent's to act on
    opened = None
    try:
        _start(location, projector)
    except Exception as exc:
        opened = _failed(exc)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        try:
            if opened is not None:
                raise opened
            if task[0] == "share":
                count, image = _fold_share(*task[1:])
            else:
                count, image = 0, _fold_log_wide(*task[1:])
        except LedgerError as exc:
            answer = ("error", str(exc))
        else:
            answer = ("ok", count)
        try:
            conn.send(answer)
            if answer[0] == "ok":
                conn.send_bytes(image)
                del image
        except OSError:
            return


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
