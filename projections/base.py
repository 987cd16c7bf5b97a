"""What every projection is: tables, a fold over events, and a way to clear itself.

A projection is a read model anyone can browse (plain tables); it can be thrown away and rebuilt
from the log at any time, for the whole ledger or for one `(app, user)` partition.
"""

from __future__ import annotations

import sqlite3
from typing import Protocol

from factledger.ledger.eventrow import Event


class Projection(Protocol):
    name: str
    tables: tuple[str, ...]        # tables this projection owns, each with app and user columns
    schema: str                    # CREATE statements

    def apply(self, conn: sqlite3.Connection, event: Event) -> None: ...


def clear(conn: sqlite3.Connection, projection: Projection, app: str | None = None,
          user: str | None = None) -> None:
    for table in projection.tables:
        if app is None:
            conn.execute(f"DELETE FROM {table}")
        else:
            conn.execute(f"DELETE FROM {table} WHERE app = ? AND user = ?", (app, user))
