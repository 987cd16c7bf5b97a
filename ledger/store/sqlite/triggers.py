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

import orjson

from factledger.ledger.vocabulary.clock import Clock, iso

REPAIRS_KEY = "schema_repairs"
_TRIGGER = re.compile(r"CREATE TRIGGER IF NOT EXISTS (\w+)\b.*?\bEND;", re.S)


def _normal(sql: str) -> str:
    """A CREATE statement as SQLite stores it in sqlite_master (no IF NOT EXISTS), whitespace folded."""
    return " ".join(sql.replace(" IF NOT EXISTS", "").rstrip(";").split())


def expected(schema: str) -> dict[str, str]:
    """Each trigger the schema creates: name -> its statement, normalised."""
    return {m.group(1): _normal(m.group(0)) for m in _TRIGGER.finditer(schema)}


def present(conn: sqlite3.Connection) -> dict[str, str]:
    # sqlite_master read as sqlite-utils' `triggers_dict` reads it, without importing sqlite-utils
    # (and numpy, which it imports when installed) on every open (docs/performance.md)
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall()
    return {row[0]: _normal(row[1]) for row in rows}


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


def repair_problems(conn) -> list[str]:
    """Each repair recorded: the log was unprotected until then."""
    return [f"trigger {repair['name']} was missing until it was restored on open at {repair['restored_at']}"
            for repair in repairs(conn)]


def repairs(conn: sqlite3.Connection) -> list[dict]:
    try:
        row = conn.execute("SELECT value FROM ledger_meta WHERE key = ?", (REPAIRS_KEY,)).fetchone()
    except sqlite3.OperationalError:           # a file without ledger_meta has recorded nothing
        return []
    return orjson.loads(row[0]) if row else []


def record_repairs_sql(conn: sqlite3.Connection, names: list[str], clock: Clock) -> str:
    """The statement that adds the restored triggers to the record, for the script that restores
    them (one transaction: a trigger is never restored without its record)."""
    at = iso(clock())
    done = repairs(conn) + [{"name": name, "restored_at": at} for name in names]
    value = orjson.dumps(done).decode().replace("'", "''")
    return f"INSERT OR REPLACE INTO ledger_meta (key, value) VALUES ('{REPAIRS_KEY}', '{value}');"
