"""`facts_current`: one row per open fact (current or disputed), what readers and `decide` see.

It mirrors the open intervals of `fact_history` whose state is open, so the decision table's one
read per candidate is a small indexed lookup on `(app, user, subject, predicate)`.
"""

from __future__ import annotations

import sqlite3

from .factstate import OPEN_STATES, SNAPSHOT_COLUMNS, Snapshot, encode

SCHEMA = """
CREATE TABLE IF NOT EXISTS facts_current (
    fact_id TEXT PRIMARY KEY, app TEXT NOT NULL, user TEXT NOT NULL,
    subject TEXT NOT NULL, predicate TEXT NOT NULL, value TEXT NOT NULL, value_key TEXT NOT NULL,
    status TEXT NOT NULL, basis TEXT NOT NULL, base_confidence REAL NOT NULL,
    reinforcements INTEGER NOT NULL, confidence REAL NOT NULL, sensitivity TEXT NOT NULL,
    kind TEXT NOT NULL, cardinality TEXT NOT NULL, said_at TEXT NOT NULL,
    recorded_at TEXT NOT NULL, effective_date TEXT, confirmed_at TEXT NOT NULL,
    confirmed_by TEXT NOT NULL, session TEXT NOT NULL, evidence_event TEXT NOT NULL,
    quote TEXT NOT NULL, author TEXT NOT NULL, disputes TEXT NOT NULL, sessions TEXT NOT NULL,
    observed_seq INTEGER NOT NULL, valid_to TEXT
);
CREATE INDEX IF NOT EXISTS facts_current_key ON facts_current (app, user, subject, predicate);
"""

# An upsert that updates the row in place: INSERT OR REPLACE would delete the row and insert a
# new one (new rowid), rewriting both index entries every time a fact is reinforced.
_UPSERT = (f"INSERT INTO facts_current ({', '.join(SNAPSHOT_COLUMNS)}) "
           f"VALUES ({', '.join('?' for _ in SNAPSHOT_COLUMNS)}) ON CONFLICT (fact_id) DO UPDATE SET "
           + ", ".join(f"{c} = excluded.{c}" for c in SNAPSHOT_COLUMNS if c != "fact_id"))


def record(conn: sqlite3.Connection, changes: list[tuple[Snapshot, str]]) -> None:
    for snap, _reason in changes:
        if snap["status"] in OPEN_STATES:
            conn.execute(_UPSERT, encode(snap))
        else:
            conn.execute("DELETE FROM facts_current WHERE fact_id = ?", (snap["fact_id"],))


def open_facts(conn: sqlite3.Connection, app: str, user: str, subject: str, predicate: str):
    """The rows `decide` needs for one key."""
    return conn.execute(
        "SELECT fact_id, value, basis, status, said_at, sessions, effective_date FROM facts_current"
        " WHERE app = ? AND user = ? AND subject = ? AND predicate = ?",
        (app, user, subject, predicate),
    ).fetchall()
