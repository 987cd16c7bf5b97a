"""`fact_history`: the bitemporal record, one row per interval in which a fact held one state.

Transaction time is `recorded_from` / `recorded_to` (when the ledger believed it); valid time is
`valid_from` / `valid_to` (when it was true in the world, by the ledger's knowledge in that
interval).  `--as-of` and `--valid-at` are plain queries over these columns.  The open interval of
each fact (`recorded_to IS NULL`) is also the fold's memory of that fact.
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
"""

_INSERT = (f"INSERT INTO fact_history ({', '.join(HISTORY_COLUMNS)}) "
           f"VALUES ({', '.join('?' for _ in HISTORY_COLUMNS)})")
_REPLACE = (f"UPDATE fact_history SET {', '.join(c + ' = ?' for c in HISTORY_COLUMNS[:len(SNAPSHOT_COLUMNS)])}"
            " WHERE fact_id = ? AND recorded_to IS NULL AND recorded_from = ?")
_MORE_REASON = ("UPDATE fact_history SET reason = reason || ', ' || ? WHERE fact_id = ?"
                " AND recorded_to = ? AND instr(reason, ?) = 0")
_CLOSE = ("UPDATE fact_history SET recorded_to = ?, ended_by = ?, reason = ? "
          "WHERE fact_id = ? AND recorded_to IS NULL")


def lookup(conn: sqlite3.Connection):
    """The latest snapshot of a fact, read from its open interval."""
    sql = (f"SELECT {', '.join(SNAPSHOT_COLUMNS).replace('status', 'state')} FROM fact_history "
           "WHERE fact_id = ? AND recorded_to IS NULL")

    def find(fact_id: str) -> Snapshot | None:
        row = conn.execute(sql, (fact_id,)).fetchone()
        if row is None:
            return None
        snap = dict(zip(SNAPSHOT_COLUMNS, row))
        snap["disputes"] = orjson.loads(snap["disputes"])
        snap["sessions"] = orjson.loads(snap["sessions"])
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
        if conn.execute(_REPLACE, encode(snap) + [snap["fact_id"], recorded_at]).rowcount:
            conn.execute(_MORE_REASON, (reason, snap["fact_id"], recorded_at, reason))
            continue
        conn.execute(_CLOSE, (recorded_at, seq, reason, snap["fact_id"]))
        conn.execute(_INSERT, encode(snap) + [seq, snap["said_at"], recorded_at, None, None, None])
