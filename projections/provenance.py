"""`fact_events`: which events touched which fact, so `why` and forget-planning are index lookups."""

from __future__ import annotations

import sqlite3

from ledger.store import Event

SCHEMA = """
CREATE TABLE IF NOT EXISTS fact_events (
    fact_id TEXT NOT NULL, seq INTEGER NOT NULL, app TEXT NOT NULL, user TEXT NOT NULL,
    type TEXT NOT NULL, role TEXT NOT NULL,
    PRIMARY KEY (fact_id, seq, role)
);
CREATE INDEX IF NOT EXISTS fact_events_partition ON fact_events (app, user);
"""

# Body fields that name a fact, and the role the named fact plays in that event.
_REFERENCES = (("fact_id", "subject"), ("by_fact_id", "replacement"), ("disputes", "disputed"),
               ("winner_id", "winner"))


class ProvenanceProjection:
    name = "provenance"
    tables = ("fact_events",)
    schema = SCHEMA

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        body = event.body
        if body is None:
            return
        rows = [(body[field], role) for field, role in _REFERENCES if body.get(field)]
        rows += [(loser, "loser") for loser in body.get("loser_ids", ())]
        for fact_id, role in rows:
            conn.execute("INSERT OR IGNORE INTO fact_events VALUES (?,?,?,?,?,?)",
                         (fact_id, event.seq, event.app, event.user, event.type, role))
