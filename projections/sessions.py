"""`sessions` and `ingest_queue`: per-session watermarks and the retry queue of failed ingestions.

Folded from `SessionIngested` and `IngestFailed`.  The watermark is what makes re-ingestion
append nothing: ingestion reads it (inside its transaction) and extracts only the events after
it.  A failed ingestion leaves the watermark alone and opens (or bumps) a queue row; the next
successful ingestion of that session closes it.  Both tables carry `app` and `user`, so one
partition can be cleared and rebuilt, and a forgotten session's digest goes with its events.
"""

from __future__ import annotations

import sqlite3

import orjson

from factledger.ledger.domain.eventrow import Event
from factledger.ledger.domain.events import EVENT
from factledger.ledger.errors import ProjectionMismatch
from factledger.ledger.store.eventlog import equal_filters, snapshot
from factledger.ledger.vocabulary.words import ALL_APPS, ERASURES_USER
from factledger.projections.logkept import folded

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    app TEXT NOT NULL, user TEXT NOT NULL, session TEXT NOT NULL,
    watermark TEXT NOT NULL, watermark_at TEXT, ingestions INTEGER NOT NULL,
    events_read INTEGER NOT NULL, candidates INTEGER NOT NULL, applied INTEGER NOT NULL,
    rejected INTEGER NOT NULL, held INTEGER NOT NULL, counts TEXT NOT NULL,
    extractor TEXT NOT NULL, model TEXT, digest TEXT,
    first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL,
    first_ingested_at TEXT NOT NULL, last_ingested_at TEXT NOT NULL,
    PRIMARY KEY (app, user, session)
);
CREATE TABLE IF NOT EXISTS ingest_queue (
    app TEXT NOT NULL, user TEXT NOT NULL, session TEXT NOT NULL,
    status TEXT NOT NULL, attempts INTEGER NOT NULL, error TEXT NOT NULL,
    extractor TEXT NOT NULL, model TEXT, source TEXT,
    failed_seq INTEGER NOT NULL, failed_at TEXT NOT NULL, closed_seq INTEGER,
    PRIMARY KEY (app, user, session)
);
CREATE INDEX IF NOT EXISTS ingest_queue_status ON ingest_queue (status);
"""

SESSION_COLUMNS = ("app", "user", "session", "watermark", "watermark_at", "ingestions",
                   "events_read", "candidates", "applied", "rejected", "held", "counts",
                   "extractor", "model", "digest", "first_seq", "last_seq",
                   "first_ingested_at", "last_ingested_at")
QUEUE_COLUMNS = ("app", "user", "session", "status", "attempts", "error", "extractor", "model",
                 "source", "failed_seq", "failed_at", "closed_seq")


class SessionsProjection:
    name = "sessions"
    tables = ("sessions", "ingest_queue")
    schema = SCHEMA
    depends_on: tuple[str, ...] = ()

    # the events `apply` acts on (a rebuild hands it no others: projections/runner.py)
    event_types = frozenset((EVENT.SessionIngested, EVENT.IngestFailed))

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        body = event.body
        if body is None:
            return
        if event.type == EVENT.SessionIngested:
            self._ingested(conn, event, body)
        elif event.type == EVENT.IngestFailed:
            conn.execute(
                "INSERT INTO ingest_queue VALUES (?,?,?,'open',?,?,?,?,?,?,?,NULL)"
                " ON CONFLICT (app, user, session) DO UPDATE SET status = 'open',"
                " attempts = ingest_queue.attempts + 1, error = excluded.error, extractor = excluded.extractor,"
                " model = excluded.model, source = COALESCE(excluded.source, ingest_queue.source),"
                " failed_seq = excluded.failed_seq, failed_at = excluded.failed_at, closed_seq = NULL",
                (event.app, event.user, body["session"], 1, body["error"], body["extractor"],
                 body.get("model"), body.get("source"), event.seq, event.recorded_at))

    @staticmethod
    def _ingested(conn: sqlite3.Connection, event: Event, body: dict) -> None:
        counts = body.get("counts", {})
        applied = sum(v for k, v in counts.items() if k.startswith("applied:"))
        row = (event.app, event.user, body["session"], body["watermark"], body.get("watermark_at"),
               1, body["events_read"], counts.get("candidates", 0), applied,
               counts.get("rejected", 0), counts.get("held", 0),
               orjson.dumps(counts, option=orjson.OPT_SORT_KEYS).decode(), body["extractor"],
               body.get("model"), body.get("digest"), event.seq, event.seq, event.recorded_at,
               event.recorded_at)
        conn.execute(
            f"INSERT INTO sessions ({', '.join(SESSION_COLUMNS)}) VALUES "
            f"({', '.join('?' for _ in SESSION_COLUMNS)})"
            " ON CONFLICT (app, user, session) DO UPDATE SET watermark = excluded.watermark,"
            " watermark_at = excluded.watermark_at, ingestions = sessions.ingestions + 1,"
            " events_read = sessions.events_read + excluded.events_read,"
            " candidates = sessions.candidates + excluded.candidates, applied = sessions.applied + excluded.applied,"
            " rejected = sessions.rejected + excluded.rejected, held = sessions.held + excluded.held,"
            " counts = excluded.counts, extractor = excluded.extractor, model = excluded.model,"
            " digest = COALESCE(excluded.digest, sessions.digest), last_seq = excluded.last_seq,"
            " last_ingested_at = excluded.last_ingested_at", row)
        conn.execute("UPDATE ingest_queue SET status = 'done', closed_seq = ? WHERE app = ? AND"
                     " user = ? AND session = ? AND status = 'open'",
                     (event.seq, event.app, event.user, body["session"]))


def _rows(conn: sqlite3.Connection, sql: str, args, columns) -> list[dict]:
    return [dict(zip(columns, row)) for row in conn.execute(sql, args)]


def session_state(conn: sqlite3.Connection, app: str, user: str, session: str) -> dict | None:
    rows = _rows(conn, f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions WHERE app = ? AND"
                 " user = ? AND session = ?", (app, user, session), SESSION_COLUMNS)
    return _decoded(rows[0]) if rows else None


def _ingested(state: dict, event: Event) -> None:
    if event.body is not None:
        state[event.body["session"]] = (event.seq, event.body["watermark"], event.body.get("watermark_at"))


def checked_state(conn: sqlite3.Connection, app: str, user: str, session: str) -> dict | None:
    """`session_state` for ingestion to act on: the row's watermark must be the one the session's
    last surviving `SessionIngested` event recorded (the partition's ingestions folded from the
    log and kept, `projections.logkept`; a forget's receipt starts the fold again), and a session
    the log says was ingested must have its row: a deleted or edited row would have the session
    read again from an earlier event, "the ledger is damaged" instead."""
    with snapshot(conn):                  # the row and the log read in one state
        state = session_state(conn, app, user, session)
        logged = folded(conn, "ingestions", app, user, EVENT.SessionIngested, "sessions", dict, _ingested, dict,
                        guards=((app, ERASURES_USER), (ALL_APPS, ERASURES_USER))).get(session)
    stored = (state["last_seq"], state["watermark"], state["watermark_at"]) if state else None
    if stored != logged:
        raise ProjectionMismatch("sessions", None, (logged or stored)[0],
                                 "the session's watermark is not the one its last ingestion recorded")
    return state


def list_sessions(conn: sqlite3.Connection, app: str, user: str) -> list[dict]:
    rows = _rows(conn, f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions WHERE app = ? AND"
                 " user = ? ORDER BY watermark_at, session", (app, user), SESSION_COLUMNS)
    return [_decoded(r) for r in rows]


def queue(conn: sqlite3.Connection, app: str | None = None, user: str | None = None,
          status: str | None = "open") -> list[dict]:
    where, args = equal_filters(app=app, user=user, status=status)
    sql = f"SELECT {', '.join(QUEUE_COLUMNS)} FROM ingest_queue WHERE 1 = 1" + where
    return _rows(conn, sql + " ORDER BY failed_seq", args, QUEUE_COLUMNS)


def session_counts(conn: sqlite3.Connection) -> dict[tuple[str, str], int]:
    """(app, user) -> number of sessions ingested, for every partition that has one."""
    return {(a, u): n for a, u, n in conn.execute("SELECT app, user, COUNT(*) FROM sessions GROUP BY app, user")}


def knows_session(conn: sqlite3.Connection, session: str, app: str | None = None,
                  user: str | None = None) -> bool:
    """Whether this session was ever ingested (of one app or partition, if given)."""
    where, args = equal_filters(app=app, user=user)
    return conn.execute("SELECT 1 FROM sessions WHERE session = ?" + where + " LIMIT 1",
                        [session, *args]).fetchone() is not None


def _decoded(row: dict) -> dict:
    row["counts"] = orjson.loads(row["counts"])
    return row
