"""The ledger file on disk, before SQLite touches it: private from birth, and only ever a ledger.

A ledger holds personal data, so a new file is created owner-only (0600) before SQLite opens it;
SQLite gives its `-wal` and `-shm` files the main file's permissions, so they are private too.

A file made by an older version (or copied, or restored) may be readable by others; opening it
takes the group's and others' bits off it and its `-wal` and `-shm` (the owner's stay: 0644
becomes 0600, a read-only 0444 becomes 0400) and says so (`prepare` returns the notes; the CLI prints
them as warnings).  A file the caller does not own is left as it is, and reported.

Opening a file switches it to WAL mode and adds the ledger's tables, which would quietly alter an
unrelated SQLite database given by mistake (`--db other.sqlite`).  So an existing database with
tables but no event log is refused before anything is written.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import warnings
from pathlib import Path

from factledger.ledger.errors import LedgerError, NotALedger

PRIVATE = 0o600
SQLITE_MAGIC = b"SQLite format 3\x00"


def prepare(path: str | os.PathLike, create: bool) -> list[str]:
    """Create the file 0600 if it is missing (and `create`), or check an existing one is a ledger
    and make it private; the notes say what was tightened (or could not be)."""
    text = str(path)
    if text == ":memory:" or text.startswith("file:"):
        return []
    target = Path(text)
    if not target.exists():
        if create:
            try:
                os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE))
            except FileExistsError:           # another process made it first: check theirs
                pass
            except OSError as exc:
                raise LedgerError(f"cannot create ledger {text}: {exc.strerror or exc}") from None
        return []
    refuse_foreign(target)
    notes = [note for name in (text, text + "-wal", text + "-shm") if (note := tighten(Path(name)))]
    for note in notes:
        warnings.warn(f"factledger: {note}", RuntimeWarning, stacklevel=5)
    return notes


def tighten(target: Path) -> str | None:
    """Make an existing file owner-only; a note when it was not (None when it was, or is absent)."""
    try:
        info = target.stat()
    except OSError:
        return None
    loose = stat.S_IMODE(info.st_mode)
    if not loose & 0o077 or not stat.S_ISREG(info.st_mode):
        return None
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return (f"{target} is readable by others ({loose:04o}) and owned by another user: "
                "not changed; make it 0600")
    private = loose & 0o700                   # the owner keeps what it had (a read-only file stays so)
    try:
        os.chmod(target, private)
    except OSError as exc:
        return f"{target} is readable by others ({loose:04o}) and could not be made private: {exc.strerror}"
    return f"{target} was readable by others ({loose:04o}): made owner-only ({private:04o})"


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
        raise NotALedger(f"{target} is an SQLite database but not a factledger ledger "
                          f"(tables: {shown}); refusing to change it")
