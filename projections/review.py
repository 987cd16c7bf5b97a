"""The review queue: candidates held for a person (unknown predicate, ambiguous duplicate)."""

from __future__ import annotations

import sqlite3

import orjson

from factledger.ledger.eventrow import Event

SCHEMA = """
CREATE TABLE IF NOT EXISTS review_queue (
    hold_id TEXT PRIMARY KEY, app TEXT NOT NULL, user TEXT NOT NULL, held_seq INTEGER NOT NULL,
    held_at TEXT NOT NULL, reason TEXT NOT NULL, candidate TEXT NOT NULL,
    status TEXT NOT NULL, closed_seq INTEGER, closed_reason TEXT
);
CREATE INDEX IF NOT EXISTS review_queue_partition ON review_queue (app, user, status);
"""


class ReviewProjection:
    name = "review"
    tables = ("review_queue",)
    schema = SCHEMA

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        body = event.body
        if body is None:
            return
        if event.type == "CandidateHeld":
            conn.execute(
                "INSERT OR REPLACE INTO review_queue VALUES (?,?,?,?,?,?,?,?,?,?)",
                (body["hold_id"], event.app, event.user, event.seq, event.recorded_at,
                 body["reason"], orjson.dumps(body["candidate"], option=orjson.OPT_SORT_KEYS).decode(),
                 "open", None, None))
        elif body.get("hold_id") and event.type in ("FactObserved", "FactReinforced",
                                                    "CandidateRejected"):
            status = "rejected" if event.type == "CandidateRejected" else "accepted"
            conn.execute(
                "UPDATE review_queue SET status = ?, closed_seq = ?, closed_reason = ? WHERE hold_id = ?",
                (status, event.seq, body.get("reason") or body.get("rule"), body["hold_id"]))
