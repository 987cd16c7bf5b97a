"""Bringing a PostgreSQL ledger's schema up to what this version writes and reads, on open.

The same rules as `ledger/store/sqlite/schema.py` for a file: what is missing is created (a projection added
since is then folded from the log), obsolete indexes go, and a guard trigger restored on a ledger
that had its tables is reported and recorded for `verify`.  Read from the catalog; the changes
run in one transaction under the ledger's lock, so processes opening a new ledger at once create
it once.  Only reads when nothing is missing.  Every column that can hold text is kept out of catalog
statistics (`ledger/store/postgres/statistics.py`), on a new ledger and on an older one.
"""

from __future__ import annotations

import re

from factledger.ledger.store.backend import ProjectionTables
from factledger.ledger.store.postgres.backend import SCHEMA, PgConnection, guards_expected, guards_present, locked
from factledger.ledger.store.postgres.indexes import altered_indexes
from factledger.ledger.store.postgres.statistics import exclude_text
from factledger.ledger.store.repairs import SchemaGaps, record_repairs_sql, repaired
from factledger.ledger.vocabulary.clock import Clock


def gaps(conn: PgConnection, projector: ProjectionTables) -> SchemaGaps:
    """How the schema differs from this version's (`ledger/store/repairs.py: SchemaGaps`)."""
    present_tables = {row[0] for row in conn.raw.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (conn.schema,))}
    stored_indexes = conn.raw.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s", (conn.schema,)).fetchall()
    present_indexes = {name for name, _ in stored_indexes}
    tables = {"events", "ledger_meta", "projection_positions", *projector.all_tables}
    indexes = set(re.findall(r"CREATE (?:UNIQUE )?INDEX IF NOT EXISTS (\w+)", SCHEMA + projector.schema))
    lost, altered = [], []
    if "events" in present_tables:
        found = guards_present(conn)
        for name, text in guards_expected().items():
            if name not in found:
                lost.append(name)
            elif found[name] != text:
                altered.append(name)
    obsolete = sorted(present_indexes & set(projector.obsolete_indexes))
    return SchemaGaps(tables, present_tables, indexes, present_indexes, obsolete, sorted(lost), altered,
                      altered_indexes(stored_indexes, SCHEMA + projector.schema))


def ensure_schema(conn: PgConnection, projector: ProjectionTables, clock: Clock,
                  mode: str = "write") -> tuple[bool, list[str]]:
    """(refold, report), as `ledger.store.sqlite.schema.ensure_schema` (the same `mode`s; the
    schema's CREATE OR REPLACE puts an altered guard function and trigger back)."""
    found = gaps(conn, projector)
    if mode == "read":
        return False, found.read_only_report()
    fixing_altered = mode == "repair" and found.altered
    if found.whole and not fixing_altered:
        exclude_text(conn)            # a read-only open leaves the catalog as it is (mode "read")
        return False, []
    restored = found.lost_triggers + (found.altered_triggers if fixing_altered else [])
    record = record_repairs_sql(conn, restored, clock) if restored else ""
    with locked(conn):
        for name in found.obsolete + (found.altered_indexes if fixing_altered else []):
            conn.execute(f"DROP INDEX IF EXISTS {name}")   # an altered one is made again below
        conn.native(SCHEMA)
        conn.executescript(projector.schema)
        if record:
            conn.executescript(record)
    conn.forget_columns()
    exclude_text(conn)
    rebuilt = set(found.missing_indexes) | (set(found.altered_indexes) if fixing_altered else set())
    return repaired(found.tables, found.present_tables, rebuilt, restored, projector,
                    altered=found.altered_triggers + found.altered_indexes if fixing_altered else ())
