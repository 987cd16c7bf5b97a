"""`facts_current`: one row per open fact (current or disputed), what readers and `decide` see.

It mirrors the open intervals of `fact_history` whose state is open, so the decision table's one
read per candidate is a small indexed lookup on `(app, user, subject, predicate)`.  The rows are
written by the facts fold (`projections/factbatch.py`).
"""

from __future__ import annotations

from .factstate import SNAPSHOT_COLUMNS

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

# A key's open facts, whole, with when each one's open interval began: what `decide` needs and
# what the facts fold needs to carry on from them, in one read (rowid order within the key).
KEY_SNAPSHOTS = (
    f"SELECT {', '.join('f.' + c for c in SNAPSHOT_COLUMNS)}, h.recorded_from"
    " FROM facts_current f JOIN fact_history h ON h.fact_id = f.fact_id AND h.recorded_to IS NULL"
    " WHERE f.app = ? AND f.user = ? AND f.subject = ? AND f.predicate = ? ORDER BY f.rowid")


def partition_keys(conn, app: str, user: str) -> list[dict]:
    """The partition's open facts as an extractor sees them (subject, predicate, value)."""
    rows = conn.execute("SELECT subject, predicate, value FROM facts_current WHERE app = ? AND "
                        "user = ? ORDER BY subject, predicate, said_at, fact_id", (app, user))
    return [{"subject": s, "predicate": p, "value": v} for s, p, v in rows]
