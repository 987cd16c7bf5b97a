"""A reference for the facts, provenance and recall projections: the event-at-a-time SQL fold
the ledger used before `projections/factbatch.py` (commit 12664aa), kept for tests only.

It shares nothing with the ledger's own writing but `transition` (what an event means for a fact,
one place by design) and the pure row functions: every statement below reads the tables it
writes, one event at a time, so it checks the in-memory batches and their `executemany` writes.
"""

from __future__ import annotations

import sqlite3

import orjson

from factledger.ledger.domain.textindex import document_terms
from factledger.ledger.store.eventlog import Event, iter_events
from factledger.projections.factstate import OPEN_STATES, SNAPSHOT_COLUMNS, encode, transition
from factledger.projections.history import HISTORY_COLUMNS
from factledger.projections.provenance import _rows as provenance_rows
from factledger.projections.runner import Projector

_INSERT = (f"INSERT INTO fact_history ({', '.join(HISTORY_COLUMNS)}) "
           f"VALUES ({', '.join('?' for _ in HISTORY_COLUMNS)})")
_REPLACE = (f"UPDATE fact_history SET {', '.join(c + ' = ?' for c in HISTORY_COLUMNS[:len(SNAPSHOT_COLUMNS)])}"
            ", valid_from = ?"
            " WHERE fact_id = ? AND recorded_to IS NULL AND recorded_from = ?")
_MORE_REASON = ("UPDATE fact_history SET reason = reason || ', ' || ? WHERE fact_id = ?"
                " AND recorded_to = ? AND instr(reason, ?) = 0")
_CLOSE = ("UPDATE fact_history SET recorded_to = ?, ended_by = ?, reason = ? "
          "WHERE fact_id = ? AND recorded_to IS NULL")
_UPSERT = (f"INSERT INTO facts_current ({', '.join(SNAPSHOT_COLUMNS)}) "
           f"VALUES ({', '.join('?' for _ in SNAPSHOT_COLUMNS)}) ON CONFLICT (fact_id) DO UPDATE SET "
           + ", ".join(f"{c} = excluded.{c}" for c in SNAPSHOT_COLUMNS if c != "fact_id"))
_NAMING = ("fact_id", "by_fact_id", "disputes", "winner_id")
TABLES = ("facts_current", "fact_history", "fact_events", "recall_index")


def _lookup(conn: sqlite3.Connection):
    sql = (f"SELECT {', '.join(SNAPSHOT_COLUMNS).replace('status', 'state')}, recorded_from"
           " FROM fact_history WHERE fact_id = ? AND recorded_to IS NULL")

    def find(fact_id: str):
        row = conn.execute(sql, (fact_id,)).fetchone()
        if row is None:
            return None
        snap = dict(zip(SNAPSHOT_COLUMNS, row))
        snap["disputes"] = orjson.loads(snap["disputes"])
        snap["sessions"] = orjson.loads(snap["sessions"])
        return snap

    return find


def apply(conn: sqlite3.Connection, event: Event) -> None:
    body = event.body
    if body is None:
        return
    for snap, reason in transition(event, _lookup(conn)):
        fact_id = snap["fact_id"]
        row = conn.execute("SELECT recorded_from FROM fact_history WHERE fact_id = ?"
                           " AND recorded_to IS NULL", (fact_id,)).fetchone()
        opened = row[0] if row else None
        values = encode(snap)
        if opened == event.recorded_at:
            conn.execute(_REPLACE, values + [snap["said_at"], fact_id, event.recorded_at])
            conn.execute(_MORE_REASON, (reason, fact_id, event.recorded_at, reason))
        else:
            if opened is not None:
                conn.execute(_CLOSE, (event.recorded_at, event.seq, reason, fact_id))
            conn.execute(_INSERT, values + [event.seq, snap["said_at"], event.recorded_at,
                                            None, None, None])
        if snap["status"] in OPEN_STATES:
            conn.execute(_UPSERT, values)
        else:
            conn.execute("DELETE FROM facts_current WHERE fact_id = ?", (fact_id,))
    conn.executemany("INSERT OR IGNORE INTO fact_events VALUES (?,?,?,?,?,?)", provenance_rows(event))
    named = [body[f] for f in _NAMING if isinstance(body.get(f), str) and body.get(f)]
    named += [f for f in body.get("loser_ids", ()) if isinstance(f, str)]
    for fact_id in dict.fromkeys(named):
        row = conn.execute("SELECT observed_seq, app, user, subject, predicate, value, quote"
                           " FROM facts_current WHERE fact_id = ?", (fact_id,)).fetchone()
        if row is None:
            conn.execute("DELETE FROM recall_index WHERE seq = (SELECT observed_seq FROM"
                         " fact_history WHERE fact_id = ? LIMIT 1)", (fact_id,))
            continue
        seq, app, user, subject, predicate, value, quote = row
        conn.execute("INSERT OR REPLACE INTO recall_index VALUES (?,?,?,?,?,?,?)",
                     (seq, fact_id, app, user, subject, predicate,
                      document_terms(subject, predicate, value, quote)))


KEY_ORDER = ("SELECT app, user, subject, predicate, fact_id FROM facts_current"
             " ORDER BY app, user, subject, predicate, rowid")


def key_order(conn: sqlite3.Connection) -> list[tuple]:
    """Each key's open facts in rowid order: the order `decide` sees them in."""
    return conn.execute(KEY_ORDER).fetchall()


def reference_tables(source: sqlite3.Connection) -> dict[str, list[tuple]]:
    """Fold `source`'s whole log, one event at a time, into a fresh in-memory schema; the
    tables' rows sorted, and under "key_order" each key's open facts in rowid order."""
    fresh = sqlite3.connect(":memory:", isolation_level=None)
    Projector().create(fresh)
    fresh.execute("BEGIN")
    for event in iter_events(source):
        apply(fresh, event)
    fresh.execute("COMMIT")
    out = {t: sorted(fresh.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in TABLES}
    out["key_order"] = key_order(fresh)
    fresh.close()
    return out
