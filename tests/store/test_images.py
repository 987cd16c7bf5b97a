"""A parallel replay's folded images, written into the ledger's tables (`ledger/store/images.py`).

Both loaders, SQLite's attached copy and the row loader a server's engine uses, must write the
same rows: in the image's row order, matched by column name (the ledger's table may hold its
columns in another order, or one more), the first row kept where a later one repeats its key.
SQLite's leaves nothing attached to the ledger's connection, after a failure too.
"""

from __future__ import annotations

import sqlite3

import pytest

from factledger.ledger.store.images import row_loader
from factledger.ledger.store.sqlite.images import SCHEMA, attached_loader

LOADERS = {"attached": attached_loader, "rows": row_loader}


def image(rows: list[tuple[int, str]]) -> bytes:
    """An image of a database whose table `t` holds `rows`, in that (rowid) order."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (a INTEGER NOT NULL, b TEXT NOT NULL)")
    db.executemany("INSERT INTO t VALUES (?, ?)", rows)
    db.commit()
    try:
        return db.serialize()
    finally:
        db.close()


def target() -> sqlite3.Connection:
    """The ledger's side: the same columns in another order, one more of its own, a unique key."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE t (b TEXT NOT NULL, extra TEXT DEFAULT 'own', a INTEGER NOT NULL UNIQUE)")
    return conn


def attached(conn: sqlite3.Connection) -> set[str]:
    return {row[1] for row in conn.execute("PRAGMA database_list")}


@pytest.mark.parametrize("name", LOADERS)
def test_a_loader_writes_the_images_rows_in_their_order_by_column_name(name):
    conn = target()
    conn.execute("BEGIN")
    with LOADERS[name](conn) as load:
        load(image([(3, "c"), (1, "a"), (2, "b")]), ["t"])
        load(image([(1, "a again"), (4, "d")]), ["t"])        # a's key again: the first row stays
    conn.execute("COMMIT")
    assert conn.execute("SELECT b, extra, a FROM t ORDER BY rowid").fetchall() == [
        ("c", "own", 3), ("a", "own", 1), ("b", "own", 2), ("d", "own", 4)]
    assert attached(conn) == {"main"}


def test_the_attached_image_is_released_after_a_failure_and_can_be_attached_again():
    conn = target()
    conn.execute("BEGIN")
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        with attached_loader(conn) as load:
            load(image([(1, "a")]), ["t"])
            load(image([(2, "b")]), ["missing"])            # a table the image does not hold
    assert attached(conn) == {"main"}
    conn.execute("ROLLBACK")
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone() == (0,)
    conn.execute("BEGIN")
    with attached_loader(conn) as load:
        load(image([(5, "e")]), ["t"])
    conn.execute("COMMIT")
    assert conn.execute("SELECT a FROM t").fetchall() == [(5,)]


def test_a_schema_left_attached_is_taken_over():
    """A connection where the image's schema is still attached (SQLite refused an earlier
    release, or a caller attached it): the loader uses it and releases it."""
    conn = target()
    conn.execute(f"ATTACH DATABASE ':memory:' AS {SCHEMA}")
    conn.execute("BEGIN")
    with attached_loader(conn) as load:
        load(image([(7, "g")]), ["t"])
    conn.execute("COMMIT")
    assert conn.execute("SELECT a FROM t").fetchall() == [(7,)]
    assert attached(conn) == {"main"}
