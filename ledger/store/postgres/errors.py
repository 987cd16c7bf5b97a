"""PostgreSQL's errors as factledger's: the one place psycopg's exceptions are read.

`PgConnection` passes every psycopg error through `translate` (the classes are
`ledger/errors.py`'s, the messages the ones the SQLite engine gives for the same case:
`ledger/store/sqlite/errors.py`), so nothing above the store sees a driver's error, or needs to
know which driver raised it.
"""

from __future__ import annotations

from factledger.ledger.errors import (
    ConstraintViolation,
    LedgerBusy,
    LedgerDamaged,
    LedgerFull,
    LedgerReadOnly,
    StorageError,
)
from factledger.ledger.store.sqlite.errors import BUSY, FULL, READ_ONLY


def is_driver_error(exc: BaseException) -> bool:
    return type(exc).__module__.startswith("psycopg")


def translate(exc: BaseException) -> StorageError:
    """The factledger error for one of psycopg's (`detail` keeps the server's first line).

    psycopg is imported here, not with the module: an error of psycopg's means the driver is
    loaded already, and a SQLite ledger's commands, which reach this module through the one
    engine factory, need not load PostgreSQL's driver (about 0.1 s, docs/performance.md)."""
    import psycopg.errors as pg_errors

    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, (pg_errors.LockNotAvailable, pg_errors.QueryCanceled, pg_errors.DeadlockDetected,
                        pg_errors.SerializationFailure)):
        return LedgerBusy(BUSY, f"database is locked ({text})")
    if isinstance(exc, (pg_errors.IntegrityError, pg_errors.RaiseException)):
        return ConstraintViolation(text, text)
    if isinstance(exc, (pg_errors.DataCorrupted, pg_errors.IndexCorrupted)):
        return LedgerDamaged(f"the ledger file is not usable: {text}", text)
    if isinstance(exc, (pg_errors.ProgrammingError, pg_errors.InternalError, pg_errors.OperationalError)):
        # a read-only transaction (default_transaction_read_only, a hot standby) is an InternalError
        if isinstance(exc, pg_errors.ReadOnlySqlTransaction) or "read-only" in text or "readonly" in text:
            return LedgerReadOnly(READ_ONLY, text)
        if "full" in text:
            return LedgerFull(FULL, text)
        return StorageError(f"database error: {text}", text)
    return StorageError(f"the ledger file is not usable: {text}", text)
