"""Is each index of a PostgreSQL ledger the one this version creates, not only one of its name?

SQLite keeps each index's CREATE text (`sqlite_master.sql`), so its schema check compares texts.
PostgreSQL keeps its own rendering (`pg_indexes.indexdef`: schema-qualified, `USING btree`, a
predicate in its parenthesised normal form), so the texts cannot be compared; the parts that make
an index serve or guard what it is for can: unique or not, the table, the key columns in order,
the access method, and whether it is partial.  An index recreated non-unique under its own name
(the backstop of "one open interval per fact" gone) or on other columns is then `altered`, as on
SQLite: a read reports it, `verify` fails naming it and `factledger repair` rebuilds it.  What
this cannot see is a partial index whose predicate was changed to another one; it sees one whose
predicate was dropped or added.
"""

from __future__ import annotations

import re

_WRITTEN = re.compile(r"CREATE (UNIQUE )?INDEX IF NOT EXISTS (\w+)\s+ON (\w+)\s*\(([^)]*)\)\s*(WHERE\b[^;]*)?",
                      re.IGNORECASE)
_STORED = re.compile(r"CREATE (UNIQUE )?INDEX (\S+) ON (?:ONLY )?(\S+) USING (\w+) \((.*?)\)( WHERE .*)?$",
                     re.DOTALL)


def _columns(text: str) -> tuple[str, ...]:
    return tuple(part.strip().strip('"').lower() for part in text.split(","))


def _table(name: str) -> str:
    return name.rsplit(".", 1)[-1].strip('"').lower()


def written_shapes(ddl: str) -> dict[str, tuple]:
    """index name -> (unique, table, columns, partial, method) of each CREATE INDEX in `ddl`."""
    return {m.group(2): (bool(m.group(1)), m.group(3).lower(), _columns(m.group(4)), bool(m.group(5)), "btree")
            for m in _WRITTEN.finditer(ddl)}


def altered_indexes(stored: list[tuple[str, str]], ddl: str) -> list[str]:
    """The indexes `ddl` creates that are among `stored` ((indexname, indexdef) of the ledger's
    schema, from `pg_indexes`) but not as `ddl` creates them."""
    wanted = written_shapes(ddl)
    altered = []
    for name, text in stored:
        if name not in wanted:
            continue
        stored = _STORED.match(text)
        shape = (stored and (bool(stored.group(1)), _table(stored.group(3)), _columns(stored.group(5)),
                             bool(stored.group(6)), stored.group(4).lower()))
        if shape != wanted[name]:
            altered.append(name)
    return sorted(altered)
