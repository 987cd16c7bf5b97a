"""Erasure receipts and the forgotten-scopes list, folded from `Redacted` events.

`erasures` is what `factledger erasures` lists: one receipt per redaction, no personal content.
`forgotten_scopes` holds the scope hashes of what was forgotten whole (users, sessions, facts),
so ingestion can refuse a forgotten session and a repeated request is recognised as done.
Both live in the `Redacted` event's own partition (`(app, "_erasures")`), so erasing or
rebuilding a user's partition never touches them.
"""

from __future__ import annotations

import sqlite3

import orjson

from factledger.ledger.domain.eventrow import Event
from factledger.ledger.store.eventlog import equal_filters

EMPTIED_SESSION = "emptied_session"      # a session some other request took everything of

SCHEMA = """
CREATE TABLE IF NOT EXISTS erasures (
    seq INTEGER PRIMARY KEY, event_id TEXT NOT NULL, app TEXT NOT NULL, user TEXT NOT NULL,
    recorded_at TEXT NOT NULL, scope_kind TEXT NOT NULL, scope_hash TEXT NOT NULL,
    reason TEXT NOT NULL, requester TEXT NOT NULL, events INTEGER NOT NULL,
    counts TEXT NOT NULL, partitions INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS erasures_partition ON erasures (app, user);
CREATE TABLE IF NOT EXISTS forgotten_scopes (
    kind TEXT NOT NULL, hash TEXT NOT NULL, app TEXT NOT NULL, user TEXT NOT NULL,
    seq INTEGER NOT NULL, PRIMARY KEY (kind, hash)
);
CREATE INDEX IF NOT EXISTS forgotten_scopes_partition ON forgotten_scopes (app, user);
"""


class ErasuresProjection:
    name = "erasures"
    tables = ("erasures", "forgotten_scopes")
    schema = SCHEMA
    depends_on: tuple[str, ...] = ()

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        body = event.body
        if body is None or event.type != "Redacted":
            return
        conn.execute(
            "INSERT OR REPLACE INTO erasures VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (event.seq, event.event_id, event.app, event.user, event.recorded_at,
             body["scope_kind"], body["scope_hash"], body["reason"], body["requester"],
             len(body.get("target_seqs", ())),
             orjson.dumps(body.get("counts", {}), option=orjson.OPT_SORT_KEYS).decode(),
             body.get("partitions", 1)))
        scopes = [(body["scope_kind"], body["scope_hash"])]
        scopes += [("session", h) for h in body.get("session_hashes", ())]
        scopes += [("fact", h) for h in body.get("fact_hashes", ())]
        scopes += [("event", h) for h in body.get("event_hashes") or ()]
        scopes += [(EMPTIED_SESSION, h) for h in body.get("emptied_session_hashes", ())]
        conn.executemany("INSERT OR IGNORE INTO forgotten_scopes VALUES (?,?,?,?,?)",
                         [(kind, digest, event.app, event.user, event.seq) for kind, digest in scopes])


def session_erased_at(conn: sqlite3.Connection, session_digest: str) -> int | None:
    """Seq of the receipt that forgot this session, or that took everything it still said."""
    row = conn.execute("SELECT min(seq) FROM forgotten_scopes WHERE kind IN ('session', ?) AND hash = ?",
                       (EMPTIED_SESSION, session_digest)).fetchone()
    return row[0]


def is_forgotten(conn: sqlite3.Connection, kind: str, digest: str) -> bool:
    return conn.execute("SELECT 1 FROM forgotten_scopes WHERE kind = ? AND hash = ?",
                        (kind, digest)).fetchone() is not None


def erased_at(conn: sqlite3.Connection, kind: str, digest: str) -> int | None:
    """Seq of the receipt that forgot this scope (kind and hash), or None."""
    row = conn.execute("SELECT seq FROM forgotten_scopes WHERE kind = ? AND hash = ?", (kind, digest)).fetchone()
    return row[0] if row else None


def forgotten_among(conn: sqlite3.Connection, kind: str, digests: list[str], chunk: int = 500) -> set[str]:
    """Which of these scope hashes of one kind were forgotten (read `chunk` at a time)."""
    found: set[str] = set()
    for start in range(0, len(digests), chunk):
        part = digests[start:start + chunk]
        found.update(row[0] for row in conn.execute(
            f"SELECT hash FROM forgotten_scopes WHERE kind = ? AND hash IN ({', '.join('?' for _ in part)})",
            (kind, *part)))
    return found


RECEIPT_KEYS = ("redaction_seq", "event_id", "app", "recorded_at", "scope_kind", "scope_hash",
                "reason", "requester", "events", "counts", "partitions")


def receipts(conn: sqlite3.Connection, app: str | None = None) -> list[dict]:
    """Every erasure receipt (of one app, if given), in seq order."""
    where, args = equal_filters(app=app)
    sql = ("SELECT seq, event_id, app, recorded_at, scope_kind, scope_hash, reason, requester,"
           " events, counts, partitions FROM erasures WHERE 1 = 1" + where)
    out = []
    for row in conn.execute(sql + " ORDER BY seq", args):
        item = dict(zip(RECEIPT_KEYS, row))
        item["counts"] = orjson.loads(item["counts"])
        out.append(item)
    return out


def receipt_seqs(conn: sqlite3.Connection, app: str) -> set[int]:
    """Seqs of every receipt filed under an app."""
    return {row[0] for row in conn.execute("SELECT seq FROM erasures WHERE app = ?", (app,))}


def last_erased(conn: sqlite3.Connection, app: str, receipts_user: str, scopes: list[tuple[str, str]]) -> str | None:
    """When the latest receipt in `(app, receipts_user)` forgot one of these (kind, hash) scopes."""
    test = " OR ".join("(scope_kind = ? AND scope_hash = ?)" for _ in scopes) or "0"
    return conn.execute(f"SELECT MAX(recorded_at) FROM erasures WHERE app = ? AND user = ? AND ({test})",
                        (app, receipts_user, *(x for scope in scopes for x in scope))).fetchone()[0]


def latest_receipt(conn: sqlite3.Connection) -> tuple[int | None, str | None]:
    """(seq, recorded_at) of the latest erasure receipt, (None, None) when there is none."""
    return tuple(conn.execute("SELECT MAX(seq), MAX(recorded_at) FROM erasures").fetchone())
