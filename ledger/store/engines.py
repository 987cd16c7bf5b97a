"""The one place an engine is chosen: from a ledger's location, or from an open connection.

A `postgresql://` (or `postgres://`) URL is PostgreSQL's (`ledger/store/postgres/engine.py`);
anything else is a file path, SQLite's (`ledger/store/sqlite/engine.py`).  Above the store,
code asks the engine this returns (`ledger/store/backend.py: Engine`) and never tests which one
it is (`tests/test_engine_seam.py` greps the product tree for such a test).
"""

from __future__ import annotations

import os

from factledger.ledger.store.backend import Engine
from factledger.ledger.store.postgres.backend import PgConnection
from factledger.ledger.store.postgres.engine import POSTGRES
from factledger.ledger.store.sqlite.engine import SQLITE


def engine_for(location: str | os.PathLike) -> Engine:
    """The engine a location names."""
    return POSTGRES if POSTGRES.claims(location) else SQLITE


def engine_of(conn) -> Engine:
    """The engine an open connection belongs to (a bare `sqlite3` connection is SQLite's)."""
    return POSTGRES if isinstance(conn, PgConnection) else SQLITE
