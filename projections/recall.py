"""`recall_index`: the per-fact term index over open facts that recall scores.

One row per open fact (current or disputed), keyed by the fact's `observed_seq` (so a partition
rebuild gives every row the same key as the live table had), with the partition, the key, and
`terms`: the fact's subject, predicate, value and quote cut by `ledger.textindex` (case folded,
stop words dropped, stemmed), space separated.  Recall reads one partition's rows with one
indexed query and scores them in memory.

Why a plain table and not FTS5 (the design allows "FTS5 or an equivalent"):
- recall's statistics must be partition-local: FTS5's bm25() takes its idf from the whole table,
  so one user's records would shift another user's scores (and a user's scores would hint at
  what others hold);
- `--explain` must show every in-scope fact with its relevance, so recall reads the whole scope
  anyway; an inverted index would only help a search that ignores the rest;
- forgetting must leave no byte: deleting from a plain table under `PRAGMA secure_delete = ON`
  (set by `ledger.store.connect`) zeroes the row's bytes, where FTS5 (3.40, without its
  secure-delete option) keeps a deleted row's terms in old index segments until a merge;
- a query never reaches SQLite as syntax: terms are compared in Python, so no quote, bracket,
  `NEAR`, `*` or newline in a query can cause an FTS syntax error.

The fold follows the facts projection (so this projection flushes after it): for every fact
the facts fold changes, the row exists while the fact is open and is gone once it is not, so a
superseded or retracted fact can never be found by recall.
"""

from __future__ import annotations

import sqlite3

from factledger.ledger.eventrow import Event
from factledger.ledger.textindex import document_terms

from .factstate import OPEN_STATES
from .queries import FACT_FIELDS

TABLE = "recall_index"

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    seq INTEGER PRIMARY KEY, fact_id TEXT NOT NULL, app TEXT NOT NULL, user TEXT NOT NULL,
    subject TEXT NOT NULL, predicate TEXT NOT NULL, terms TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS {TABLE}_partition ON {TABLE} (app, user);
"""

class RecallProjection:
    name = "recall"
    tables = (TABLE,)
    schema = SCHEMA
    depends_on = ("facts",)        # reads what the facts projection flushed (`facts.flushed`)

    def __init__(self, facts):
        # The facts projection of the same projector: it flushes first, and says which facts it
        # changed, so this index never reads facts_current back.
        self.facts = facts

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        """Nothing per event: the index follows the facts the facts projection flushes."""

    def flush(self, conn: sqlite3.Connection) -> None:
        """Why following the flushed facts is the same as syncing every fact an event names: a
        fact opens or closes only by an event that names it, so after the flush the table holds
        exactly the open facts; a fact that stayed open kept its row (its text never changes
        while it is open)."""
        inserts, deletes = [], []
        for snap, was_open in self.facts.flushed:
            if snap["status"] in OPEN_STATES:
                if not was_open:
                    inserts.append(_row(snap))
            elif was_open:
                deletes.append((snap["observed_seq"],))
        if deletes:
            conn.executemany(f"DELETE FROM {TABLE} WHERE seq = ?", deletes)
        if inserts:
            conn.executemany(_INSERT, inserts)

    def discard(self) -> None:
        pass

    def rebuild_partition(self, conn: sqlite3.Connection, events: list[Event], state: dict) -> None:
        """A rebuild: one row per fact open at the partition's end, from the facts fold's state
        (the same argument as `flush`)."""
        open_facts = state["open_facts"]          # set by FactsProjection.rebuild_partition
        rows = [_row(s) for s in open_facts.values()]
        rows.sort()
        conn.executemany(f"INSERT INTO {TABLE} VALUES (?,?,?,?,?,?,?)", rows)


_INSERT = f"INSERT OR IGNORE INTO {TABLE} VALUES (?,?,?,?,?,?,?)"


def _row(s: dict) -> tuple:
    return (s["observed_seq"], s["fact_id"], s["app"], s["user"], s["subject"], s["predicate"],
            document_terms(s["subject"], s["predicate"], s["value"], s["quote"]))


# Reading the index for recall (ledger/recall.py scores what these return).

# Thin rows: what the gates, the scores and the packing need, for every in-scope fact (their
# positions are named in ledger/recall_facts.py).
_THIN = (
    "SELECT f.fact_id, f.user, f.subject, f.predicate, f.value, f.sensitivity, f.confidence,"
    " f.confirmed_at, f.disputes, f.basis, f.said_at, f.session, f.author, r.terms"
    f" FROM facts_current f LEFT JOIN {TABLE} r ON r.seq = f.observed_seq WHERE f.app = ? AND f.user IN ")
# Full rows: only for what is shown; the public fields, less the two worked out (recall_facts.py).
_FULL_COLUMNS = tuple(f for f in FACT_FIELDS if f not in ("effective_confidence", "disputes"))
_FULL = f"SELECT {', '.join(_FULL_COLUMNS)} FROM facts_current WHERE fact_id IN "


def scope_rows(conn: sqlite3.Connection, app: str, users: list[str]) -> list[tuple]:
    """The thin row of every open fact of the scope (one indexed read)."""
    return conn.execute(_THIN + f"({', '.join('?' for _ in users)})", (app, *users)).fetchall()


def full_rows(conn: sqlite3.Connection, fact_ids: list[str]):
    """(fact_id, its full row as a dict) for each fact named, read 500 at a time."""
    for start in range(0, len(fact_ids), 500):
        chunk = fact_ids[start:start + 500]
        for row in conn.execute(_FULL + f"({', '.join('?' for _ in chunk)})", chunk):
            yield row[0], dict(zip(_FULL_COLUMNS, row))


def other_partitions(conn: sqlite3.Connection, app: str, users: list[str]) -> dict:
    """How many open facts lie outside the scope: counted, never shown."""
    total = conn.execute("SELECT COUNT(*) FROM facts_current").fetchone()[0]
    inside = sum(conn.execute("SELECT COUNT(*) FROM facts_current WHERE app = ? AND user = ?",
                              (app, u)).fetchone()[0] for u in users)
    partitions = conn.execute(
        "SELECT COUNT(*) FROM (SELECT DISTINCT app, user FROM facts_current)").fetchone()[0]
    inside_partitions = sum(1 for u in users if conn.execute(
        "SELECT 1 FROM facts_current WHERE app = ? AND user = ? LIMIT 1", (app, u)).fetchone())
    return {"facts": total - inside, "partitions": partitions - inside_partitions}
