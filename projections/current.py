"""`facts_current`: one row per open fact (current or disputed), what readers and `decide` see.

It mirrors the open intervals of `fact_history` whose state is open, so the decision table's one
read per candidate is a small indexed lookup on `(app, user, subject, predicate)`.  The rows are
written by the facts fold (`projections/factbatch.py`).
"""

from __future__ import annotations

from factledger.ledger.store.eventlog import equal_filters
from factledger.projections.factcolumns import FACT_COLUMNS, SNAPSHOT_COLUMNS, column_ddl

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS facts_current (
    {column_ddl(FACT_COLUMNS, types={"fact_id": "TEXT PRIMARY KEY"})}
);
CREATE INDEX IF NOT EXISTS facts_current_key ON facts_current (app, user, subject, predicate);
"""

# An open fact's open interval, joined to its row: the interval must lie on the row's own key, so
# an interval moved to another key in `fact_history` drops the row out of the read (which the key
# checks then call damage) rather than passing under a check that compares only the row.
_OPEN_INTERVAL = ("JOIN fact_history h ON h.app = f.app AND h.user = f.user AND h.fact_id = f.fact_id"
                  " AND h.recorded_to IS NULL AND h.subject = f.subject AND h.predicate = f.predicate")

# A key's open facts, whole, with when each one's open interval began: what `decide` needs and
# what the facts fold needs to carry on from them, in one read (rowid order within the key).
KEY_SNAPSHOTS = (
    f"SELECT {', '.join('f.' + c for c in SNAPSHOT_COLUMNS)}, h.recorded_from"
    f" FROM facts_current f {_OPEN_INTERVAL}"
    " WHERE f.app = ? AND f.user = ? AND f.subject = ? AND f.predicate = ? ORDER BY f.rowid")


KEY_OPEN_IDS = "SELECT fact_id FROM facts_current WHERE app = ? AND user = ? AND subject = ? AND predicate = ?"


# The same read for many keys at once (each row ends with its key), for a batch's decisions.
PREFETCH = 200


def keys_snapshots(count: int) -> str:
    keys = ", ".join("(?,?,?,?)" for _ in range(count))
    return (f"WITH k(a, u, s, p) AS (VALUES {keys})"
            f" SELECT {', '.join('f.' + c for c in SNAPSHOT_COLUMNS)}, h.recorded_from,"
            " f.app, f.user, f.subject, f.predicate"
            " FROM k JOIN facts_current f ON f.app = k.a AND f.user = k.u"
            f" AND f.subject = k.s AND f.predicate = k.p {_OPEN_INTERVAL} ORDER BY f.rowid")


def keys_open_ids(count: int) -> str:
    """`KEY_OPEN_IDS` for many keys at once (each row ends with its key)."""
    keys = ", ".join("(?,?,?,?)" for _ in range(count))
    return (f"WITH k(a, u, s, p) AS (VALUES {keys}) SELECT f.fact_id, f.app, f.user, f.subject, f.predicate"
            " FROM k JOIN facts_current f ON f.app = k.a AND f.user = k.u AND f.subject = k.s AND f.predicate = k.p")


def partition_keys(conn, app: str, user: str) -> list[dict]:
    """The partition's open facts as an extractor sees them (subject, predicate, value), each with
    its `fact_id` and the columns the log check compares (the caller drops them before a prompt)."""
    rows = conn.execute("SELECT fact_id, app, user, subject, predicate, value FROM facts_current WHERE app = ? AND "
                        "user = ? ORDER BY subject, predicate, said_at, fact_id", (app, user))
    return [{"fact_id": f, "app": a, "user": u, "subject": s, "predicate": p, "value": v}
            for f, a, u, s, p, v in rows]


def open_fact_key(conn, fact_id: str) -> tuple[str, str, str, str] | None:
    """(app, user, subject, predicate) of an open fact, or None when it is not open."""
    row = conn.execute("SELECT app, user, subject, predicate FROM facts_current WHERE fact_id = ?",
                       (fact_id,)).fetchone()
    return None if row is None else tuple(row)


def key_open_facts(conn, app: str, user: str, subject: str, predicate: str) -> list[tuple]:
    """(fact_id, value, basis, status, said_at) of a key's open facts, in the order they opened."""
    return conn.execute("SELECT fact_id, value, basis, status, said_at FROM facts_current WHERE app = ?"
                        " AND user = ? AND subject = ? AND predicate = ? ORDER BY rowid",
                        (app, user, subject, predicate)).fetchall()


