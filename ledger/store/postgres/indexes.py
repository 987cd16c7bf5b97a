"""Is each index of a PostgreSQL ledger the one this version creates, not only one of its name?

SQLite keeps each index's CREATE text (`sqlite_master.sql`), so its schema check compares texts.
PostgreSQL keeps its own rendering (`pg_indexes.indexdef`: schema-qualified, `USING btree`, a
predicate in its parenthesised normal form), so the texts cannot be compared; the parts that make
an index serve or guard what it is for can: unique or not, the table, the key columns in order,
the access method, and whether it is partial; and whether it is valid (`indisvalid`: an index of a
partitioned table made `ON ONLY` the parent, or a failed `CREATE INDEX CONCURRENTLY`, exists by
name and serves no query).  An index recreated non-unique under its own name
(the backstop of "one open interval per fact" gone) or on other columns is then `altered`, as on
SQLite: a read reports it, `verify` fails naming it and `factledger repair` rebuilds it.  What
this cannot see is a partial index whose predicate was changed to another one; it sees one whose
predicate was dropped or added.
"""

from __future__ import annotations

import re

_WRITTEN = re.compile(r"CREATE (UNIQUE )?INDEX IF NOT EXISTS (\w+)\s+ON (\w+)\s*\(([^)]*)\)\s*(WHERE\b[^;]*)?",
                      re.IGNORECASE)

# Read from the catalog's own columns, not `pg_indexes.indexdef`: `pg_get_indexdef` locks the
# table, so an open would wait behind (and time out on) a writer's ACCESS EXCLUSIVE lock, where
# reading names from the catalog never waits.
_STORED = """
SELECT i.relname, x.indisunique, x.indisvalid, t.relname, am.amname, x.indpred IS NOT NULL,
       ARRAY(SELECT a.attname::text FROM unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
             JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum ORDER BY k.n)
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_namespace n ON n.oid = i.relnamespace
JOIN pg_am am ON am.oid = i.relam
WHERE n.nspname = %s
"""


def _columns(text: str) -> tuple[str, ...]:
    return tuple(part.strip().strip('"').lower() for part in text.split(","))


def written_shapes(ddl: str) -> dict[str, tuple]:
    """index name -> (unique, table, columns, partial, method) of each CREATE INDEX in `ddl`."""
    return {m.group(2): (bool(m.group(1)), m.group(3).lower(), _columns(m.group(4)), bool(m.group(5)), "btree")
            for m in _WRITTEN.finditer(ddl)}


def stored_shapes(conn) -> dict[str, tuple]:
    """index name -> (unique, table, columns, partial, method) of each index of the ledger's schema."""
    return {name: (bool(unique), table.lower(), tuple(c.lower() for c in columns), bool(partial),
                   method.lower() if valid else f"{method.lower()} (invalid)")
            for name, unique, valid, table, method, partial, columns
            in conn.raw.execute(_STORED, (conn.schema,)).fetchall()}


def altered_indexes(stored: dict[str, tuple], ddl: str) -> list[str]:
    """The indexes `ddl` creates that are among `stored` (`stored_shapes`) but not as `ddl`
    creates them."""
    wanted = written_shapes(ddl)
    return sorted(name for name, shape in stored.items() if name in wanted and shape != wanted[name])
