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
from factledger.ledger.domain.events import EVENT
from factledger.ledger.errors import ProjectionMismatch
from factledger.ledger.store.eventlog import equal_filters, snapshot
from factledger.ledger.vocabulary.words import ALL_APPS, ERASURES_USER
from factledger.projections.logkept import folded

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

    # the events `apply` acts on (a rebuild hands it no others: projections/runner.py)
    event_types = frozenset((EVENT.Redacted,))

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        body = event.body
        if body is None or event.type != EVENT.Redacted:
            return
        conn.execute(
            "INSERT OR REPLACE INTO erasures VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (event.seq, event.event_id, event.app, event.user, event.recorded_at,
             body["scope_kind"], body["scope_hash"], body["reason"], body["requester"],
             len(body.get("target_seqs", ())),
             orjson.dumps(body.get("counts", {}), option=orjson.OPT_SORT_KEYS).decode(),
             body.get("partitions", 1)))
        conn.executemany("INSERT OR IGNORE INTO forgotten_scopes VALUES (?,?,?,?,?)",
                         [(kind, digest, event.app, event.user, event.seq) for kind, digest in receipt_scopes(body)])


def receipt_scopes(body: dict) -> list[tuple[str, str]]:
    """The (kind, hash) scopes a `Redacted` body forgot whole: its own, and the sessions, facts,
    read events and emptied sessions it lists."""
    scopes = [(body["scope_kind"], body["scope_hash"])]
    scopes += [("session", h) for h in body.get("session_hashes", ())]
    scopes += [("fact", h) for h in body.get("fact_hashes", ())]
    scopes += [("event", h) for h in body.get("event_hashes") or ()]
    scopes += [(EMPTIED_SESSION, h) for h in body.get("emptied_session_hashes", ())]
    return scopes


# --- what was forgotten, as the log says ------------------------------------------------------
#
# Ingestion refuses a forgotten session, the ADK service skips erased events, a repeated forget is
# recognised as done: each acts on these answers, so each is read from the receipts themselves
# (the `Redacted` events of the app's receipt partition and of the cross-app retention one, bodies
# checked against their commitments, kept per partition: `projections.logkept`), and the
# projection's answer must agree: a deleted, added or edited row is "the ledger is damaged", never a
# forgotten session ingested again.

class _Receipts:
    __slots__ = ("first", "last_at", "seqs")

    def __init__(self) -> None:
        self.first: dict[tuple[str, str], int] = {}        # scope -> seq of the first receipt naming it
        self.last_at: dict[tuple[str, str], str] = {}      # a receipt's own scope -> its latest time
        self.seqs: set[int] = set()

    def copied(self) -> _Receipts:
        other = _Receipts()
        other.first, other.last_at, other.seqs = dict(self.first), dict(self.last_at), set(self.seqs)
        return other

    def add(self, event: Event) -> None:
        body = event.body
        if body is None:
            return
        self.seqs.add(event.seq)
        for scope in receipt_scopes(body):
            self.first.setdefault(scope, event.seq)
        own = (body["scope_kind"], body["scope_hash"])
        self.last_at[own] = max(self.last_at.get(own, ""), event.recorded_at)


def _receipts(conn, app: str) -> _Receipts:
    return folded(conn, "receipts", app, ERASURES_USER, EVENT.Redacted, "forgotten_scopes", _Receipts,
                  _Receipts.add, _Receipts.copied)


def _logged_at(conn, app: str, scopes: list[tuple[str, str]]) -> int | None:
    """The first receipt's seq naming any of these scopes, in the app's receipts or a retention
    run's across apps."""
    found = [r.first[s] for r in (_receipts(conn, app), _receipts(conn, ALL_APPS)) for s in scopes if s in r.first]
    return min(found) if found else None


def _disagree(what: str, seq: int | None) -> ProjectionMismatch:
    return ProjectionMismatch("forgotten_scopes", None, seq, f"{what} is not what the log's receipts say")


def session_erased_at(conn: sqlite3.Connection, app: str, session_digest: str) -> int | None:
    """Seq of the receipt that forgot this session, or that took everything it still said."""
    with snapshot(conn):     # the projection and the log read in one state
        row = conn.execute("SELECT min(seq) FROM forgotten_scopes WHERE kind IN ('session', ?) AND hash = ?",
                           (EMPTIED_SESSION, session_digest)).fetchone()
        logged = _logged_at(conn, app, [("session", session_digest), (EMPTIED_SESSION, session_digest)])
        if row[0] != logged:
            raise _disagree("whether the session was forgotten", logged if logged is not None else row[0])
        return logged


def is_forgotten(conn: sqlite3.Connection, app: str, kind: str, digest: str) -> bool:
    return erased_at(conn, app, kind, digest) is not None


def erased_at(conn: sqlite3.Connection, app: str, kind: str, digest: str) -> int | None:
    """Seq of the receipt that forgot this scope (kind and hash) of `app`, or None."""
    with snapshot(conn):     # the projection and the log read in one state
        row = conn.execute("SELECT seq FROM forgotten_scopes WHERE kind = ? AND hash = ?", (kind, digest)).fetchone()
        stored = row[0] if row else None
        logged = _logged_at(conn, app, [(kind, digest)])
        if stored != logged:
            raise _disagree(f"whether the {kind} was forgotten", logged if logged is not None else stored)
        return logged


def forgotten_among(conn: sqlite3.Connection, app: str, kind: str, digests: list[str], chunk: int = 500) -> set[str]:
    """Which of these scope hashes of one kind of `app` were forgotten (read `chunk` at a time)."""
    with snapshot(conn):     # the projection and the log read in one state
        found: set[str] = set()
        for start in range(0, len(digests), chunk):
            part = digests[start:start + chunk]
            found.update(row[0] for row in conn.execute(
                f"SELECT hash FROM forgotten_scopes WHERE kind = ? AND hash IN ({', '.join('?' for _ in part)})",
                (kind, *part)))
        logged = {d for d in digests if _logged_at(conn, app, [(kind, d)]) is not None}
        if found != logged:
            raise _disagree(f"which {kind}s were forgotten", None)
        return logged


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
    with snapshot(conn):     # the projection and the log read in one state
        stored = {row[0] for row in conn.execute("SELECT seq FROM erasures WHERE app = ?", (app,))}
        logged = set(_receipts(conn, app).seqs)
        if stored != logged:
            raise ProjectionMismatch("erasures", None, min(stored ^ logged), "its receipts are not the log's")
        return logged


def last_erased(conn: sqlite3.Connection, app: str, scopes: list[tuple[str, str]]) -> str | None:
    """When the latest receipt in the app's receipt partition forgot one of these (kind, hash) scopes."""
    with snapshot(conn):     # the projection and the log read in one state
        test = " OR ".join("(scope_kind = ? AND scope_hash = ?)" for _ in scopes) or "0"
        stored = conn.execute(f"SELECT MAX(recorded_at) FROM erasures WHERE app = ? AND user = ? AND ({test})",
                              (app, ERASURES_USER, *(x for scope in scopes for x in scope))).fetchone()[0]
        last_at = _receipts(conn, app).last_at
        logged = max((last_at[s] for s in scopes if s in last_at), default=None)
        if stored != logged:
            raise ProjectionMismatch("erasures", None, None,
                                     "when the scope was last forgotten is not what the log's receipts say")
        return logged


def latest_receipt(conn: sqlite3.Connection) -> tuple[int | None, str | None]:
    """(seq, recorded_at) of the latest erasure receipt, (None, None) when there is none."""
    return tuple(conn.execute("SELECT MAX(seq), MAX(recorded_at) FROM erasures").fetchone())
