"""The review queue: candidates held for a person (unknown predicate, ambiguous duplicate).

The queue is a projection a writer of the file can edit, and a reviewer acts on what it lists:
every item read here (`held_rows`, `open_item`) is checked against the log first (`_checked`):
its `CandidateHeld` event (body against commitment) must hold the same partition, candidate,
reason and time, and its status must be what the events naming its `hold_id` say.  A row that
disagrees raises `ProjectionMismatch`; accept and reject build their events from the checked item.
"""

from __future__ import annotations

import sqlite3

import orjson

from factledger.ledger.domain.eventrow import CLOSES_HOLD, Event
from factledger.ledger.domain.events import EVENT
from factledger.ledger.errors import LedgerError, ProjectionMismatch
from factledger.ledger.store.eventlog import equal_filters
from factledger.ledger.store.reads import checked_events, hold_closings

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
    depends_on: tuple[str, ...] = ()

    # the events `apply` acts on (a rebuild hands it no others: projections/runner.py)
    event_types = frozenset((EVENT.CandidateHeld, *CLOSES_HOLD))

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        body = event.body
        if body is None:
            return
        if event.type == EVENT.CandidateHeld:
            conn.execute(
                "INSERT OR REPLACE INTO review_queue VALUES (?,?,?,?,?,?,?,?,?,?)",
                (body["hold_id"], event.app, event.user, event.seq, event.recorded_at,
                 body["reason"], orjson.dumps(body["candidate"], option=orjson.OPT_SORT_KEYS).decode(),
                 "open", None, None))
        elif body.get("hold_id") and event.type in CLOSES_HOLD:
            status = "rejected" if event.type == EVENT.CandidateRejected else "accepted"
            conn.execute(
                "UPDATE review_queue SET status = ?, closed_seq = ?, closed_reason = ? WHERE hold_id = ?",
                (status, event.seq, body.get("reason") or body.get("rule"), body["hold_id"]))


# Reading the queue: the review commands and the reviewer's verbs (ledger/review/queue.py).

COLUMNS = ("hold_id", "app", "user", "held_seq", "held_at", "reason", "candidate", "status",
           "closed_seq", "closed_reason")


def _item(row) -> dict:
    item = dict(zip(COLUMNS, row))
    candidate = orjson.loads(item["candidate"])
    item["candidate"] = candidate
    for key in ("subject", "predicate", "value", "quote", "session", "evidence_event", "author"):
        item[key] = candidate.get(key)
    return item


def held_rows(conn: sqlite3.Connection, app: str | None = None, user: str | None = None,
              status: str | None = "open") -> list[dict]:
    where, args = equal_filters(app=app, user=user, status=status)
    sql = f"SELECT {', '.join(COLUMNS)} FROM review_queue WHERE 1 = 1" + where
    return _checked(conn, [_item(row) for row in conn.execute(sql + " ORDER BY held_seq", args)])


def held_counts(conn: sqlite3.Connection, app: str | None = None) -> dict[tuple[str, str], int]:
    """(app, user) -> number of candidates still held, for every partition (of one app, if given)."""
    where, args = equal_filters(app=app)
    return {(a, u): n for a, u, n in conn.execute(
        "SELECT app, user, COUNT(*) FROM review_queue WHERE status = 'open'" + where + " GROUP BY app, user",
        args)}


def open_item(conn: sqlite3.Connection, hold_id: str) -> dict:
    """The one queue item named (one indexed read), which must still be open."""
    row = conn.execute(f"SELECT {', '.join(COLUMNS)} FROM review_queue WHERE hold_id = ?",
                       (hold_id,)).fetchone() if hold_id else None
    if row is None:
        raise LedgerError(f"no held candidate {hold_id!r} (see `factledger review`)")
    item = _checked(conn, [_item(row)])[0]
    if item["status"] != "open":
        raise LedgerError(f"held candidate {hold_id} is already {item['status']}")
    return item


def _checked(conn: sqlite3.Connection, items: list[dict]) -> list[dict]:
    """The items, each checked against the log: its held event and the events that closed it."""
    if not items:
        return items
    held = checked_events(conn, [item["held_seq"] for item in items], "review_queue")
    closings: dict[tuple[str, str], dict[str, list[Event]]] = {}
    for item in items:
        event = held.get(item["held_seq"])
        body = event.body if event is not None else None
        if body is None or event.type != EVENT.CandidateHeld:
            _mismatch(item, "its held event is not a CandidateHeld the log holds")
        for name, logged in (("hold_id", body.get("hold_id")), ("app", event.app), ("user", event.user),
                             ("held_at", event.recorded_at), ("reason", body.get("reason")),
                             ("candidate", body.get("candidate"))):
            if item[name] != logged:
                _mismatch(item, f"its {name} differs from the log's")
        partition = (item["app"], item["user"])
        if partition not in closings:
            closings[partition] = _closings(conn, *partition)
        # as the fold reads them: the last event naming the hold after it was held (re)opened it
        closed = next((e for e in reversed(closings[partition].get(item["hold_id"], []))
                       if e.seq > item["held_seq"]), None)
        status = "open" if closed is None else "rejected" if closed.type == EVENT.CandidateRejected else "accepted"
        if item["status"] != status or item["closed_seq"] != (closed.seq if closed else None):
            _mismatch(item, f"it is {item['status']} in the queue and {status} in the log")
    return items


def _closings(conn: sqlite3.Connection, app: str, user: str) -> dict[str, list[Event]]:
    """hold_id -> the partition's events that close it, in seq order (each checked)."""
    found: dict[str, list[Event]] = {}
    events = checked_events(conn, hold_closings(conn, app, user), "review_queue")
    for seq in sorted(events):
        body = events[seq].body
        if body is not None and body.get("hold_id"):
            found.setdefault(body["hold_id"], []).append(events[seq])
    return found


def _mismatch(item: dict, problem: str) -> None:
    raise ProjectionMismatch("review_queue", None, item.get("held_seq"),
                             f"held candidate {item.get('hold_id')}: {problem}")
