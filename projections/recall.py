"""`recall_index`: the per-fact term index over open facts that recall scores.

One row per open fact (current or disputed), keyed by the fact's `observed_seq` (so a partition
rebuild gives every row the same key as the live table had), with the partition, the key, and
`terms`: the fact's subject, predicate, value and quote cut by `ledger.textindex` (case folded,
stop words dropped, stemmed), space separated.  Recall reads one partition's rows with one
indexed query and scores them in memory.

Why a plain table and not FTS5 (DESIGN section 8 allows "FTS5 or an equivalent"):
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

The fold reads `facts_current` (so this projection runs after the facts projection): for every
fact an event names, the row exists while the fact is open and is gone once it is not, so a
superseded or retracted fact can never be found by recall.
"""

from __future__ import annotations

import sqlite3

from ledger.store import Event
from ledger.textindex import document_terms

from .factstate import OPEN_STATES

TABLE = "recall_index"

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    seq INTEGER PRIMARY KEY, fact_id TEXT NOT NULL, app TEXT NOT NULL, user TEXT NOT NULL,
    subject TEXT NOT NULL, predicate TEXT NOT NULL, terms TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS {TABLE}_partition ON {TABLE} (app, user);
"""

# Body fields that name a fact (as in projections/provenance.py).
_REFERENCES = ("fact_id", "by_fact_id", "disputes", "winner_id")


class RecallProjection:
    name = "recall"
    tables = (TABLE,)
    schema = SCHEMA

    def __init__(self, facts=None):
        # The facts projection of the same projector (optional): for a fact the event just
        # changed, its new snapshot is what facts_current now holds, so it is not read back.
        self.facts = facts

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        body = event.body
        if body is None:
            return
        named = [body[f] for f in _REFERENCES if isinstance(body.get(f), str) and body.get(f)]
        named += [f for f in body.get("loser_ids", ()) if isinstance(f, str)]
        touched: dict = {}
        if self.facts is not None:
            folded, snaps = self.facts.last
            if folded is event:
                touched = snaps
        for fact_id in dict.fromkeys(named):
            snap = touched.get(fact_id)
            if snap is None:
                self._sync(conn, fact_id)
            elif snap["status"] in OPEN_STATES:
                conn.execute(_INSERT, _row(snap))
            else:       # closed: its facts_current row is gone; observed_seq is the same in every interval
                conn.execute(f"DELETE FROM {TABLE} WHERE seq = ?", (snap["observed_seq"],))

    def rebuild_partition(self, conn: sqlite3.Connection, events: list[Event], state: dict) -> None:
        """A rebuild: one row per fact open at the partition's end, from the facts fold's state.

        Why that equals the live fold: a fact opens or closes only by an event that names it
        (observed, disputed challenger, superseded, retracted, resolved winner or loser,
        reinstated), and every such event syncs its named facts, so after the last event the
        table holds exactly the open facts; their text never changes while they are open.
        """
        open_facts = state["open_facts"]          # set by FactsProjection.rebuild_partition
        rows = [_row(s) for s in open_facts.values()]
        rows.sort()
        conn.executemany(f"INSERT INTO {TABLE} VALUES (?,?,?,?,?,?,?)", rows)

    def _sync(self, conn: sqlite3.Connection, fact_id: str) -> None:
        # Two statements per named fact: the open row, then one write.  INSERT OR IGNORE on the
        # seq key does what "insert unless present" did with a SELECT first (a fact's text never
        # changes while it is open, so a present row is already right); a closed fact's row goes
        # with one DELETE keyed by a subquery.
        row = conn.execute(
            "SELECT observed_seq, app, user, subject, predicate, value, quote FROM facts_current"
            " WHERE fact_id = ?", (fact_id,)).fetchone()
        if row is None:
            conn.execute(f"DELETE FROM {TABLE} WHERE seq = (SELECT observed_seq FROM fact_history"
                         " WHERE fact_id = ? LIMIT 1)", (fact_id,))
            return
        seq, app, user, subject, predicate, value, quote = row
        conn.execute(_INSERT, (seq, fact_id, app, user, subject, predicate,
                               document_terms(subject, predicate, value, quote)))


_INSERT = f"INSERT OR IGNORE INTO {TABLE} VALUES (?,?,?,?,?,?,?)"


def _row(s: dict) -> tuple:
    return (s["observed_seq"], s["fact_id"], s["app"], s["user"], s["subject"], s["predicate"],
            document_terms(s["subject"], s["predicate"], s["value"], s["quote"]))
