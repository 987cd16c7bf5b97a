"""Bringing a PostgreSQL ledger's schema up to what this version writes and reads, on open.

The same rules as `ledger/store/sqlite/schema.py` for a file: what is missing is created (a projection added
since is then folded from the log), obsolete indexes go, and a guard trigger restored on a ledger
that had its tables is reported and recorded for `verify`.  Read from the catalog; the changes
run in one transaction under the ledger's lock, so processes opening a new ledger at once create
it once.  Only reads when nothing is missing.  Every column that can hold text is kept out of catalog
statistics (`ledger/store/postgres/statistics.py`), on a new ledger and on an older one.
"""

from __future__ import annotations

import os
import re

from factledger.ledger.errors import LedgerError
from factledger.ledger.store.backend import ProjectionTables
from factledger.ledger.store.postgres import partitions
from factledger.ledger.store.postgres.backend import (
    PgConnection,
    guard_functions,
    guards_expected,
    guards_present,
    locked,
    schema_of,
    split_statements,
)
from factledger.ledger.store.postgres.dialect import translate
from factledger.ledger.store.postgres.indexes import altered_indexes, stored_shapes
from factledger.ledger.store.postgres.statistics import exclude_text
from factledger.ledger.store.repairs import SchemaGaps, record_repairs_sql, repaired
from factledger.ledger.vocabulary.clock import Clock


def gaps(conn: PgConnection, projector: ProjectionTables) -> SchemaGaps:
    """How the schema differs from this version's (`ledger/store/repairs.py: SchemaGaps`)."""
    present_tables = {row[0] for row in conn.raw.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (conn.schema,))}
    stored_indexes = stored_shapes(conn)
    present_indexes = set(stored_indexes)
    tables = {"events", "ledger_meta", "projection_positions", *projector.all_tables}
    indexes = set(re.findall(r"CREATE (?:UNIQUE )?INDEX IF NOT EXISTS (\w+)", schema_of(conn) + projector.schema))
    if conn.leaves:           # a partitioned ledger: the chain's table and the log's partition key
        tables.add("event_chain")
        indexes.add("events_partition")
    lost, altered = [], []
    if "events" in present_tables:
        found = guards_present(conn)
        for name, text in guards_expected(conn).items():
            if name not in found:
                lost.append(name)
            elif found[name] != text:
                altered.append(name)
    obsolete = sorted(present_indexes & set(projector.obsolete_indexes))
    return SchemaGaps(tables, present_tables, indexes, present_indexes, obsolete, sorted(lost), altered,
                      altered_indexes(stored_indexes, _script(conn, projector, record_leaves=False)),
                      foreign=foreign(conn, tables, indexes | set(projector.obsolete_indexes)))


# What the catalog holds in the ledger's schema beside what the ledger creates: a leaf table or
# index of a partitioned one (`relispartition`), an index that backs a constraint, a sequence a
# column owns are the ledger's; every view, rule and other trigger or function is not.
_RELATIONS = """
SELECT c.relkind, c.relname, COALESCE(t.relname, '') FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_index i ON i.indexrelid = c.oid LEFT JOIN pg_class t ON t.oid = i.indrelid
WHERE n.nspname = %s AND NOT c.relispartition AND c.relkind IN ('r', 'p', 'i', 'I', 'v', 'm', 'S', 'f')
  AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = c.oid AND k.contype IN ('p', 'u'))
  AND NOT (c.relkind = 'S' AND EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
             AND d.objid = c.oid AND d.refobjsubid > 0 AND d.deptype IN ('a', 'i')))
ORDER BY c.relname"""
_TRIGGERS = """
SELECT t.tgname, c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND NOT t.tgisinternal AND t.tgparentid = 0 ORDER BY t.tgname"""
_RULES = "SELECT rulename, tablename FROM pg_rules WHERE schemaname = %s ORDER BY rulename"
_FUNCTIONS = """
SELECT p.proname, p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = %s ORDER BY 2"""
_KINDS = {"r": "table", "p": "table", "i": "index", "I": "index", "v": "view", "m": "materialized view",
          "S": "sequence", "f": "foreign table"}


def foreign(conn: PgConnection, tables: set[str], indexes: set[str]) -> list[tuple[str, str, str]]:
    """(kind, name, table) of each object in the ledger's schema that the ledger did not create."""
    schema = conn.schema
    # a partitioned table's rowid counts from a sequence of its own (`partitions.py`)
    own = {"table": tables, "index": indexes, "sequence": {f"{t}_rowid_seq" for t in tables}}
    found = [(_KINDS[kind], name, table) for kind, name, table in conn.raw.execute(_RELATIONS, (schema,))
             if name not in own.get(_KINDS[kind], ())]
    guards = set(guards_expected(conn))
    found += [("trigger", name, table) for name, table in conn.raw.execute(_TRIGGERS, (schema,))
              if not (table == "events" and name in guards)]
    found += [("rule", name, table) for name, table in conn.raw.execute(_RULES, (schema,))]
    functions = {function for function, _timing in guard_functions(conn).values()}
    found += [("function", signature, "") for name, signature in conn.raw.execute(_FUNCTIONS, (schema,))
              if name not in functions]
    return found


