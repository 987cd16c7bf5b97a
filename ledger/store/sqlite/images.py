"""SQLite's way to write a folded image's tables into the ledger: attached, copied by SQL.

The image (`ledger/store/images.py`) is deserialized into an in-memory database attached to the
ledger's own connection, inside the caller's transaction, and each table is copied with one
`INSERT ... SELECT`: SQLite's C loop reads each record and writes it, where `executemany` from
Python bound every value of every row (a third of a one-process rebuild; docs/performance.md,
"Parallel replay").  The image never touches a disk: no file holds a copy of a fold's rows once
the replay is over (docs/forgetting.md).

One schema serves every image of a replay: deserializing the next image replaces the last.  At
the end an empty image replaces the last one, which leaves nothing of it open in the transaction,
and the schema is detached; a replay that failed midway is released the same way.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from factledger.ledger.store.images import Load, insert_statement

SCHEMA = "replay_image"


@contextmanager
def attached_loader(conn: sqlite3.Connection) -> Iterator[Load]:
    """A loader that copies each image's tables into `conn`'s, within SQLite."""
    if SCHEMA not in {row[1] for row in conn.execute("PRAGMA database_list")}:
        conn.execute(f"ATTACH DATABASE ':memory:' AS {SCHEMA}")
    columns: dict[str, list[str]] = {}

    def load(image: bytes, tables: Sequence[str]) -> None:
        conn.deserialize(image, name=SCHEMA)
        for table in tables:
            if table not in columns:
                columns[table] = [row[1] for row in conn.execute(f"PRAGMA {SCHEMA}.table_info({table})")]
                if not columns[table]:        # as the row loader's SELECT would say
                    raise sqlite3.OperationalError(f"no such table: {table}")
            names = ", ".join(columns[table])
            conn.execute(insert_statement(f"main.{table}", columns[table],
                                          f"SELECT {names} FROM {SCHEMA}.{table} ORDER BY rowid"))

    try:
        yield load
    finally:
        _release(conn)


def _release(conn: sqlite3.Connection) -> None:
    """Empty the schema, then detach it.  Should SQLite refuse the detach, the schema stays
    attached holding nothing, and the next replay takes it over (`attached_loader`): not worth
    hiding the error a failed replay is already raising."""
    try:
        conn.deserialize(_empty_image(), name=SCHEMA)
        conn.execute(f"DETACH DATABASE {SCHEMA}")
    except sqlite3.Error:
        pass


def _empty_image() -> bytes:
    """An image of a database with nothing in it (SQLite serializes no database of no pages)."""
    empty = sqlite3.connect(":memory:")
    try:
        empty.execute("CREATE TABLE vacant (x)")
        empty.execute("DROP TABLE vacant")
        return empty.serialize()
    finally:
        empty.close()
