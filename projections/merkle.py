"""The log's Merkle tree: a log-wide projection, folded in seq order in the appending transaction.

Unlike the other projections it is not partitioned: its leaves are every event's chain hash in
seq order, and the tree commits to the order.  So it is never cleared with a partition (a forget
appends to it, and changes none of its hashes: chain hashes survive redaction), only rebuilt
whole by `replay`.  Its position is its own size, read from the table: folding catches up with
whatever the log holds beyond it (an import, a file made before the tree existed), so it can
never silently miss an event.
"""

from __future__ import annotations

import hashlib
import sqlite3

from factledger.ledger.errors import LedgerError
from factledger.ledger.store.eventlog import Event
from factledger.ledger.store.reads import chain_hashes
from factledger.ledger.tlog import merkle
from factledger.projections.merkle_tree import SCHEMA, MerkleTree


class MerkleProjection:
    name = "merkle"
    tables = ("merkle_hashes",)
    schema = SCHEMA
    depends_on: tuple[str, ...] = ()
    log_wide = True                    # the runner folds it in seq order, never per partition

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        """Nothing yet: the leaves are read back from the log when the projector flushes (after
        this event, or once for a batched transaction), since the tree needs the chain hashes
        the event carries no copy of."""

    def flush(self, conn: sqlite3.Connection) -> None:
        self.catch_up(conn)

    def discard(self) -> None:
        """Holds nothing between flushes: what is written is in the transaction, or rolled back."""

    def catch_up(self, conn: sqlite3.Connection, upto: int | None = None,
                 source: sqlite3.Connection | None = None) -> int:
        """Append every event of `source`'s log (default: `conn`'s) after the tree's size, up to
        seq `upto`; returns the new size.  Hashes are written a batch at a time, so a rebuild of
        a million events holds a batch in memory, not the tree."""
        tree = MerkleTree(conn)
        size = tree.size()
        rows = chain_hashes(source or conn, size, upto)
        pending: list[bytes] = []
        base = merkle.stored_count(size)

        def node(level: int, index: int) -> bytes:
            pos = merkle.stored_index(level, index)
            return pending[pos - base] if pos >= base else tree.node(level, index)

        for seq, chain_hash in rows:
            _consecutive(seq, size)
            pending.extend(merkle.append_hashes(merkle.chain_leaf(chain_hash), size, node))
            size += 1
            base, pending = self._flushed(conn, base, pending)
        self._write(conn, base, pending)
        return size

    BATCH = 65_536

    def _flushed(self, conn: sqlite3.Connection, base: int, pending: list[bytes]) -> tuple[int, list[bytes]]:
        """Write the pending hashes once there are a batch of them: (the next base, what is left)."""
        if len(pending) >= self.BATCH:
            return self._write(conn, base, pending), []
        return base, pending

    @staticmethod
    def _write(conn: sqlite3.Connection, base: int, hashes: list[bytes]) -> int:
        conn.executemany("INSERT INTO merkle_hashes (pos, hash) VALUES (?, ?)", enumerate(hashes, start=base))
        return base + len(hashes)

    def rebuild(self, conn: sqlite3.Connection, source: sqlite3.Connection | None = None,
                upto: int | None = None) -> int:
        """Clear and refold from `source`'s log (default: the same connection), in seq order (up
        to seq `upto`: the head a rebuild holds)."""
        conn.execute("DELETE FROM merkle_hashes")
        return self._fold_whole(conn, upto, source or conn)

    def _fold_whole(self, conn: sqlite3.Connection, upto: int | None, source: sqlite3.Connection) -> int:
        """`catch_up` from an empty tree, with the same hashes in the same order: the left sibling
        a new subtree closes is always the last one completed at its level, so the frontier (one
        hash a level) stands in for reading the stored tree back."""
        frontier: list[bytes] = []
        pending: list[bytes] = []
        base = size = 0
        sha256, fromhex = hashlib.sha256, bytes.fromhex
        leaf_prefix, node_prefix = merkle.LEAF_PREFIX, merkle.NODE_PREFIX
        append, batch = pending.append, self.BATCH
        for seq, chain_hash in chain_hashes(source, 0, upto):
            if seq != size + 1:
                _consecutive(seq, size)
            node = sha256(leaf_prefix + fromhex(chain_hash)).digest()
            append(node)
            level, index = 0, size
            while index & 1:
                node = sha256(node_prefix + frontier[level] + node).digest()
                append(node)
                level, index = level + 1, index >> 1
            if level == len(frontier):
                frontier.append(node)
            else:
                frontier[level] = node
            size += 1
            if len(pending) >= batch:
                base = self._write(conn, base, pending)
                pending.clear()
        self._write(conn, base, pending)
        return size


def _consecutive(seq: int, size: int) -> None:
    """The tree's leaves are the log's seqs in order, without a gap."""
    if seq != size + 1:
        raise LedgerError(f"the log has no event {size + 1} (next is {seq}): the tree needs "
                          "consecutive seqs; run `factledger verify`")
