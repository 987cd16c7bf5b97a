"""The record of guard triggers restored on open, and what opening changed: the same on every engine.

A missing guard trigger is created again when the ledger opens, and the repair is recorded in
`ledger_meta` (`schema_repairs`) in the transaction that restores it; `verify` names every repair
recorded (the log was unprotected until then).  Each engine finds its missing triggers its own
way (`ledger/store/sqlite/triggers.py`, `ledger/store/postgres/backend.py`); the record and the
report are written once, here.
"""

from __future__ import annotations

import warnings
from contextlib import suppress

import orjson

from factledger.ledger.errors import StorageError
from factledger.ledger.store.backend import ProjectionTables
from factledger.ledger.store.errors import storage_errors
from factledger.ledger.vocabulary.clock import Clock, iso

REPAIRS_KEY = "schema_repairs"


def repair_problems(conn) -> list[str]:
    """Each repair recorded: the log was unprotected until then."""
    return [f"trigger {repair['name']} was missing until it was restored on open at {repair['restored_at']}"
            for repair in repairs(conn)]


def repairs(conn) -> list[dict]:
    row = None
    with suppress(StorageError), storage_errors():   # a ledger without ledger_meta has recorded nothing
        row = conn.execute("SELECT value FROM ledger_meta WHERE key = ?", (REPAIRS_KEY,)).fetchone()
    return orjson.loads(row[0]) if row else []


def record_repairs_sql(conn, names: list[str], clock: Clock) -> str:
    """The statement that adds the restored triggers to the record, for the script that restores
    them (one transaction: a trigger is never restored without its record)."""
    at = iso(clock())
    done = repairs(conn) + [{"name": name, "restored_at": at} for name in names]
    value = orjson.dumps(done).decode().replace("'", "''")
    return f"INSERT OR REPLACE INTO ledger_meta (key, value) VALUES ('{REPAIRS_KEY}', '{value}');"


def repaired(tables: set[str], present_tables: set[str], built_indexes: set[str], restored_triggers: list[str],
             projector: ProjectionTables) -> tuple[bool, list[str]]:
    """(refold, report) once the schema is whole, for either engine: each index built or trigger
    restored on a ledger that already had its tables is said (a warning at the opener's line), and
    projection tables new beside an existing log ask for a refold."""
    report = []
    if tables <= present_tables:
        report = ([f"index {name} was missing; built" for name in sorted(built_indexes)] +
                  [f"trigger {name} was missing; restored (verify reports it)" for name in restored_triggers])
        for line in report:
            warnings.warn(f"factledger: {line}", RuntimeWarning, stacklevel=6)
    refold = "events" in present_tables and not {"projection_positions", *projector.all_tables} <= present_tables
    return refold, report
