"""`recall_index`: the full-text index over open facts that recall searches.

One FTS5 row per open fact (current or disputed), keyed by the fact's `observed_seq` as rowid, so
a partition rebuild gives every row the same rowid as the live table had (the comparison of
`replay --check` and any join stay stable).  It holds the fact's subject, predicate, value and
quote as the user said them, and `terms`: the same text cut by `ledger.textindex` (case folded,
stop words dropped, stemmed), which is what recall scores on, so a query never needs to re-cut a
thousand facts.  `app` and `user` are UNINDEXED columns, so a partition can be cleared like any
other projection table.

Why a plain FTS5 table and not a contentless or external-content one: forgetting must leave no
byte of a forgotten value anywhere in the file.  A plain table really deletes the row from its
content table; FTS5 still keeps the deleted terms in older index segments until they are merged,
so `after_rebuild` runs the FTS5 'optimize' command, which rewrites the index into one segment
without them; with `PRAGMA secure_delete = ON` (set by `ledger.store.connect`) the freed pages are
zeroed, and the forget path's WAL checkpoint then removes the old copies from the WAL.

The fold reads `facts_current` (so this projection runs after the facts projection): for every
fact an event names, the row exists while the fact is open and is gone once it is not.  A
superseded or retracted fact therefore can never be found by recall.
"""

from __future__ import annotations

import sqlite3

from ledger.store import Event
from ledger.textindex import document_terms

TABLE = "recall_index"

SCHEMA = f"""
CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING fts5(
    fact_id UNINDEXED, app UNINDEXED, user UNINDEXED,
    subject, predicate, value, quote, terms,
    tokenize = 'unicode61 remove_diacritics 2'
);
"""

# Body fields that name a fact (as in projections/provenance.py).
_REFERENCES = ("fact_id", "by_fact_id", "disputes", "winner_id")


class RecallProjection:
    name = "recall"
    tables = (TABLE,)
    schema = SCHEMA

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        body = event.body
        if body is None:
            return
        named = [body[f] for f in _REFERENCES if isinstance(body.get(f), str) and body.get(f)]
        named += [f for f in body.get("loser_ids", ()) if isinstance(f, str)]
        for fact_id in dict.fromkeys(named):
            self._sync(conn, fact_id)

    def _sync(self, conn: sqlite3.Connection, fact_id: str) -> None:
        row = conn.execute(
            "SELECT observed_seq, app, user, subject, predicate, value, quote FROM facts_current"
            " WHERE fact_id = ?", (fact_id,)).fetchone()
        if row is None:
            seq = conn.execute("SELECT observed_seq FROM fact_history WHERE fact_id = ? LIMIT 1",
                               (fact_id,)).fetchone()
            if seq is not None:
                conn.execute(f"DELETE FROM {TABLE} WHERE rowid = ?", (seq[0],))
            return
        seq, app, user, subject, predicate, value, quote = row
        if conn.execute(f"SELECT 1 FROM {TABLE} WHERE rowid = ?", (seq,)).fetchone():
            return                       # a fact's text never changes while it is open
        conn.execute(
            f"INSERT INTO {TABLE} (rowid, fact_id, app, user, subject, predicate, value, quote, terms)"
            " VALUES (?,?,?,?,?,?,?,?,?)",
            (seq, fact_id, app, user, subject, predicate, value, quote,
             document_terms(subject, predicate, value, quote)))

    def after_rebuild(self, conn: sqlite3.Connection) -> None:
        """Merge the index segments so that deleted rows' terms are gone from the file too."""
        conn.execute(f"INSERT INTO {TABLE} ({TABLE}) VALUES ('optimize')")
