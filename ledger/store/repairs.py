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

from factledger.ledger.errors import LedgerError, StorageError
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
             projector: ProjectionTables, altered: list[str] | tuple = (),
             dropped: list[tuple[str, str, str]] | tuple = ()) -> tuple[bool, list[str]]:
    """(refold, report) once the schema is whole, for either engine: each index built or trigger
    restored on a ledger that already had its tables is said (a warning at the opener's line), and
    projection tables new beside an existing log ask for a refold.  `altered`: the restored
    triggers and indexes that were there but not as this version writes them, and `dropped`, the
    objects the ledger did not create (`SchemaGaps.foreign`), removed (`factledger repair`)."""
    report = []
    if tables <= present_tables:
        report = ([f"index {name} was altered; rebuilt" if name in altered else f"index {name} was missing; built"
                   for name in sorted(built_indexes)] +
                  [f"trigger {name} was {'altered' if name in altered else 'missing'}; restored "
                   "(verify reports it)" for name in restored_triggers] +
                  [f"{foreign_line(kind, name, table, '; dropped')}" for kind, name, table in dropped])
        for line in report:
            warnings.warn(f"factledger: {line}", RuntimeWarning, stacklevel=6)
    refold = "events" in present_tables and not {"projection_positions", *projector.all_tables} <= present_tables
    return refold, report


def foreign_line(kind: str, name: str, table: str,
                 then: str = " (run `factledger repair` to remove it)") -> str:
    """One object the ledger did not create, in words (`verify`, `repair`, a refused forget)."""
    on = f" on {table}" if table and table != name else ""
    return f"{kind} {name}{on} was not created by the ledger{then}"


class SchemaGaps:
    """How a ledger's schema differs from what this version writes, as each engine reads it from
    its catalogue; the same for every engine.  A read-only open reports these (`problems`) and
    changes nothing; a write open restores what is missing; `factledger repair` also puts back
    what is altered (docs/decisions.md, "Read-only opens")."""

    def __init__(self, tables: set[str], present_tables: set[str], indexes: set[str],
                 present_indexes: set[str], obsolete: list[str], lost_triggers: list[str],
                 altered_triggers: list[str] = (), altered_indexes: list[str] = (),
                 foreign: list[tuple[str, str, str]] = ()):
        self.tables, self.present_tables = tables, present_tables
        self.missing_tables = sorted(tables - present_tables)
        self.missing_indexes = sorted(indexes - present_indexes)
        self.obsolete = list(obsolete)
        self.lost_triggers = list(lost_triggers)
        self.altered_triggers = list(altered_triggers)
        self.altered_indexes = list(altered_indexes)
        # (kind, name, the table it is on) of each object in the ledger's schema the ledger did
        # not create: named by `verify`, dropped by `repair`, and a forget refuses beside one
        self.foreign = list(foreign)

    @property
    def whole(self) -> bool:
        """Nothing a write open would change (what only `repair` puts back aside)."""
        return not (self.missing_tables or self.missing_indexes or self.obsolete or self.lost_triggers)

    @property
    def altered(self) -> bool:
        return bool(self.altered_triggers or self.altered_indexes)

    def problems(self) -> list[str]:
        """What a reader must be told and `verify` fails on: each table, index and trigger missing
        or altered (an obsolete index left by an older version is harmless and not listed)."""
        return ([f"table {name} is missing" for name in self.missing_tables if "events" in self.present_tables]
                + [f"index {name} is missing" for name in self.missing_indexes if name not in self.missing_tables]
                + [f"index {name} is altered" for name in self.altered_indexes]
                + [f"trigger {name} is missing" for name in self.lost_triggers]
                + [f"trigger {name} is altered" for name in self.altered_triggers]
                + [foreign_line(*each) for each in self.foreign])

    def foreign_lines(self) -> list[str]:
        return [foreign_line(*each) for each in self.foreign]

    def read_only_report(self) -> list[str]:
        """The report of a read-only open: what differs, said, nothing changed.  A ledger whose
        tables are not all there cannot be read this way: a LedgerError says what to run."""
        if "events" not in self.present_tables:
            raise LedgerError("this is not a ledger yet (no event log): run `factledger init` first; "
                              "a read-only command creates nothing")
        if self.missing_tables:
            raise LedgerError(f"the ledger lacks table(s) {', '.join(self.missing_tables)} that this version "
                              "reads (made by an older version?): run `factledger repair` (or any write "
                              "command) to add and fold them; a read-only command does not change the ledger")
        lines = [f"{line}; not repaired (a read-only command changes nothing: run `factledger repair`)"
                 for line in self.problems()]
        for line in lines:
            warnings.warn(f"factledger: {line}", RuntimeWarning, stacklevel=6)
        return lines
