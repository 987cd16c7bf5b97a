"""The raw-SQLite baseline every figure is divided by, run in the same process on the same data.

`RawStore` is the least an event store with our guarantees could do: the same `events` table (the
ledger's own DDL), the same pragmas and checkpoint thread, one `BEGIN IMMEDIATE` per batch, and for every
event an orjson
body with sorted keys, a random salt, a sha256 commitment and a sha256 link to the previous hash,
written with one `executemany`.  No validation, no decision, no projection.  `raw_read` and
`raw_chain` are the matching floors for replay and verify.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
import uuid

import orjson

from factledger.ledger.store import chain
from factledger.ledger.store.eventlog import SCHEMA, connect
from factledger.ledger.store.sqlite.wal import WalCheckpointer
from factledger.ledger.vocabulary.clock import iso, system_clock

_INSERT = ("INSERT INTO events (seq, event_id, type, app, user, recorded_at, body, salt,"
           " commitment, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?,?,?)")
_SORT = orjson.OPT_SORT_KEYS
_CTAG = chain.COMMITMENT_TAG
_LTAG = chain.LINK_TAG


class RawStore:
    def __init__(self, path: str, synchronous: str = "FULL"):
        self.conn = connect(path, synchronous=synchronous)
        self.conn.executescript("BEGIN IMMEDIATE;" + SCHEMA + "COMMIT;")
        # The ledger's checkpoint discipline too (ledger/store/sqlite/wal.py): WAL checkpoints on a
        # thread of their own, so neither side's timed commits include them.
        self.checkpointer = WalCheckpointer(self.conn, synchronous)
        self.checkpointer.take_over()
        self.seq, self.hash = 0, chain.GENESIS

    def insert(self, events: list[tuple[str, str, str, dict]]) -> float:
        """Append (type, app, user, body) rows in one transaction; returns the seconds it took."""
        t0 = time.perf_counter()
        conn = self.conn
        self.checkpointer.before_begin(conn)
        conn.execute("BEGIN IMMEDIATE")
        now = iso(system_clock())
        seq, prev = self.seq, self.hash
        rows = []
        sha = hashlib.sha256
        for type_, app, user, body in events:
            raw = orjson.dumps(body, option=_SORT)
            salt = os.urandom(16)
            commit = sha(_CTAG + salt + raw).hexdigest()
            seq += 1
            event_id = str(uuid.uuid4())
            digest = sha(_LTAG)
            digest.update(bytes.fromhex(prev))
            digest.update(seq.to_bytes(8, "big"))
            digest.update(b"\x00".join((event_id.encode(), type_.encode(), now.encode(), b"")))
            digest.update(bytes.fromhex(commit))
            link = digest.hexdigest()
            rows.append((seq, event_id, type_, app, user, now, raw.decode(), salt, commit, prev, link))
            prev = link
        conn.executemany(_INSERT, rows)
        conn.execute("COMMIT")
        self.checkpointer.after_commit()
        took = time.perf_counter() - t0
        self.seq, self.hash = seq, prev
        return took

    def close(self) -> None:
        self.checkpointer.close()
        self.conn.close()


def raw_read(conn: sqlite3.Connection) -> tuple[int, float]:
    """Read every event row in seq order and `orjson.loads` its body: the floor for replay."""
    t0 = time.perf_counter()
    loads = orjson.loads
    count = 0
    for row in conn.execute("SELECT seq, event_id, type, app, user, recorded_at, body FROM events"
                            " ORDER BY seq"):
        if row[6] is not None:
            loads(row[6])
        count += 1
    return count, time.perf_counter() - t0


def raw_chain(conn: sqlite3.Connection) -> tuple[int, float]:
    """Recompute every commitment and link over the same rows, nothing else: the floor for verify."""
    t0 = time.perf_counter()
    sha = hashlib.sha256
    prev = chain.GENESIS
    count = 0
    ok = True
    for seq, event_id, type_, recorded_at, body, salt, commit, prev_hash, link in conn.execute(
            "SELECT seq, event_id, type, recorded_at, body, salt, commitment, prev_hash, hash"
            " FROM events ORDER BY seq"):
        if body is not None:
            ok &= sha(_CTAG + salt + body.encode()).hexdigest() == commit
        digest = sha(_LTAG)
        digest.update(bytes.fromhex(prev))
        digest.update(seq.to_bytes(8, "big"))
        digest.update(b"\x00".join((event_id.encode(), type_.encode(), recorded_at.encode(), b"")))
        digest.update(bytes.fromhex(commit))
        ok &= digest.hexdigest() == link and prev_hash == prev
        prev = link
        count += 1
    if not ok:
        raise RuntimeError("raw chain check failed: the bench database is not a valid ledger")
    return count, time.perf_counter() - t0