_DROP_ORDER = ("trigger", "rule", "view", "materialized view", "index", "table", "foreign table", "sequence",
               "function")


def drop_foreign(objects: list[tuple[str, str, str]]) -> str:
    """The statements that drop these objects, those that may depend on others first."""
    statements = []
    for kind, name, table in sorted(objects, key=lambda o: _DROP_ORDER.index(o[0])):
        quoted = name if kind == "function" else _quoted(name)
        on = f" ON {_quoted(table)}" if kind in ("trigger", "rule") else ""
        statements.append(f"DROP {kind.upper()} IF EXISTS {quoted}{on};\n")
    return "".join(statements)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def ensure_schema(conn: PgConnection, projector: ProjectionTables, clock: Clock,
                  mode: str = "write") -> tuple[bool, list[str]]:
    """(refold, report), as `ledger.store.sqlite.schema.ensure_schema` (the same `mode`s; the
    schema's CREATE OR REPLACE puts an altered guard function and trigger back)."""
    found = gaps(conn, projector)
    if mode == "read":
        return False, found.read_only_report()
    fixing_altered = mode == "repair" and found.altered
    dropping_foreign = mode == "repair" and found.foreign
    if found.whole and not fixing_altered and not dropping_foreign:
        exclude_text(conn)            # a read-only open leaves the catalog as it is (mode "read")
        return False, []
    restored = found.lost_triggers + (found.altered_triggers if fixing_altered else [])
    record = record_repairs_sql(conn, restored, clock) if restored else ""
    with locked(conn):
        new = "events" not in found.present_tables
        if new:               # a new ledger: partitioned (`partitions.py`), its leaf count recorded
            conn.leaves = partitions.recorded_leaves(conn) or new_leaves()
        if dropping_foreign:
            conn.native(drop_foreign(found.foreign))
        for name in found.obsolete + (found.altered_indexes if fixing_altered else []):
            conn.execute(f"DROP INDEX IF EXISTS {name}")   # an altered one is made again below
        conn.native(_script(conn, projector, record_leaves=new))
        if record:
            conn.executescript(record)
    conn.forget_columns()
    exclude_text(conn)
    rebuilt = set(found.missing_indexes) | (set(found.altered_indexes) if fixing_altered else set())
    return repaired(found.tables, found.present_tables, rebuilt, restored, projector,
                    altered=found.altered_triggers + found.altered_indexes if fixing_altered else (),
                    dropped=found.foreign if dropping_foreign else ())


def new_leaves() -> int:
    """The leaf count of a ledger created now: FACTLEDGER_PG_LEAVES (8 is the measured choice),
    else `partitions.DEFAULT_LEAVES` (0: a plain, unpartitioned ledger, what versions before
    partitioning made)."""
    text = os.environ.get("FACTLEDGER_PG_LEAVES", "").strip()
    if not text:
        return partitions.DEFAULT_LEAVES
    if not text.isdigit() or int(text) > 256:
        raise LedgerError(f"FACTLEDGER_PG_LEAVES={text!r}: give a whole number of hash partitions "
                          f"from 0 (plain tables) to 256, for example {partitions.SUGGESTED_LEAVES}")
    return int(text)


def _script(conn: PgConnection, projector: ProjectionTables, record_leaves: bool) -> str:
    """The whole schema as one script, sent in one round trip: the store's tables and guards,
    the projections' tables (translated, and partitioned on a partitioned ledger), each leaf, and
    on a new ledger the record of its leaf count."""
    statements = [translate(s, False, conn.columns_of) for s in split_statements(projector.schema)]
    parts = [schema_of(conn)]
    if conn.leaves:
        parts += [partitions.partitioned_statement(s) + ";\n" for s in statements]
        tables = {"events", *re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", projector.schema)}
        parts += [partitions.leaves_ddl(tables, conn.leaves), partitions.REFILL_CHAIN]
    else:
        parts += [s + ";\n" for s in statements]
    if record_leaves:
        parts.append(f"INSERT INTO ledger_meta (key, value) VALUES ('{partitions.META_KEY}', "
                     f"'{conn.leaves}') ON CONFLICT (key) DO NOTHING;\n")
    return "".join(parts)
