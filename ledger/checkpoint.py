"""WAL checkpoints, mostly on a thread of their own, so a commit seldom waits for one.

With SQLite's autocheckpoint, the commit that pushes the WAL past 1,000 pages copies the WAL into
the database file and fsyncs it before it returns: one single-candidate observation in about a
hundred paid ~5-10 ms for that (the `observe_single_p99_ms` of docs/performance.md).  Here the
ledger's connection has autocheckpoint off, and every commit wakes this thread, which runs a
PASSIVE checkpoint on its own connection: PASSIVE never blocks a writer or a reader and never
waits.  The durability of a commit does not change: it is durable when its WAL frames are synced,
before this thread is woken.

A background checkpoint alone would let the WAL grow without end under a steady writer: SQLite
starts the WAL over only when a write transaction begins after a checkpoint has copied all of
it, and a steady writer always begins again before the thread is done.  So once the WAL has
passed `RESTART_FRAMES`, the writer runs one PASSIVE checkpoint itself just before it begins its
next transaction: by then the thread has had the time between the two transactions to copy the
last one, so this usually copies a few pages and syncs, and the transaction starts the WAL over.
If the thread is still copying, the writer does not wait for it, unless the WAL has passed four
times `RESTART_FRAMES` (a writer with no pause at all): then it waits, and finishes the job.

The thread starts on the first commit and ends after `IDLE_SECONDS` without one (a ledger a
script forgets to close leaves no thread behind for long); `close` stops it and waits for a
checkpoint in progress (the connection's own close checkpoints what is left when it is the last
one).  A checkpoint that fails (a full disk, a read-only file) is left for a later commit, or for
the checkpoint SQLite runs when the last connection closes.  `exclusive()` keeps this thread out
while the caller runs a checkpoint of its own (forget's TRUNCATE).
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from typing import Iterator

IDLE_SECONDS = 2.0
MIN_INTERVAL = 0.05     # at most twenty background checkpoints a second, however often commits come
RESTART_FRAMES = 8000   # the WAL size (pages) past which the writer finishes a checkpoint itself


class Checkpointer:
    def __init__(self, path: str):
        self.path = path
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._lock = threading.Lock()         # one checkpoint at a time from this process
        self._start = threading.Lock()
        self._thread: threading.Thread | None = None
        self.wal_frames = 0                   # the WAL's length at the last checkpoint

    @staticmethod
    def applies_to(path: str) -> bool:
        return path != ":memory:" and not path.startswith("file:")

    def take_over(self, conn: sqlite3.Connection) -> None:
        """Turn the writer's own autocheckpoint off: from now on checkpoints happen here."""
        conn.execute("PRAGMA wal_autocheckpoint = 0")

    def before_begin(self, conn: sqlite3.Connection) -> None:
        """Called by the writer before BEGIN: let the WAL start over once it is long."""
        if self.wal_frames <= RESTART_FRAMES:
            return
        if self._lock.acquire(blocking=self.wal_frames > 4 * RESTART_FRAMES):
            try:
                self._checkpoint(conn)
            finally:
                self._lock.release()

    def after_commit(self) -> None:
        """Called by the writer after COMMIT returns: wake the thread."""
        if self._closed.is_set():
            return
        self._wake.set()
        thread = self._thread
        if thread is None or not thread.is_alive():
            with self._start:
                if self._thread is None or not self._thread.is_alive():
                    self._thread = threading.Thread(target=self._run, name="factledger-checkpoint",
                                                    daemon=True)
                    self._thread.start()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._lock:
            yield

    def close(self) -> None:
        self._closed.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=30)

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        try:
            busy, log, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error:
            return                                 # retried after a later commit
        if not busy:
            self.wal_frames = log

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error:
            return
        try:
            while self._wake.wait(IDLE_SECONDS) and not self._closed.is_set():
                self._wake.clear()
                with self._lock:
                    self._checkpoint(conn)
                # Throttle: commits during the pause are covered by the next checkpoint.
                if self._closed.wait(MIN_INTERVAL):
                    break
        finally:
            conn.close()
