"""The one place an engine is chosen: from a ledger's location, or from an open connection.

A `postgresql://` (or `postgres://`) URL is PostgreSQL's (`ledger/store/postgres/engine.py`);
anything else is a file path, SQLite's (`ledger/store/sqlite/engine.py`).  Above the store,
code asks the engine this returns (`ledger/store/backend.py: Engine`) and never tests which one
it is (`tests/store/test_engine_seam.py` greps the product tree for such a test).
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


# What a shell asks of a location before (or without) opening a ledger there, through the facade.

def is_server_location(location: str | os.PathLike) -> bool:
    """Whether a location names a database server rather than a file: a shell then skips its
    own checks of the file (that it exists, that it is readable as SQLite)."""
    return engine_for(location) is not SQLITE


def holds_location(location: str | os.PathLike) -> bool:
    """Whether the location exists yet: the file, or the server's schema."""
    return engine_for(location).holds(location)


def remove_location(location: str | os.PathLike) -> None:
    """Remove what a failed command created at a location that did not exist before it."""
    engine_for(location).remove(location)


def output_clash(path: str | os.PathLike, location: str | os.PathLike, conn=None) -> str | None:
    """Which of the ledger's own files (or folders) `path` is, or lies in, after symbolic
    links, `..` and relative names, or shares an inode with (a hard link); None when it is
    none of them.  `conn`: the ledger's open connection, for a server to say where its files
    are (`Engine.owned_paths`)."""
    target = os.path.realpath(path)
    try:
        stat = os.stat(path)
    except OSError:               # not there yet (or unreadable): only its name can clash
        stat = None
    for owned in engine_for(location).owned_paths(location, conn):
        real = os.path.realpath(owned)
        if target == real or target.startswith(real.rstrip(os.sep) + os.sep):
            return owned
        if stat is not None:
            try:
                if os.path.samestat(stat, os.stat(owned)):
                    return owned
            except OSError:
                continue
    return None


def display_location(location: str | os.PathLike) -> str:
    """A location as messages may show it (a server URL's password hidden)."""
    return engine_for(location).describe(location)


def is_fresh_server_location(location: str) -> bool:
    """Whether a server location holds no ledger yet (the demo wants a fresh one)."""
    from factledger.ledger.store.postgres.backend import fresh_postgres

    return is_server_location(location) and fresh_postgres(location)
