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

    def insert(self, events: list[tuple[str, str, str, dict]], rows: dict | None = None) -> float:
        """Append (type, app, user, body) rows in one transaction, and with `rows` (table ->
        rows, `SameRowsStore`) those projection rows too; returns the seconds it took."""
        t0 = time.perf_counter()
        conn = self.conn
        self.checkpointer.before_begin(conn)
        conn.execute("BEGIN IMMEDIATE")
        now = iso(system_clock())
        seq, prev = self.seq, self.hash
        log_rows = []
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
            log_rows.append((seq, event_id, type_, app, user, now, raw.decode(), salt, commit, prev, link))
            prev = link
        conn.executemany(_INSERT, log_rows)
        for table, table_rows in (rows or {}).items():
            if table_rows:
                marks = ", ".join("?" for _ in table_rows[0])
                conn.executemany(f"INSERT OR REPLACE INTO {table} VALUES ({marks})", table_rows)
        conn.execute("COMMIT")
        self.checkpointer.after_commit()
        took = time.perf_counter() - t0
        self.seq, self.hash = seq, prev
        return took

    def close(self) -> None:
        self.checkpointer.close()
        self.conn.close()


class SameRowsStore(RawStore):
    """The honest floor of the write path: the raw baseline's events and, in the same transaction,
    the projection rows the ledger wrote for the same batch (`batch_rows`), into the ledger's own
    tables and indexes (`Projector().schema`), one `executemany` per table.  No decision, no fold:
    what writing the same rows costs SQLite from Python, and nothing else."""

    def __init__(self, path: str, schema: str, synchronous: str = "FULL"):
        super().__init__(path, synchronous)
        self.conn.executescript("BEGIN IMMEDIATE;" + schema + "COMMIT;")


# What each projection table holds that a batch wrote: for the facts its events name (`?`: a
# `json_each` list of their ids), the intervals it opened or closed, their provenance rows and the
# open ones' facts_current rows; by seq (after which the batch began) the rest; the Merkle nodes
# past the tree's size before it.
_BY_FACT = {
    "fact_history": ("SELECT h.* FROM json_each(?) j JOIN fact_history h ON h.fact_id = j.value"
                     " WHERE h.from_seq > ? OR h.ended_by > ?"),
    "facts_current": "SELECT f.* FROM json_each(?) j JOIN facts_current f ON f.fact_id = j.value",
    "fact_events": "SELECT e.* FROM json_each(?) j JOIN fact_events e ON e.fact_id = j.value WHERE e.seq > ?",
}
_BY_SEQ = ("recall_index", "key_negations", "fact_vectors")
_NAMES_A_FACT = ("fact_id", "by_fact_id", "disputes", "winner_id", "split_id")


def batch_rows(conn: sqlite3.Connection, after: int, merkle_after: int,
               events: list[tuple[str, str, str, dict]]) -> dict[str, list[tuple]]:
    """The projection rows the batch of `events` (appended after seq `after`) left, table by table."""
    ids = {body[k] for _t, _a, _u, body in events if body for k in _NAMES_A_FACT if body.get(k)}
    ids |= {i for _t, _a, _u, body in events if body for i in body.get("loser_ids", ())}
    listed = orjson.dumps(sorted(ids)).decode()
    rows = {table: conn.execute(sql, (listed, *(after,) * (sql.count("?") - 1))).fetchall()
            for table, sql in _BY_FACT.items()}
    for table in _BY_SEQ:
        rows[table] = conn.execute(f"SELECT * FROM {table} WHERE seq > ?", (after,)).fetchall()
    rows["merkle_hashes"] = conn.execute("SELECT * FROM merkle_hashes WHERE pos > ?", (merkle_after,)).fetchall()
    return rows


def merkle_size(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT coalesce(max(pos), -1) FROM merkle_hashes").fetchone()[0]


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
