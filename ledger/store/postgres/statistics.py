"""Keeping the ledger's text out of PostgreSQL's catalog statistics.

ANALYZE samples columns into `pg_statistic`, and of a text column those samples are values,
quotes and user ids that a forget never reaches.  So every column that can hold text is excluded
(`SET STATISTICS 0`) when the schema is created and on every open of an older one; an old sample
is dropped by altering the column to its own type, then vacuuming `pg_statistic` (a superuser's
step; `residue` says when it could not run).  A forget re-analyses a touched table whose text an
operator let back in (`reanalyze`); `residue` names such columns (docs/forgetting.md).
"""

from __future__ import annotations

from factledger.ledger.store.postgres.backend import locked

NUMERIC = ("smallint", "integer", "bigint", "real", "double precision", "numeric", "boolean")

_COLUMNS = """
SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), co.collname,
       COALESCE(a.attstattarget, -1)::int
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_collation co ON co.oid = a.attcollation AND a.attcollation <> 0
WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'm') AND NOT c.relispartition
  AND a.attnum > 0 AND NOT a.attisdropped
  AND format_type(a.atttypid, NULL) <> ALL(%s)
ORDER BY c.relname, a.attnum
"""
# The columns that hold a sample, each leaf's under its partitioned table's name.
_SAMPLED = """
SELECT COALESCE(parent.relname, s.tablename), s.attname
FROM pg_stats s
LEFT JOIN pg_namespace n ON n.nspname = s.schemaname
LEFT JOIN pg_class leaf ON leaf.relname = s.tablename AND leaf.relnamespace = n.oid AND leaf.relispartition
LEFT JOIN pg_inherits i ON i.inhrelid = leaf.oid
LEFT JOIN pg_class parent ON parent.oid = i.inhparent
WHERE s.schemaname = %s
"""


def text_columns(conn) -> list[tuple[str, str, str, str | None, int, bool]]:
    """(table, column, type, collation, statistics target, has statistics) of every column of the
    ledger's tables that can hold text.  A partitioned table stands for its leaves (an ALTER of it
    reaches them; a sample of any leaf counts as its own)."""
    sampled = {tuple(row) for row in conn.raw.execute(_SAMPLED, (conn.schema,)).fetchall()}
    return [(*row, (row[0], row[1]) in sampled)
            for row in conn.raw.execute(_COLUMNS, (conn.schema, list(NUMERIC))).fetchall()]


def exclude_text(conn) -> list[str]:
    """Every text column excluded from statistics and its old statistics dropped; returns the
    columns changed ("table.column").  One catalog read when nothing is to do; a role that does
    not own the tables, or a read-only server (a standby, which replays the primary's change),
    changes nothing (`residue` then names what is left)."""
    todo = [c for c in text_columns(conn) if c[4] != 0 or c[5]]
    if not todo:
        return []
    keys = partition_keys(conn)
    try:
        with locked(conn):
            by_table: dict[str, list[str]] = {}
            for table, column, type_, collation, target, sampled in todo:
                changes = by_table.setdefault(table, [])
                if target != 0:
                    changes.append(f"ALTER COLUMN {_quoted(column)} SET STATISTICS 0")
                if sampled and column not in keys.get(table, ()):
                    collate = f' COLLATE "{collation}"' if collation else ""
                    changes.append(f"ALTER COLUMN {_quoted(column)} TYPE {type_}{collate}")
            for table, changes in by_table.items():
                if changes:
                    conn.raw.execute(f"ALTER TABLE {_quoted(table)} {', '.join(changes)}")
    except Exception as exc:
        if getattr(exc, "sqlstate", None) in ("42501", "25006"):   # not the owner; read-only (a standby)
            return []
        raise
    key_samples = [(t, c) for t, c, _type, _coll, _target, sampled in todo if sampled and c in keys.get(t, ())]
    if key_samples:
        _drop_key_samples(conn, key_samples)
    if any(c[5] for c in todo):
        vacuum_catalog(conn)
    return [f"{c[0]}.{c[1]}" for c in todo]


def partition_keys(conn) -> dict[str, set[str]]:
    """Each partitioned table of the ledger -> its partition key's columns."""
    keys: dict[str, set[str]] = {}
    for table, column in conn.raw.execute(
            "SELECT c.relname, a.attname FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid"
            " AND a.attnum = ANY(p.partattrs) WHERE n.nspname = %s", (conn.schema,)).fetchall():
        keys.setdefault(table, set()).add(column)
    return keys


def _drop_key_samples(conn, columns) -> None:
    """The samples of a partition key's columns (app, "user"), of the table and each leaf:
    PostgreSQL refuses to alter a partition key's type (the way the other columns' samples go),
    so they are deleted from `pg_statistic`, which only a superuser may do; for another role they
    stay, and `residue` names them."""
    for table, column in columns:
        try:
            conn.raw.execute(
                "DELETE FROM pg_catalog.pg_statistic s USING pg_class c, pg_attribute a"
                " WHERE s.starelid = c.oid AND a.attrelid = c.oid AND a.attnum = s.staattnum"
                " AND a.attname = %s AND (c.oid = %s::regclass OR c.oid IN"
                " (SELECT inhrelid FROM pg_inherits WHERE inhparent = %s::regclass))",
                (column, f'"{conn.schema}".{_quoted(table)}', f'"{conn.schema}".{_quoted(table)}'))
        except Exception as exc:
            if getattr(exc, "sqlstate", None) not in ("42501", "25006"):
                raise


def vacuum_catalog(conn, full: bool = False) -> None:
    """VACUUM `pg_statistic`: its old row versions held the dropped samples.  `full` (a forget's
    `--vacuum`) rewrites it into new files: a plain VACUUM frees the old versions' space but leaves
    their bytes in the page until something overwrites them, which a crowded catalog may not do
    for a long time.  PostgreSQL lets only a superuser (or the database owner) do either and
    skips it for others with a warning."""
    conn.raw.execute("VACUUM (FULL) pg_catalog.pg_statistic" if full else "VACUUM pg_catalog.pg_statistic")


def sampled_text(conn, tables=None) -> list[str]:
    """"table.column" of each text column that statistics hold a sample of (of `tables`, if given)."""
    wanted = None if tables is None else set(tables)
    return [f"{t}.{c}" for t, c, _type, _coll, _target, sampled in text_columns(conn)
            if sampled and (wanted is None or t in wanted)]


def reanalyze(conn, tables) -> list[str]:
    """ANALYZE each of `tables` that holds a sample of text (an operator set a column's statistics
    back), so the sample is of the rows left after the forget; returns those tables."""
    touched = sorted({name.split(".", 1)[0] for name in sampled_text(conn, tables)})
    for table in touched:
        conn.raw.execute(f"ANALYZE {_quoted(table)}")
    return touched


def extended(conn) -> list[str]:
    """Extended statistics objects (`CREATE STATISTICS`) on the ledger's tables: their most common
    values are sampled text the ledger does not manage."""
    return [row[0] for row in conn.raw.execute(
        "SELECT s.stxname FROM pg_statistic_ext s JOIN pg_class c ON c.oid = s.stxrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s ORDER BY 1",
        (conn.schema,)).fetchall()]


def catalog_dead_rows(conn) -> int:
    """Old row versions of `pg_statistic` (its statistics' count): samples dropped, not yet vacuumed."""
    row = conn.raw.execute("SELECT n_dead_tup FROM pg_stat_sys_tables WHERE schemaname = 'pg_catalog'"
                           " AND relname = 'pg_statistic'").fetchone()
    return int(row[0]) if row and row[0] else 0


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
