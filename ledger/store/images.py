"""Tables folded in another process, written into the ledger's: from an image of a SQLite database.

A parallel replay's workers send each folded share whole, as `Connection.serialize()` bytes: one
copy of memory however many rows, where rows meant encoding every value twice.  How an image's
rows reach the ledger is the engine's (`Engine.image_loader`): SQLite copies inside the database
(`sqlite/images.py`); a server gets the rows read back here (`row_loader`), by COPY on PostgreSQL
(`postgres/images.py`), with `INSERT OR IGNORE` where a key repeats.  Rows go in image rowid order,
so each table gets them in a one-process rebuild's order, and a key spanning partitions keeps
its first row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

# What a loader is: load(image, tables) writes the named tables' rows of one image.
Load = Callable[[bytes, Sequence[str]], None]


# How a loader writes one table's rows of an image: write(conn, table, columns, rows).
Write = Callable[[object, str, Sequence[str], list], None]


def insert_rows(conn, table: str, columns: Sequence[str], rows: list) -> None:
    """`INSERT OR IGNORE`, one row at a time through the connection's `executemany`."""
    conn.executemany(insert_statement(table, columns, f"VALUES ({', '.join('?' for _ in columns)})"), rows)


@contextmanager
def row_loader(conn, write: Write = insert_rows) -> Iterator[Load]:
    """A loader for any connection with `executemany`: each image opened in a private in-memory
    SQLite database, its tables read back as rows and written to `conn` by `write`."""
    local = sqlite3.connect(":memory:")

    def load(image: bytes, tables: Sequence[str]) -> None:
        local.deserialize(image)
        for table in tables:
            cursor = local.execute(f"SELECT * FROM {table} ORDER BY rowid")
            columns = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
            if rows:
                write(conn, table, columns, rows)

    try:
        yield load
    finally:
        local.close()


def insert_statement(table: str, columns: Sequence[str], source: str) -> str:
    """The statement both loaders write with: the image's columns by name (the ledger's table
    may hold them in another order, or one more of its own, such as PostgreSQL's rowid)."""
    return f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) {source}"
