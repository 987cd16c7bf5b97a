"""`fact_history`: the bitemporal record, one row per interval in which a fact held one state.

Transaction time is `recorded_from` / `recorded_to` (when the ledger believed it); valid time is
`valid_from` / `valid_to` (when it was true in the world, by the ledger's knowledge in that
interval).  `--as-of` and `--valid-at` are plain queries over these columns.  The open interval of
each fact (`recorded_to IS NULL`) is also the fold's memory of that fact.

`fact_history_as_of` serves `--as-of T` for a long history: the interval test runs on index
entries, which lie together for a partition, so only the intervals that held at T are read from
the table (rows are scattered through the file, one write each over the partition's lifetime).
"""

from __future__ import annotations

import sqlite3

import orjson

from .factstate import SNAPSHOT_COLUMNS, Snapshot, encode

HISTORY_COLUMNS = tuple("state" if c == "status" else c for c in SNAPSHOT_COLUMNS) + (
    "from_seq", "valid_from", "recorded_from", "recorded_to", "ended_by", "reason")

SCHEMA = """
CREATE TABLE IF NOT EXISTS fact_history (
    fact_id TEXT NOT NULL, app TEXT NOT NULL, user TEXT NOT NULL,
    subject TEXT NOT NULL, predicate TEXT NOT NULL, value TEXT NOT NULL, value_key TEXT NOT NULL,
    state TEXT NOT NULL, basis TEXT NOT NULL, base_confidence REAL NOT NULL,
    reinforcements INTEGER NOT NULL, confidence REAL NOT NULL, sensitivity TEXT NOT NULL,
    kind TEXT NOT NULL, cardinality TEXT NOT NULL, said_at TEXT NOT NULL,
    recorded_at TEXT NOT NULL, effective_date TEXT, confirmed_at TEXT NOT NULL,
    confirmed_by TEXT NOT NULL, session TEXT NOT NULL, evidence_event TEXT NOT NULL,
    quote TEXT NOT NULL, author TEXT NOT NULL, disputes TEXT NOT NULL, sessions TEXT NOT NULL,
    observed_seq INTEGER NOT NULL, valid_to TEXT,
    from_seq INTEGER NOT NULL, valid_from TEXT NOT NULL, recorded_from TEXT NOT NULL,
    recorded_to TEXT, ended_by INTEGER, reason TEXT,
    PRIMARY KEY (fact_id, from_seq)
);
CREATE INDEX IF NOT EXISTS fact_history_key ON fact_history (app, user, subject, predicate);
CREATE UNIQUE INDEX IF NOT EXISTS fact_history_open ON fact_history (fact_id) WHERE recorded_to IS NULL;
CREATE INDEX IF NOT EXISTS fact_history_as_of ON fact_history (app, user, recorded_from, recorded_to);
"""

_INSERT = (f"INSERT INTO fact_history ({', '.join(HISTORY_COLUMNS)}) "
           f"VALUES ({', '.join('?' for _ in HISTORY_COLUMNS)})")
_REPLACE = (f"UPDATE fact_history SET {', '.join(c + ' = ?' for c in HISTORY_COLUMNS[:len(SNAPSHOT_COLUMNS)])}"
            " WHERE fact_id = ? AND recorded_to IS NULL AND recorded_from = ?")
_MORE_REASON = ("UPDATE fact_history SET reason = reason || ', ' || ? WHERE fact_id = ?"
                " AND recorded_to = ? AND instr(reason, ?) = 0")
_CLOSE = ("UPDATE fact_history SET recorded_to = ?, ended_by = ?, reason = ? "
          "WHERE fact_id = ? AND recorded_to IS NULL")


_OPEN_FROM = "_open_from"     # a snapshot's note of when its open interval began (not a column)
_UNKNOWN = object()
_OPEN = "SELECT recorded_from FROM fact_history WHERE fact_id = ? AND recorded_to IS NULL"


def lookup(conn: sqlite3.Connection):
    """The latest snapshot of a fact, read from its open interval."""
    sql = (f"SELECT {', '.join(SNAPSHOT_COLUMNS).replace('status', 'state')}, recorded_from"
           " FROM fact_history WHERE fact_id = ? AND recorded_to IS NULL")

    def find(fact_id: str) -> Snapshot | None:
        row = conn.execute(sql, (fact_id,)).fetchone()
        if row is None:
            return None
        snap = dict(zip(SNAPSHOT_COLUMNS, row))
        snap["disputes"] = orjson.loads(snap["disputes"])
        snap["sessions"] = orjson.loads(snap["sessions"])
        snap[_OPEN_FROM] = row[-1]
        return snap

    return find


def record(conn: sqlite3.Connection, seq: int, recorded_at: str,
           changes: list[tuple[Snapshot, str]]) -> None:
    """Close each fact's open interval and open the next.

    An interval that would last no transaction time (several events of one transaction touching
    one fact) is overwritten instead: no `--as-of` query could ever return it, and the log keeps
    every step for `why`.
    """
    for snap, reason in changes:
        fact_id = snap["fact_id"]
        # When did the fact's open interval begin?  A snapshot read by `lookup` knows; a new one
        # (FactObserved) asks once.  Same outcome as trying the overwrite and then the close,
        # with one indexed read at most instead of two writes that usually match nothing.
        opened = snap.get(_OPEN_FROM, _UNKNOWN)
        if opened is _UNKNOWN:
            row = conn.execute(_OPEN, (fact_id,)).fetchone()
            opened = row[0] if row else None
        values = encode(snap)
        if opened == recorded_at:
            conn.execute(_REPLACE, values + [fact_id, recorded_at])
            conn.execute(_MORE_REASON, (reason, fact_id, recorded_at, reason))
            continue
        if opened is not None:
            conn.execute(_CLOSE, (recorded_at, seq, reason, fact_id))
        conn.execute(_INSERT, values + [seq, snap["said_at"], recorded_at, None, None, None])
