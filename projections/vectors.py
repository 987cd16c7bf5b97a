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
import warnings

from factledger.ledger.errors import UNUSABLE, LedgerError
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
# Facts stored without a vector because the encoder failed: the next write open re-embeds (`sync`).
INCOMPLETE = "vectors_incomplete"
_MARK_INCOMPLETE = f"INSERT OR IGNORE INTO ledger_meta (key, value) VALUES ('{INCOMPLETE}', '1')"
_IS_INCOMPLETE = f"SELECT 1 FROM ledger_meta WHERE key = '{INCOMPLETE}'"


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
            rows = _embedded(inserts)
            conn.executemany(_INSERT, rows)
            if len(rows) < len(inserts):
                conn.execute(_MARK_INCOMPLETE)        # re-embedded at the next write open (`sync`)

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


def _embedded(snaps: list[dict]) -> list[tuple]:
    """The rows of the facts an encoder could embed.  One that fails leaves its facts without a
    vector (recall finds them by words; `verify` reports the meaning index as incomplete, and
    re-embedding refreshes it) rather than failing the write that opened them: a fact is never
    lost to the encoder."""
    try:
        model = encoders.get()
        return [] if model is None else [_row(model, s) for s in snaps]
    except LedgerError:
        raise                                 # the encoder was asked for and is not installed
    except Exception as exc:    # noqa: BLE001 - whatever the runtime raises, the facts are kept
        warnings.warn(f"factledger: the encoder failed ({type(exc).__name__}: {exc}); {len(snaps)} fact(s) "
                      "stored without a meaning vector, to be embedded at the next write",
                      RuntimeWarning, stacklevel=2)
        return []


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
    if conn.execute(_IS_INCOMPLETE).fetchone() is not None:     # an encoder failed mid-write before
        return _rewrite(conn, transaction, encoders.get())
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
            conn.execute(f"DELETE FROM ledger_meta WHERE key = '{INCOMPLETE}'")
            if model is not None:
                rows = [_row(model, dict(zip(names, r))) for r in conn.execute(_OPEN).fetchall()]
                conn.executemany(_INSERT, rows)
    except UNUSABLE:
        raise                                 # not a ledger that merely cannot be written now
    except LedgerError:                       # read-only or busy (factledger's, whatever the engine)
        return False                          # read-only or busy: recall skips other encoders' rows
    except Exception as exc:    # noqa: BLE001 - the encoder failed again: keep what is there, and the mark
        warnings.warn(f"factledger: the encoder failed ({type(exc).__name__}: {exc}); the meaning index "
                      "stays incomplete until it works", RuntimeWarning, stacklevel=2)
        return False
    return True


def partition_vectors(conn: sqlite3.Connection, app: str, users: list[str], identity: str) -> dict:
    """fact_id -> vector bytes for one scope's open facts embedded by `identity`."""
    return dict(conn.execute(*each_user(f"SELECT fact_id, vector FROM {TABLE} WHERE app = ? AND user = ? AND model = ?",
                                        users, lambda user: (app, user, identity))))


def key_vectors(conn: sqlite3.Connection, app: str, user: str, predicate: str) -> dict:
    """fact_id -> vector bytes for one partition's open facts of a predicate (any subject: the
    caller keeps the key's own), embedded by the encoder in use."""
    identity = encoders.identity()
    return dict(conn.execute(f"SELECT fact_id, vector FROM {TABLE} WHERE app = ? AND user = ?"
                             " AND predicate = ? AND model = ?", (app, user, predicate, identity)))
