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
from factledger.ledger.store.postgres.backend import SCHEMA, PgConnection, locked, missing_guards
from factledger.ledger.store.postgres.statistics import exclude_text
from factledger.ledger.store.repairs import record_repairs_sql, repaired
from factledger.ledger.vocabulary.clock import Clock


def ensure_schema(conn: PgConnection, projector: ProjectionTables, clock: Clock) -> tuple[bool, list[str]]:
    """(refold, report), as `ledger.store.sqlite.schema.ensure_schema`."""
    present_tables = {row[0] for row in conn.raw.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (conn.schema,))}
    present_indexes = {row[0] for row in conn.raw.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = %s", (conn.schema,))}
    tables = {"events", "ledger_meta", "projection_positions", *projector.all_tables}
    indexes = set(re.findall(r"CREATE (?:UNIQUE )?INDEX IF NOT EXISTS (\w+)", SCHEMA + projector.schema))
    lost_guards = missing_guards(conn) if "events" in present_tables else []
    obsolete = sorted(present_indexes & set(projector.obsolete_indexes))
    if tables <= present_tables and indexes <= present_indexes and not obsolete and not lost_guards:
        exclude_text(conn)
        return False, []
    record = record_repairs_sql(conn, lost_guards, clock) if lost_guards else ""
    with locked(conn):
        for name in obsolete:
            conn.execute(f"DROP INDEX IF EXISTS {name}")
        conn.native(SCHEMA)
        conn.executescript(projector.schema)
        if record:
            conn.executescript(record)
    conn.forget_columns()
    exclude_text(conn)
    return repaired(tables, present_tables, indexes - present_indexes, lost_guards, projector)
