"""Bringing a file's schema up to what this version writes and reads, on open.

Read from the file's own catalogue (sqlite_master: tables, triggers; each table's index_list).  Creates what is
missing (a projection added since the file was made is then folded from the log), drops indexes
this version no longer keeps and builds the ones it added, so a file made by an earlier version
writes and reads like a new one.  Nothing is restored silently: each index or trigger created on
a file that already had its tables is reported (a warning, and `UnitOfWork.schema_report`), and a
restored trigger is also recorded for `verify` (`ledger/store/sqlite/triggers.py`).  Only reads when nothing is
missing, so a read-only ledger still opens.

The schema is part of what `verify` checks: a table, index, trigger or view the ledger did not
create (a trigger on `events` that copies every scrubbed body into a side table) is named
(`SchemaGaps.foreign`), `factledger repair` drops it, and a forget refuses to run beside it.
"""

from __future__ import annotations

import re
import sqlite3

from factledger.ledger.store.backend import ProjectionTables
from factledger.ledger.store.repairs import SchemaGaps, record_repairs_sql, repaired
from factledger.ledger.store.sqlite import triggers
from factledger.ledger.vocabulary.clock import Clock

_INDEX = re.compile(r"CREATE (UNIQUE )?INDEX IF NOT EXISTS (\w+)\b[^;]*;")


def gaps(conn: sqlite3.Connection, store_schema: str, projector: ProjectionTables) -> SchemaGaps:
    """How the file's schema differs from this version's (`ledger/store/repairs.py: SchemaGaps`)."""
    # the catalogue read as sqlite-utils' `table_names()` and `Table.indexes` read it, without
    # importing sqlite-utils (and numpy, which it imports when installed) on every open
    # (docs/performance.md)
    present_tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    present_indexes = {row[1] for table in present_tables
                       for row in conn.execute(f"PRAGMA index_list({_quoted(table)})").fetchall()}
    schema = store_schema + projector.schema
    tables = {"events", "projection_positions", *projector.all_tables}
    written = {m.group(2): triggers.normal(m.group(0)) for m in _INDEX.finditer(schema)}
    stored = {row[0]: triggers.normal(row[1]) for row in conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}
    altered_indexes = sorted(name for name, sql in written.items() if name in stored and stored[name] != sql)
    lost, altered = [], []
    if "events" in present_tables:
        found = triggers.present(conn)
        for name, sql in triggers.expected(store_schema).items():
            if name not in found:
                lost.append(name)
            elif found[name] != sql:
                altered.append(name)
    obsolete = sorted(present_indexes & set(projector.obsolete_indexes))
    own = {"table": tables | {"ledger_meta"}, "index": set(written) | set(projector.obsolete_indexes),
           "trigger": set(triggers.expected(store_schema))}
    foreign = [(kind, name, table) for kind, name, table in conn.execute(
               "SELECT type, name, tbl_name FROM sqlite_master ORDER BY type, name")
               if not name.startswith("sqlite_") and name not in own.get(kind, ())]
    return SchemaGaps(tables, present_tables, set(written), present_indexes, obsolete, sorted(lost),
                      altered, altered_indexes, foreign=foreign)


def ensure_schema(conn: sqlite3.Connection, store_schema: str, projector: ProjectionTables,
                  clock: Clock, mode: str = "write") -> tuple[bool, list[str]]:
    """Make the schema whole.  Returns (refold, report): refold is True when projection tables
    were created beside an existing log (the caller then refolds them); report names each index
    or trigger restored on a file that had its tables.  `mode` "read": nothing is changed, the
    report says what differs (a read-only open); "repair": an altered trigger or index is also
    put back as this version writes it."""
    found = gaps(conn, store_schema, projector)
    if mode == "read":
        return False, found.read_only_report()
    fixing_altered = mode == "repair" and found.altered
    dropping_foreign = mode == "repair" and found.foreign
    if found.whole and not fixing_altered and not dropping_foreign:
        return False, []
    schema = store_schema + projector.schema
    drops = "".join(f"DROP INDEX IF EXISTS {name};" for name in found.obsolete)
    if dropping_foreign:        # triggers and views first: a trigger may name a table dropped after it
        order = {"trigger": 0, "view": 1, "index": 2, "table": 3}
        drops += "".join(f"DROP {kind.upper()} IF EXISTS {_quoted(name)};"
                         for kind, name, _table in sorted(found.foreign, key=lambda f: order.get(f[0], 4)))
    restored = list(found.lost_triggers)
    if fixing_altered:
        drops += "".join(f"DROP INDEX IF EXISTS {name};" for name in found.altered_indexes)
        drops += "".join(f"DROP TRIGGER IF EXISTS {name};" for name in found.altered_triggers)
        restored += found.altered_triggers
    record = record_repairs_sql(conn, restored, clock) if restored else ""
    try:
        conn.executescript("BEGIN IMMEDIATE;" + drops + schema + record + "COMMIT;")
    except sqlite3.DatabaseError:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if found.tables <= found.present_tables and mode != "repair":
            # Only indexes or triggers differ: a read-only or busy file, or a damaged page that
            # `verify` and `replay --check` must still be able to report, opens as it is (and
            # `verify` names a missing trigger from the file itself).
            return False, []
        raise
    rebuilt = set(found.missing_indexes) | (set(found.altered_indexes) if fixing_altered else set())
    return repaired(found.tables, found.present_tables, rebuilt, restored, projector,
                    altered=found.altered_triggers + found.altered_indexes if fixing_altered else (),
                    dropped=found.foreign if dropping_foreign else ())


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
