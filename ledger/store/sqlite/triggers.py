"""The triggers that make the log append-only, as the file has them (read from sqlite_master).

The triggers are a protection, not a proof: the chain proves, and the triggers keep a buggy
caller from rewriting history.  So a file whose trigger is missing or differs from this
version's is never passed over in silence: on open a missing trigger is created again and the
repair is recorded in `ledger_meta` (`schema_repairs`), and `verify` names every trigger that is
missing or altered now, and every repair recorded (the log was unprotected until then).
"""

from __future__ import annotations

import re
import sqlite3

from factledger.ledger.store.repairs import REPAIRS_KEY, record_repairs_sql, repair_problems, repairs

__all__ = ["REPAIRS_KEY", "expected", "missing", "present", "problems", "record_repairs_sql",
           "repair_problems", "repairs"]
_TRIGGER = re.compile(r"CREATE TRIGGER IF NOT EXISTS (\w+)\b.*?\bEND;", re.S)


def normal(sql: str) -> str:
    """A CREATE statement as SQLite stores it in sqlite_master (no IF NOT EXISTS), whitespace folded."""
    return " ".join(sql.replace(" IF NOT EXISTS", "").rstrip(";").split())


def expected(schema: str) -> dict[str, str]:
    """Each trigger the schema creates: name -> its statement, normalised."""
    return {m.group(1): normal(m.group(0)) for m in _TRIGGER.finditer(schema)}


def present(conn: sqlite3.Connection) -> dict[str, str]:
    # sqlite_master read as sqlite-utils' `triggers_dict` reads it, without importing sqlite-utils
    # (and numpy, which it imports when installed) on every open (docs/performance.md)
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall()
    return {row[0]: normal(row[1]) for row in rows}


def missing(conn: sqlite3.Connection, schema: str) -> list[str]:
    found = present(conn)
    return sorted(name for name in expected(schema) if name not in found)


def problems(conn: sqlite3.Connection, schema: str) -> list[str]:
    """Each trigger missing or altered now, and each repair recorded; [] when all is as written."""
    found = present(conn)
    out = []
    for name, sql in expected(schema).items():
        if name not in found:
            out.append(f"trigger {name} is missing")
        elif found[name] != sql:
            out.append(f"trigger {name} is altered")
    return out + repair_problems(conn)
