"""`fact_history`: the bitemporal record, one row per interval in which a fact held one state.

Transaction time is `recorded_from` / `recorded_to` (when the ledger believed it); valid time is
`valid_from` / `valid_to` (when it was true in the world, by the ledger's knowledge in that
interval).  `--as-of` and `--valid-at` are plain queries over these columns.  The open interval of
each fact (`recorded_to IS NULL`) is also the fold's memory of that fact; the fold itself, and
how it writes these rows, is `projections/factbatch.py`.

`fact_history_intervals` serves every read of a partition's history: `--as-of T` (the interval
test runs on index entries, which lie together for a partition, so only the intervals that held
at T are read from the table; rows are scattered through the file, one write each over the
partition's lifetime), `--valid-at` (the open intervals) and `history --subject/--predicate`
(the key is tested on index entries too).  One index instead of a key index beside an interval
index: each is a random insert per interval, and at a million events the key index alone was a
sixth of the pages a batch of observations wrote (docs/performance.md).
"""

from __future__ import annotations

import sqlite3

from .factstate import SNAPSHOT_COLUMNS, Snapshot, decode

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
CREATE UNIQUE INDEX IF NOT EXISTS fact_history_open ON fact_history (fact_id) WHERE recorded_to IS NULL;
CREATE INDEX IF NOT EXISTS fact_history_intervals
    ON fact_history (app, user, recorded_from, recorded_to, subject, predicate);
"""

# A key's closed facts that held it for a while, as they stand (their open intervals): the
# decision table's view of the key's past, read only for a statement said before its current fact.
KEY_PAST = (
    f"SELECT {', '.join(SNAPSHOT_COLUMNS).replace('status', 'state')}, recorded_from FROM fact_history"
    " WHERE app = ? AND user = ? AND subject = ? AND predicate = ? AND recorded_to IS NULL"
    " AND state IN ('superseded', 'retracted')")


def lookup(conn: sqlite3.Connection):
    """The latest snapshot of a fact, read from its open interval."""
    sql = (f"SELECT {', '.join(SNAPSHOT_COLUMNS).replace('status', 'state')}, recorded_from"
           " FROM fact_history WHERE fact_id = ? AND recorded_to IS NULL")

    def find(fact_id: str) -> Snapshot | None:
        row = conn.execute(sql, (fact_id,)).fetchone()
        return None if row is None else decode(row)

    return find
