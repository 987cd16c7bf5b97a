"""`fact_history`: the bitemporal record, one row per interval in which a fact held one state.

Transaction time is `recorded_from` / `recorded_to`, valid time `valid_from` / `valid_to`;
`--as-of` and `--valid-at` are plain queries over them, and a fact's open interval is the fold's
memory of it (the fold: `projections/factbatch.py`).  One index, `fact_history_intervals`, serves
every read of a partition's history, rather than a key index beside an interval index, which
cost a sixth of the pages a batch wrote at a million events (docs/performance.md); the decision
table's read of a key's past has its own partial index (`fact_history_past`).
"""

from __future__ import annotations

import sqlite3

from factledger.ledger.store.eventlog import equal_filters
from factledger.ledger.store.scopes import each_user
from factledger.projections.factcolumns import FACT_COLUMNS, SNAPSHOT_COLUMNS, column_ddl
from factledger.projections.factstate import Snapshot, decode

# An interval's own columns, after the fact's (`factcolumns.FACT_COLUMNS`, `status` named `state`).
INTERVAL_COLUMNS = (("from_seq", "INTEGER NOT NULL"), ("valid_from", "TEXT NOT NULL"),
                    ("recorded_from", "TEXT NOT NULL"), ("recorded_to", "TEXT"), ("ended_by", "INTEGER"),
                    ("reason", "TEXT"))
HISTORY_COLUMNS = tuple("state" if c == "status" else c for c in SNAPSHOT_COLUMNS) + tuple(
    name for name, _type in INTERVAL_COLUMNS)

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS fact_history (
    {column_ddl(FACT_COLUMNS + INTERVAL_COLUMNS, rename={"status": "state"})},
    PRIMARY KEY (fact_id, from_seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS fact_history_open ON fact_history (fact_id) WHERE recorded_to IS NULL;
CREATE INDEX IF NOT EXISTS fact_history_intervals
    ON fact_history (app, user, recorded_from, recorded_to, subject, predicate);
CREATE INDEX IF NOT EXISTS fact_history_past ON fact_history (app, user, subject, predicate)
    WHERE recorded_to IS NULL AND state IN ('superseded', 'retracted');
"""

# A key's closed facts that held it for a while, as they stand (their open intervals): the
# decision table's view of the key's past, read only for a statement said before its current fact.
# `fact_history_past` holds exactly these rows (one entry per fact closed, none per reinforcement
# or open fact), so the read is a key lookup: through `fact_history_intervals` it scanned the
# partition, and a late statement cost time in proportion to the partition (bench/backfill.py).
KEY_PAST = (
    f"SELECT {', '.join(SNAPSHOT_COLUMNS).replace('status', 'state')}, recorded_from FROM fact_history"
    " WHERE app = ? AND user = ? AND subject = ? AND predicate = ? AND recorded_to IS NULL"
    " AND state IN ('superseded', 'retracted')")


def keys_past(count: int) -> str:
    """`KEY_PAST` for many keys: each row ends with its key."""
    keys = ", ".join("(?,?,?,?)" for _ in range(count))
    return (f"WITH k(a, u, s, p) AS (VALUES {keys})"
            f" SELECT {', '.join('h.' + c for c in SNAPSHOT_COLUMNS).replace('status', 'state')}, h.recorded_from,"
            " h.app, h.user, h.subject, h.predicate FROM k JOIN fact_history h"
            " ON h.app = k.a AND h.user = k.u AND h.subject = k.s AND h.predicate = k.p"
            " WHERE h.recorded_to IS NULL AND h.state IN ('superseded', 'retracted')")


def lookup(conn: sqlite3.Connection):
    """The latest snapshot of a fact, read from its open interval; within its (app, user)
    partition when the caller knows it (fact ids are partition-local), which lets a partitioned
    table read one partition's index."""
    sql = (f"SELECT {', '.join(SNAPSHOT_COLUMNS).replace('status', 'state')}, recorded_from"
           " FROM fact_history WHERE fact_id = ? AND recorded_to IS NULL")
    local = sql + " AND app = ? AND user = ?"

    def find(fact_id: str, app: str | None = None, user: str | None = None) -> Snapshot | None:
        row = (conn.execute(sql, (fact_id,)) if app is None else
               conn.execute(local, (fact_id, app, user))).fetchone()
        return None if row is None else decode(row)

    return find


def fact_label(conn: sqlite3.Connection, fact_id: str) -> tuple[str, str] | None:
    """(predicate, value) of a fact: what it was about, whatever its state."""
    row = conn.execute("SELECT predicate, value FROM fact_history WHERE fact_id = ? LIMIT 1",
                       (fact_id,)).fetchone()
    return None if row is None else tuple(row)


def latest_statement(conn: sqlite3.Connection, fact_id: str) -> tuple | None:
    """(value, session, quote, said_at, author) of a fact's latest interval, or None."""
    return conn.execute("SELECT value, session, quote, said_at, author FROM fact_history WHERE fact_id = ?"
                        " ORDER BY recorded_from DESC LIMIT 1", (fact_id,)).fetchone()


def knows_session(conn: sqlite3.Connection, session: str, app: str | None = None,
                  user: str | None = None) -> bool:
    """Whether any fact was ever stated in this session (of one app or partition, if given)."""
    where, args = equal_filters(app=app, user=user)
    return conn.execute("SELECT 1 FROM fact_history WHERE session = ?" + where + " LIMIT 1",
                        [session, *args]).fetchone() is not None


def open_interval(conn: sqlite3.Connection, fact_id: str) -> tuple[str, str, str] | None:
    """(value, state, sensitivity) of a fact as it stands (its open interval), or None."""
    return conn.execute("SELECT value, state, sensitivity FROM fact_history WHERE fact_id = ?"
                        " AND recorded_to IS NULL", (fact_id,)).fetchone()


# The ids of every fact ever recorded under a predicate, as a subquery (`log --predicate`).
FACTS_OF_PREDICATE = "SELECT fact_id FROM fact_history WHERE predicate = ?"


def values_above(conn, app: str, users, cleared) -> list[str]:
    """The values of every interval of the partition's facts (of each of `users`) whose
    sensitivity `cleared` does not cover: what a reader of that clearance must never see in any
    text, the facts' own rows withheld or not (a health value once said is still one).  One
    statement, an indexed read of each partition's intervals, so recall can ask it on every call."""
    users, cleared = list(users), list(cleared)
    above = f"sensitivity NOT IN ({', '.join('?' * len(cleared))})"
    rows = conn.execute(*each_user(f"SELECT value FROM fact_history WHERE app = ? AND user = ? AND {above}",
                                   users, lambda user: (app, user, *cleared), union="UNION")).fetchall()
    return sorted(value for (value,) in rows if isinstance(value, str))
