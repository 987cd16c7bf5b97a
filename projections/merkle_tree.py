"""Reads of the log's Merkle tree as the `merkle` projection stores it: sizes, roots and proofs.

The table holds every perfect subtree's hash at the position `merkle.stored_index` gives it, so a
read is a handful of primary-key lookups whatever the log's length.  The projection that writes it
is `projections/merkle.py`; the proofs (`ledger/audit/proofs.py`) read the tree through this class only.
"""

from __future__ import annotations

import sqlite3

from factledger.ledger.errors import LedgerError
from factledger.ledger.tlog import merkle

SCHEMA = "CREATE TABLE IF NOT EXISTS merkle_hashes (pos INTEGER PRIMARY KEY, hash BLOB NOT NULL);"


class MerkleTree:
    """Reads of the stored tree: the proofs of `ledger.merkle` over `merkle_hashes`."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def size(self) -> int:
        last = self.conn.execute("SELECT MAX(pos) FROM merkle_hashes").fetchone()[0]
        return 0 if last is None else merkle.size_for_count(last + 1)

    def node(self, level: int, index: int) -> bytes:
        row = self.conn.execute("SELECT hash FROM merkle_hashes WHERE pos = ?",
                                (merkle.stored_index(level, index),)).fetchone()
        if row is None:
            raise LedgerError(f"the Merkle tree lacks node ({level}, {index}): run `factledger replay`")
        return bytes(row[0])

    def _within(self, size: int) -> None:
        have = self.size()
        if size > have:
            raise LedgerError(f"the ledger's tree has {have} leaves, not {size}")

    def root(self, size: int) -> bytes:
        self._within(size)
        return merkle.root(size, self.node)

    def inclusion(self, index: int, size: int) -> list[bytes]:
        self._within(size)
        return merkle.inclusion_path(index, size, self.node)

    def consistency(self, old: int, new: int) -> list[bytes]:
        self._within(new)
        return merkle.consistency_path(old, new, self.node)
