"""SQLite's own check of the log's pages, for `verify` (`ledger/audit/verify.py`).

`integrity_check`, not `quick_check`: only the full check compares every index with its table (a
damaged index page of the event_id index passes quick_check).  Of the log only: the events table
and its indexes, which is what the chain vouches for.  The projections are checked by
`replay --check` (a rebuild compared row by row), and a whole-file check was most of verify's
time (docs/performance.md, docs/security.md).  It runs on a second connection in a thread while
verify walks the chain on the caller's (SQLite works without the GIL, so the two overlap); a
problem it finds is reported first, as if it had run first.
"""

from __future__ import annotations

import sqlite3
import threading
from urllib.parse import quote

_RETRY = "retry on the caller's connection"


class IntegrityCheck:
    """`PRAGMA integrity_check(events)`: on a read-only connection of its own in a thread when
    the ledger is a file and nothing is uncommitted (a second connection would not see what the
    caller's open transaction wrote, say an import being checked before its commit); otherwise,
    or when that connection cannot open or read the file, on the caller's connection at
    `result()`."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn
        self._problem: str | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        path = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
        if not path or conn.in_transaction:
            return
        try:
            other = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, check_same_thread=False)
        except sqlite3.Error:
            return
        self._thread = threading.Thread(target=self._in_thread, args=(other,), daemon=True)
        try:
            self._thread.start()
        except RuntimeError:                   # no thread to be had: check at result()
            self._thread = None
            other.close()

    def _in_thread(self, other: sqlite3.Connection) -> None:
        try:
            self._problem = _check(other, retry_elsewhere=True)
        except sqlite3.OperationalError:      # could not run there (locked, unreadable): see result()
            self._problem = _RETRY
        except BaseException as exc:           # noqa: BLE001 - handed to the caller in result()
            self._error = exc
        finally:
            other.close()

    def result(self) -> str | None:
        """The problem found (None when the log's pages are sound)."""
        if self._thread is not None:
            self._thread.join()
            if self._error is not None:
                raise self._error
            if self._problem is not _RETRY:
                return self._problem
        return _check(self._conn)


def _check(conn: sqlite3.Connection, retry_elsewhere: bool = False) -> str | None:
    try:
        rows = [row[0] for row in conn.execute("PRAGMA integrity_check(events)")]
    except sqlite3.DatabaseError as exc:
        if retry_elsewhere and isinstance(exc, sqlite3.OperationalError):
            raise                              # locked or unopenable here, not damage
        return f"SQLite integrity check failed: {exc}"
    return None if rows == ["ok"] else "SQLite integrity check failed: " + "; ".join(rows)
