"""SQLite's errors as factledger's: the one place `sqlite3`'s exceptions are read.

The classes are `ledger/errors.py`'s (`LedgerBusy`, `LedgerReadOnly`, `LedgerFull`,
`LedgerDamaged`, `NotALedger`, `ConstraintViolation`, and `StorageError` for the rest); the
messages are the ones the CLI has always printed for each case.  `ledger/store/postgres/errors.py`
does the same for psycopg's.
"""

from __future__ import annotations

import sqlite3

from factledger.ledger.errors import (
    ConstraintViolation,
    LedgerBusy,
    LedgerDamaged,
    LedgerFull,
    LedgerReadOnly,
    NotALedger,
    StorageError,
)

BUSY = "the ledger is busy: another writer held it past the busy timeout; try again"
READ_ONLY = "the ledger file is read-only"
FULL = "the disk (or the ledger's page limit) is full; nothing was written"


def is_storage(exc: BaseException) -> bool:
    """An error of the database (busy, read-only, full, damaged, a refused write), not a misuse of
    the driver (a closed connection, wrong bindings: a bug, left as it is)."""
    return isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.ProgrammingError)


def translate(exc: sqlite3.Error) -> StorageError:
    """The factledger error for one of SQLite's (`detail` keeps SQLite's own words)."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError):
        if "locked" in text or "busy" in text:
            return LedgerBusy(BUSY, text)
        if "readonly" in text or "read-only" in text:
            return LedgerReadOnly(READ_ONLY, text)
        if "full" in text:
            return LedgerFull(FULL, text)
        return StorageError(f"database error: {text}", text)
    if isinstance(exc, sqlite3.IntegrityError):
        return ConstraintViolation(text, text)
    if "file is not a database" in text:
        return NotALedger(f"the ledger file is not usable: {text}", text)
    if "malformed" in text or "corrupt" in text:
        return LedgerDamaged(f"the ledger file is not usable: {text}", text)
    return StorageError(f"the ledger file is not usable: {text}", text)


def opening(path, exc: sqlite3.Error) -> StorageError:
    """An error met while opening the file, said with its name."""
    error = translate(exc)
    if isinstance(error, LedgerReadOnly):
        return LedgerReadOnly(f"cannot open ledger {path}: the file, or the folder its WAL files "
                              "go in, is read-only", str(exc))
    return type(error)(f"cannot open ledger {path}: {exc}", str(exc))
