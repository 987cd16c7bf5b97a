"""Driver errors as factledger's, for the few callers above the store that run SQL of their own.

The PostgreSQL connection raises factledger's classes itself (`ledger/store/postgres/errors.py`);
an SQLite connection is `sqlite3`'s own, so a statement run on it outside the store's
transaction raises `sqlite3`'s errors.  `storage_errors()` turns those into factledger's
(`ledger/store/sqlite/errors.py`), so a caller catches `LedgerBusy`, `ConstraintViolation`,
`StorageError`... whatever the engine, and never imports a driver.
"""

from __future__ import annotations

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
