"""PostgreSQL's way to write a folded image's tables into the ledger: one `COPY` per table.

A parallel replay's parent (`projections/parallel.py`) reads each image back in a private
in-memory SQLite database, as any server's engine does (`ledger/store/images.py: row_loader`),
and streams each table's rows with `COPY ... FROM STDIN` (`PgConnection.copy_in`): one
statement for the table, where `executemany` ran an INSERT for every row, each parsed, planned
and executed by the server, whose processes share the machine's cores with the replay's workers
(docs/performance.md, "Parallel replay").

COPY has no `ON CONFLICT`.  Every key of a partitioned table but one is the partition's own,
and the tables are cleared before the first image; the one that spans partitions, a forgotten
scope's `(kind, hash)`, can repeat a row an earlier share wrote.  A COPY that meets a repeated
key is rolled back to its savepoint, and that table's rows of the image go in with the row
loader's `INSERT OR IGNORE`, which keeps the first row, as the folds do.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from factledger.ledger.store.images import Load, insert_rows, row_loader


def copy_rows(conn, table: str, columns: Sequence[str], rows: list) -> None:
    if not conn.copy_in(table, columns, rows):
        insert_rows(conn, table, columns, rows)


@contextmanager
def copy_loader(conn) -> Iterator[Load]:
    """A loader that writes each image's tables to the server with COPY."""
    with row_loader(conn, write=copy_rows) as load:
        yield load
