"""Driver errors as factledger's, for the few callers above the store that run SQL of their own.

The PostgreSQL connection raises factledger's classes itself (`ledger/store/postgres/errors.py`);
an SQLite connection is `sqlite3`'s own, so a statement run on it outside the store's
transaction raises `sqlite3`'s errors.  `storage_errors()` turns those into factledger's
(`ledger/store/sqlite/errors.py`), so a caller catches `LedgerBusy`, `ConstraintViolation`,
`StorageError`... whatever the engine, and never imports a driver.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Iterator
from contextlib import contextmanager

from factledger.ledger.store.sqlite import errors as sqlite_errors


@contextmanager
def storage_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        if sqlite_errors.is_storage(exc):
            raise sqlite_errors.translate(exc) from None
        raise


def _translated(function):
    """`function` with SQLite's errors raised as factledger's; a generator it returns is wrapped too,
    so a read streamed after the call returns (`stream_log`) is covered as well."""

    @functools.wraps(function)
    def call(*args, **kwargs):
        with storage_errors():
            result = function(*args, **kwargs)
        return _streamed(result) if isinstance(result, types.GeneratorType) else result

    return call


def _streamed(rows: Iterator) -> Iterator:
    with storage_errors():
        yield from rows


def storage_errors_at_the_door(cls: type) -> type:
    """Every public method of `cls` (its own and those it inherits) raises factledger's errors only.

    The facade's reads run outside the store's transaction, on the SQLite connection, so a busy,
    damaged or non-ledger file would reach a shell as `sqlite3`'s exception; with this, the CLI, the
    web view, the ADK service and the MCP server catch `LedgerError` and never import a driver
    (docs/architecture.md, "One door")."""
    for name in dir(cls):
        if name.startswith("_"):
            continue
        value = inspect.getattr_static(cls, name)
        if inspect.isfunction(value):
            setattr(cls, name, _translated(value))
    return cls
