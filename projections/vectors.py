"""`fact_vectors`: one meaning vector per open fact, for recall and dedup by meaning.

A row per open fact (current or disputed), keyed like the recall index by the fact's
`observed_seq`, partitioned by (app, user), with the predicate, the encoder's identity (`model`)
and the vector as a little-endian float32 BLOB of the fact rendered as a sentence (predicate,
value, quote: `ledger.semantic.embedder.sentence`).  Search is an exact cosine with numpy over
one partition's rows (per-user sets are small), so no approximate index keeps stale copies.

It follows what the facts projection flushes, like the recall index: a row exists while its fact
is open and is deleted once it is not; `replay` rebuilds it; a forget rebuilds the partition,
and since `ledger.store.eventlog.connect` sets `PRAGMA secure_delete = ON`, the deleted vector's float
bytes are zeroed (tests/semantic/test_semantic_recall.py scans for them).

Without the `semantic` extra (or with FACTLEDGER_EMBEDDER=off) the table stays empty and nothing
else changes.  The encoder is loaded the first time something is embedded, not when a ledger
opens.  A ledger opened with a different encoder than the one its rows name re-embeds every open
fact (`sync`), so vectors of two encoders are never compared.
"""

from __future__ import annotations

import sqlite3

from factledger.ledger.errors import UNUSABLE, LedgerError, ProjectionMismatch
from factledger.ledger.semantic import embedder as encoders
from factledger.ledger.store.eventlog import Event
from factledger.ledger.store.scopes import each_user
from factledger.projections.base import OPEN_FACTS, FactsFold
from factledger.projections.factstate import OPEN_STATES

TABLE = "fact_vectors"

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    seq INTEGER PRIMARY KEY, fact_id TEXT NOT NULL, app TEXT NOT NULL, user TEXT NOT NULL,
    predicate TEXT NOT NULL, model TEXT NOT NULL, vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS {TABLE}_partition ON {TABLE} (app, user);
"""
_INSERT = f"INSERT OR REPLACE INTO {TABLE} VALUES (?,?,?,?,?,?,?)"


class VectorProjection:
    name = "vectors"
    tables = (TABLE,)
    schema = SCHEMA

    def __init__(self, facts: FactsFold):
        self.facts = facts                    # flushes first; says which facts it changed (`base.FollowsFacts`)
        self.depends_on = (facts.name,)

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        """Nothing per event: the vectors follow the facts the facts projection flushes."""

    def flush(self, conn: sqlite3.Connection) -> None:
        if not self.facts.flushed or not encoders.wanted():
            return
        inserts, deletes = [], []
        for snap, was_open in self.facts.flushed:
            if snap["status"] in OPEN_STATES:
                if not was_open:
                    inserts.append(snap)
            elif was_open:
                deletes.append((snap["observed_seq"], snap["app"], snap["user"]))
        if deletes:
            conn.executemany(f"DELETE FROM {TABLE} WHERE seq = ? AND app = ? AND user = ?", deletes)
        if inserts:
            model = encoders.get()
            if model is not None:
                conn.executemany(_INSERT, [_row(model, s) for s in inserts])

    def discard(self) -> None:
        pass

    def rebuild_partition(self, conn: sqlite3.Connection, events: list[Event], state: dict) -> None:
        """One row per fact open at the partition's end (set by FactsProjection.rebuild_partition)."""
        open_facts = state[OPEN_FACTS]
        if not open_facts or not encoders.wanted():
            return
        model = encoders.get()
        if model is None:
            return
        rows = sorted(_row(model, s) for s in open_facts.values())
        conn.executemany(_INSERT, rows)


def _row(model, s: dict) -> tuple:
    text = encoders.sentence(s["subject"], s["predicate"], s["value"], s["quote"])
    return (s["observed_seq"], s["fact_id"], s["app"], s["user"], s["predicate"], model.identity,
            model.embed(text).astype("<f4").tobytes())


def sync(conn: sqlite3.Connection, transaction) -> bool:
    """Make the table match the encoder in use: re-embed every open fact when its rows name
    another encoder (or none while facts are open), empty it when meaning is off.  Returns
    whether anything was rewritten.  A file this connection cannot write is left as it is
    (recall then ignores rows of another encoder)."""
    expected = encoders.identity()
    found = conn.execute(f"SELECT model FROM {TABLE} LIMIT 1").fetchone()
    if expected is None:
        if found is None:
            return False
        return _rewrite(conn, transaction, None)
    if found is not None and found[0] == expected:
        return False
    if found is None and conn.execute("SELECT 1 FROM facts_current LIMIT 1").fetchone() is None:
        return False
    return _rewrite(conn, transaction, encoders.get())


_OPEN = ("SELECT observed_seq, fact_id, app, user, subject, predicate, value, quote FROM facts_current"
         " ORDER BY observed_seq")


def _rewrite(conn: sqlite3.Connection, transaction, model) -> bool:
    """`transaction` is the ledger's write transaction (a context manager factory)."""
    names = ("observed_seq", "fact_id", "app", "user", "subject", "predicate", "value", "quote")
    try:
        with transaction():
            conn.execute(f"DELETE FROM {TABLE}")
            if model is not None:
                rows = [_row(model, dict(zip(names, r))) for r in conn.execute(_OPEN).fetchall()]
                conn.executemany(_INSERT, rows)
    except UNUSABLE:
        raise                                 # not a ledger that merely cannot be written now
    except LedgerError:                       # read-only or busy (factledger's, whatever the engine)
        return False                          # read-only or busy: recall skips other encoders' rows
    return True


def partition_vectors(conn: sqlite3.Connection, app: str, users: list[str], identity: str) -> dict:
    """fact_id -> vector bytes for one scope's open facts embedded by `identity`."""
    return shaped(dict(conn.execute(*each_user(
        f"SELECT fact_id, vector FROM {TABLE} WHERE app = ? AND user = ? AND model = ?",
        users, lambda user: (app, user, identity)))))


def key_vectors(conn: sqlite3.Connection, app: str, user: str, predicate: str) -> dict:
    """fact_id -> vector bytes for one partition's open facts of a predicate (any subject: the
    caller keeps the key's own), embedded by the encoder in use."""
    identity = encoders.identity()
    return shaped(dict(conn.execute(f"SELECT fact_id, vector FROM {TABLE} WHERE app = ? AND user = ?"
                                    " AND predicate = ? AND model = ?", (app, user, predicate, identity))))


def vector_width() -> int | None:
    """The bytes of one vector of the encoder in use (float32 each), or None when meaning is off."""
    model = encoders.get() if encoders.identity() is not None else None
    return None if model is None else int(model.dim) * 4


def shaped(stored: dict) -> dict:
    """`stored` (fact_id -> vector bytes), once every vector has the encoder's width: a row edited
    to another length would crash the matrix every recall of the partition builds, so it is
    refused as damage (`verify` names it too: `ledger.audit.projcheck`)."""
    if not stored:
        return stored
    width = vector_width()
    for fact_id, vector in stored.items():
        size = len(vector) if isinstance(vector, (bytes, bytearray, memoryview)) else -1
        if size != width:
            raise ProjectionMismatch(TABLE, fact_id, None, f"its meaning vector is {size} bytes, not the "
                                     f"encoder's {width}; `factledger replay` re-embeds it")
    return stored
