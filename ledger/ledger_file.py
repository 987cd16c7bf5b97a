"""The ledger file on disk, before SQLite touches it: private from birth, and only ever a ledger.

A ledger holds personal data, so a new file is created owner-only (0600) before SQLite opens it;
SQLite gives its `-wal` and `-shm` files the main file's permissions, so they are private too.

Opening a file switches it to WAL mode and adds the ledger's tables, which would quietly alter an
unrelated SQLite database given by mistake (`--db other.sqlite`).  So an existing database with
tables but no event log is refused before anything is written.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from .errors import LedgerError

PRIVATE = 0o600
SQLITE_MAGIC = b"SQLite format 3\x00"


def prepare(path: str | os.PathLike, create: bool) -> None:
    """Create the file 0600 if it is missing (and `create`), or check an existing one is a ledger."""
    text = str(path)
    if text == ":memory:" or text.startswith("file:"):
        return
    target = Path(text)
    if not target.exists():
        if create:
            try:
                os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE))
            except FileExistsError:           # another process made it first: check theirs
                pass
            except OSError as exc:
                raise LedgerError(f"cannot create ledger {text}: {exc.strerror or exc}") from None
        return
    refuse_foreign(target)


def refuse_foreign(target: Path) -> None:
    """Refuse an SQLite database that has tables but no event log: it is someone else's data."""
    try:
        with open(target, "rb") as handle:
            if handle.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                return                        # empty, or not SQLite: opening reports it plainly
    except OSError:
        return
    try:
        conn = sqlite3.connect(f"{target.resolve().as_uri()}?mode=ro", uri=True)
        try:
            tables = {row[0] for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return                                # damaged or locked: verify and the open report it
    if tables and "events" not in tables:
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        raise LedgerError(f"{target} is an SQLite database but not a factledger ledger "
                          f"(tables: {shown}); refusing to change it")
