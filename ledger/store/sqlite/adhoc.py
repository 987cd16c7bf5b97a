"""Ad-hoc read-only SQL over a ledger file (`factledger query`, through `ledger/audit/query.py`).

Three locks, so no statement can change the file: the file is opened read-only (a `mode=ro` URI,
never through `Ledger`, whose open may repair the schema), `query_only` is on, and an authorizer
allows reading and nothing else (no write, no DDL, no ATTACH, no pragma that sets a value).  A
refused statement is a `LedgerError`: the CLI's `Error: ...` and exit 1, the file untouched.
"""

from __future__ import annotations

import base64
import sqlite3
from pathlib import Path
from urllib.parse import quote

import sqlite_utils

from factledger.ledger.errors import LedgerError

# Reading, and the savepoint sqlite-utils 4 wraps each query in (a savepoint writes nothing).
_READING = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
            getattr(sqlite3, "SQLITE_RECURSIVE", 33), sqlite3.SQLITE_SAVEPOINT}


def _authorize(action: int, arg1, arg2, _db, _trigger) -> int:
    if action in _READING:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and arg2 is None:
        return sqlite3.SQLITE_OK          # reading a pragma (table_info, index_list, ...)
    return sqlite3.SQLITE_DENY


def _value(value):
    """Blobs (the salts) as sqlite-utils writes them in JSON; everything else as it is."""
    if isinstance(value, bytes):
        return {"$base64": True, "encoded": base64.b64encode(value).decode()}
    return value


def query(path: str | Path, sql: str, params: dict | None = None) -> list[dict]:
    """The rows of one read-only statement, as dicts; refuses anything that writes."""
    path = Path(path)
    if not path.exists():
        raise LedgerError(f"no ledger at {path}")
    try:
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)
    except sqlite3.DatabaseError as exc:
        raise LedgerError(f"cannot open ledger {path} read-only: {exc}") from None
    try:
        conn.execute("PRAGMA query_only = ON")
        conn.set_authorizer(_authorize)
        db = sqlite_utils.Database(conn, recursive_triggers=False, execute_plugins=False)
        try:
            return [{k: _value(v) for k, v in row.items()} for row in db.query(sql, params or {})]
        except sqlite3.DatabaseError as exc:
            text = str(exc)
            if "not authorized" in text or "readonly" in text or "read-only" in text:
                raise LedgerError("query is read-only: this statement would change the ledger "
                                  f"({text}); nothing was changed") from None
            raise LedgerError(f"query failed: {text}") from None
        except (sqlite3.ProgrammingError, ValueError) as exc:
            if "returns rows" in str(exc):        # sqlite-utils' words for ATTACH, VACUUM, BEGIN ...
                raise LedgerError("query runs one statement that returns rows (SELECT, WITH, a PRAGMA "
                                  "that reads); this one returns none (ATTACH, DETACH, VACUUM, BEGIN, ...) "
                                  "and is refused; nothing was changed") from None
            raise LedgerError(f"query failed: {exc}") from None
    finally:
        conn.close()
