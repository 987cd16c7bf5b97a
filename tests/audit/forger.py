"""A forger's raw connection to a ledger file: the append-only triggers go for the rewrite and
come back, exactly as the store writes them, before the file is left.

A careless forger leaves them dropped, and `verify` names the missing triggers (or, after an open
restored them, the repair); these suites test what the chain and the Merkle root catch on their
own, so their forger is careful.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from factledger.ledger.store.eventlog import SCHEMA


class ForgerConnection(sqlite3.Connection):
    def close(self) -> None:
        if self.in_transaction:
            self.execute("COMMIT")
        self.executescript(SCHEMA)
        super().close()


def raw_forger(path: Path | str) -> sqlite3.Connection:
    """An autocommit connection with the triggers dropped; `close()` puts them back."""
    conn = sqlite3.connect(path, isolation_level=None, factory=ForgerConnection)
    conn.execute("DROP TRIGGER IF EXISTS events_refuse_delete")
    conn.execute("DROP TRIGGER IF EXISTS events_refuse_update")
    return conn
