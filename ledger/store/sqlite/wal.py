"""WAL checkpoints, mostly on a thread of their own, so a commit seldom waits for one.

SQLite's autocheckpoint made the commit that pushed the WAL past 1,000 pages copy and fsync it
before returning (the single-observation p99 of docs/performance.md).  Here autocheckpoint is off
and every commit wakes a thread that runs a PASSIVE checkpoint, which never blocks; a commit is
as durable as before.  So that a steady writer does not grow the WAL without end, the writer
itself runs a PASSIVE checkpoint before its next transaction once the WAL passes
`RESTART_FRAMES`, and waits for the thread only past four times that.  The thread ends after
`IDLE_SECONDS` idle; a failed checkpoint is left for a later one; a thread that cannot start
gives the writer its autocheckpoint back; `exclusive()` keeps it out of forget's TRUNCATE.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

IDLE_SECONDS = 2.0
MIN_INTERVAL = 0.05     # at most twenty background checkpoints a second, however often commits come
RESTART_FRAMES = 8000   # the WAL size (pages) past which the writer finishes a checkpoint itself


class WalCheckpointer:
    """The checkpoints of one ledger connection (see the module docstring)."""

    def __init__(self, conn: sqlite3.Connection, synchronous: str = "FULL"):
        self._writer = conn
        self._synchronous = synchronous
        # The file the writer has open, by absolute path, opened read-write only: a relative path
        # would name another file after a chdir, and a plain connect would create it.
        path = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
        self._uri = f"file:{quote(path)}?mode=rw" if path else ""
        self.wal_frames = 0                   # the WAL's length at the last checkpoint
        self._given_back = False              # autocheckpoint restored on the writer
        self._fork_safe()

    def _fork_safe(self) -> None:
        """Fresh locks and no thread: also what a forked child must start from."""
        self._pid = os.getpid()
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._lock = threading.Lock()         # one checkpoint at a time from this ledger
        self._start = threading.Lock()
        self._thread: threading.Thread | None = None

    @staticmethod
    def applies_to(path: str) -> bool:
        return path not in ("", ":memory:") and not path.startswith("file:")

    def take_over(self) -> None:
        """Turn the writer's own autocheckpoint off: from now on checkpoints happen here.  The WAL
        file is cut back to RESTART_FRAMES pages when it starts over (it would keep its peak)."""
        page = self._writer.execute("PRAGMA page_size").fetchone()[0]
        self._writer.execute(f"PRAGMA journal_size_limit = {RESTART_FRAMES * page}")
        self._writer.execute("PRAGMA wal_autocheckpoint = 0")

    def _give_back(self) -> None:
        """No thread can do the job: SQLite's autocheckpoint again.  Called in the writer's
        thread only (the checkpoint thread just clears `_uri`, and the writer's next
        `before_begin` calls this): one connection is never used by two threads at once."""
        self._uri = ""
        self._given_back = True
        self._writer.execute("PRAGMA wal_autocheckpoint = 1000")

    def before_begin(self, conn: sqlite3.Connection) -> None:
        """Called by the writer before BEGIN: let the WAL start over once it is long."""
        if os.getpid() != self._pid:
            self._fork_safe()
        if not self._uri and not self._given_back:
            self._give_back()
        if self.wal_frames <= RESTART_FRAMES:
            return
        if self._lock.acquire(blocking=self.wal_frames > 4 * RESTART_FRAMES):
            try:
                self._checkpoint(conn)
            finally:
                self._lock.release()

    def after_commit(self) -> None:
        """Called by the writer after COMMIT returns: wake the thread (start it if need be)."""
        if self._closed.is_set() or not self._uri:
            return
        if os.getpid() != self._pid:
            self._fork_safe()
        with self._start:
            self._wake.set()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="factledger-checkpoint",
                                                daemon=True)
                try:
                    self._thread.start()
                except Exception:                  # no thread to be had: checkpoint as SQLite does
                    self._thread = None
                    self._uri = ""                 # the writer's next BEGIN gives it back

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
            busy, log, _done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error:
            return                                 # retried after a later commit
        if not busy and log >= 0:
            self.wal_frames = log

    def _run(self) -> None:
        conn = None
        try:
            conn = sqlite3.connect(self._uri, uri=True, isolation_level=None,
                                   check_same_thread=False)
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        except Exception:
            if conn is not None:
                conn.close()
            with self._start:
                self._thread = None
                self._uri = ""                     # the writer gives autocheckpoint back
            return
        try:
            while True:
                if not self._wake.wait(IDLE_SECONDS):
                    with self._start:
                        if not self._wake.is_set():
                            # Idle: let go of `_thread` under the lock, so a commit after this
                            # starts a new thread and none falls between the two.
                            conn.close()
                            conn = None
                            self._thread = None
                            return
                if self._closed.is_set():
                    return
                self._wake.clear()
                with self._lock:
                    self._checkpoint(conn)
                # Throttle: commits during the pause are covered by the next checkpoint.
                if self._closed.wait(MIN_INTERVAL):
                    return
        finally:
            if conn is not None:
                conn.close()                       # before `_thread` lets go: close() waits for it
                with self._start:
                    if self._thread is threading.current_thread():
                        self._thread = None