def open_fact_ids(conn, app: str, user: str) -> set[str]:
    """The ids of a partition's open facts."""
    return {row[0] for row in conn.execute("SELECT fact_id FROM facts_current WHERE app = ? AND user = ?",
                                           (app, user))}


def open_counts(conn, app: str | None = None) -> dict[tuple[str, str], int]:
    """(app, user) -> number of open facts, for every partition (of one app, if given)."""
    where, args = equal_filters(app=app)
    return {(a, u): n for a, u, n in conn.execute(
        "SELECT app, user, COUNT(*) FROM facts_current WHERE 1 = 1" + where + " GROUP BY app, user", args)}


DISPUTE_KEYS = ("fact_id", "app", "user", "subject", "predicate", "value", "quote", "session", "author",
                "said_at", "disputes")


def disputed(conn, app: str | None = None, user: str | None = None) -> list[dict]:
    """The open facts in dispute (of one app or partition, if given), in review order."""
    where, args = equal_filters(app=app, user=user)
    sql = f"SELECT {', '.join(DISPUTE_KEYS)} FROM facts_current WHERE status = 'disputed'" + where
    return [dict(zip(DISPUTE_KEYS, row)) for row in conn.execute(sql + " ORDER BY app, user, said_at, fact_id",
                                                                  args)]


_PAIR = ("SELECT a.fact_id, a.app, a.user, a.subject, a.predicate, a.value, b.fact_id, b.predicate, b.value"
         " FROM facts_current a JOIN facts_current b ON b.app = a.app AND b.user = a.user"
         " AND b.subject = a.subject AND b.predicate = ? WHERE a.predicate = ?")


def pairs(conn, predicate: str, other: str, app: str | None = None, user: str | None = None) -> list[tuple]:
    """Open facts of `predicate` beside an open fact of `other` on the same subject of the same
    partition: (fact_id, app, user, subject, predicate, value, other fact_id, other predicate,
    other value)."""
    where, args = equal_filters(**{"a.app": app, "a.user": user})
    return conn.execute(_PAIR + where + " ORDER BY a.app, a.user, a.fact_id, b.fact_id",
                        [other, predicate, *args]).fetchall()


def partition_counts(conn) -> dict[tuple[str, str], tuple[int, int]]:
    """(app, user) -> (open facts, of which disputed), for every partition with an open fact."""
    return {(a, u): (n, d) for a, u, n, d in conn.execute(
        "SELECT app, user, COUNT(*), SUM(CASE WHEN status = 'disputed' THEN 1 ELSE 0 END)"
        " FROM facts_current GROUP BY app, user")}


REVIEW_KEYS = ("fact_id", "app", "user", "subject", "predicate", "value", "basis", "sensitivity",
               "said_at", "session", "quote", "disputes")


def disputed_by_key(conn) -> list[dict]:
    """Every open fact in dispute, key by key (a reviewer's list), its `disputes` as stored (JSON)."""
    return [dict(zip(REVIEW_KEYS, row)) for row in conn.execute(
        f"SELECT {', '.join(REVIEW_KEYS)} FROM facts_current WHERE status = 'disputed'"
        " ORDER BY app, user, subject, predicate, said_at")]


def key_current(conn, app: str, user: str, subject: str, predicate: str) -> list[dict]:
    """The key's current fact(s): what a disputed one stands against."""
    keys = ("fact_id", "value", "basis", "said_at")
    return [dict(zip(keys, row)) for row in conn.execute(
        "SELECT fact_id, value, basis, said_at FROM facts_current WHERE app = ? AND user = ? AND subject = ?"
        " AND predicate = ? AND status = 'current'", (app, user, subject, predicate))]


def sensitivity(conn, fact_id: str) -> str | None:
    """An open fact's sensitivity (None when it is not open)."""
    row = conn.execute("SELECT sensitivity FROM facts_current WHERE fact_id = ?", (fact_id,)).fetchone()
    return row[0] if row else None
