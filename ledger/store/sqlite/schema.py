"""Bringing a file's schema up to what this version writes and reads, on open.

Read from the file's own catalogue (sqlite_master: tables, triggers; each table's index_list).  Creates what is
missing (a projection added since the file was made is then folded from the log), drops indexes
this version no longer keeps and builds the ones it added, so a file made by an earlier version
writes and reads like a new one.  Nothing is restored silently: each index or trigger created on
a file that already had its tables is reported (a warning, and `UnitOfWork.schema_report`), and a
restored trigger is also recorded for `verify` (`ledger/store/sqlite/triggers.py`).  Only reads when nothing is
missing, so a read-only ledger still opens.
"""

from __future__ import annotations

import re
import sqlite3

from factledger.ledger.store.backend import ProjectionTables
from factledger.ledger.store.repairs import record_repairs_sql, repaired
from factledger.ledger.store.sqlite import triggers
from factledger.ledger.vocabulary.clock import Clock


def ensure_schema(conn: sqlite3.Connection, store_schema: str, projector: ProjectionTables,
                  clock: Clock) -> tuple[bool, list[str]]:
    """Make the schema whole.  Returns (refold, report): refold is True when projection tables
    were created beside an existing log (the caller then refolds them); report names each index
    or trigger restored on a file that had its tables."""
    # the catalogue read as sqlite-utils' `table_names()` and `Table.indexes` read it, without
    # importing sqlite-utils (and numpy, which it imports when installed) on every open
    # (docs/performance.md)
    present_tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    present_indexes = {row[1] for table in present_tables
                       for row in conn.execute(f"PRAGMA index_list({_quoted(table)})").fetchall()}
    schema = store_schema + projector.schema
    tables = {"events", "projection_positions", *projector.all_tables}
    indexes = set(re.findall(r"CREATE (?:UNIQUE )?INDEX IF NOT EXISTS (\w+)", schema))
    lost_triggers = triggers.missing(conn, store_schema) if "events" in present_tables else []
    obsolete = sorted(present_indexes & set(projector.obsolete_indexes))
    if tables <= present_tables and indexes <= present_indexes and not obsolete and not lost_triggers:
        return False, []
    drops = "".join(f"DROP INDEX IF EXISTS {name};" for name in obsolete)
    record = ""
    if lost_triggers:
        record = record_repairs_sql(conn, lost_triggers, clock)
    try:
        conn.executescript("BEGIN IMMEDIATE;" + drops + schema + record + "COMMIT;")
    except sqlite3.DatabaseError:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if tables <= present_tables:
            # Only indexes or triggers differ: a read-only or busy file, or a damaged page that
            # `verify` and `replay --check` must still be able to report, opens as it is (and
            # `verify` names a missing trigger from the file itself).
            return False, []
        raise
    return repaired(tables, present_tables, indexes - present_indexes, lost_triggers, projector)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
