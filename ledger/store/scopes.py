"""One read over a scope of several partitions of an app (a user and `_domain`), as one statement.

A scope is read as one `SELECT` per partition (`app = ? AND user = ?`), joined by `UNION ALL` (or
summed), never as `user IN (...)`: on a hash-partitioned PostgreSQL ledger the `IN` form reads
every leaf, since PostgreSQL prunes leaves only on equalities of both keys (measured in
docs/performance.md, "Figures behind choices in the code").  SQLite reads one index range per
partition either way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def each_user(select: str, users: Sequence[str], args_of: Callable[[str], Sequence], union: str = "UNION ALL"
              ) -> tuple[str, list]:
    """(`select` once per user, joined by `union`; the arguments, `args_of(user)` for each in turn).
    `union="UNION"` for a distinct result.  A scope is a few partitions: far below SQLite's limit
    of 500 terms in a compound select."""
    _some(users)
    return f" {union} ".join(select for _ in users), [a for user in users for a in args_of(user)]


def summed_counts(tables: Sequence[str], app: str, users: Sequence[str]) -> tuple[str, list]:
    """One row: for each table, how many rows the scope's partitions hold in it."""
    _some(users)
    one = "(SELECT COUNT(*) FROM {table} WHERE app = ? AND user = ?)"
    columns = [" + ".join(one.format(table=table) for _ in users) for table in tables]
    return f"SELECT {', '.join(columns)}", [a for _table in tables for user in users for a in (app, user)]


def _some(users: Sequence[str]) -> None:
    if not users:                      # a scope always holds its user; an empty one is a caller's slip
        raise ValueError("a scope names at least one partition")
