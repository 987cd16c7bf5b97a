"""`fact_events`: which events touched which fact, so `why` and forget-planning are index lookups."""

from __future__ import annotations

import sqlite3

from factledger.ledger.domain.eventrow import Event
from factledger.ledger.domain.events import EVENT
from factledger.ledger.store.reads import named_in_bodies

SCHEMA = """
CREATE TABLE IF NOT EXISTS fact_events (
    fact_id TEXT NOT NULL, seq INTEGER NOT NULL, app TEXT NOT NULL, user TEXT NOT NULL,
    type TEXT NOT NULL, role TEXT NOT NULL,
    PRIMARY KEY (fact_id, seq, role)
);
CREATE INDEX IF NOT EXISTS fact_events_partition ON fact_events (app, user);
"""

# Body fields that name a fact, and the role the named fact plays in that event.
_REFERENCES = (("fact_id", "subject"), ("by_fact_id", "replacement"), ("disputes", "disputed"),
               ("winner_id", "winner"), ("split_id", "split"))


class ProvenanceProjection:
    name = "provenance"
    tables = ("fact_events",)
    schema = SCHEMA
    depends_on: tuple[str, ...] = ()

    def __init__(self) -> None:
        self._pending: list[tuple] = []      # rows of the events since the last flush

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        self._pending.extend(_rows(event))

    def flush(self, conn: sqlite3.Connection) -> None:
        rows, self._pending = self._pending, []
        if rows:
            conn.executemany(_INSERT, rows)

    def discard(self) -> None:
        self._pending = []

    def rebuild_partition(self, conn: sqlite3.Connection, events: list[Event], state: dict) -> None:
        """A rebuild: the same rows, every event's in one `executemany` (rows depend on the event alone)."""
        conn.executemany(_INSERT, [row for event in events for row in _rows(event)])

    def rebuild_whole(self, conn: sqlite3.Connection, upto: int) -> None:
        """A full rebuild on SQLite, from the log in the same database: every event's rows at once
        (`WHOLE_LOG`), in place of `rebuild_partition` for each partition."""
        conn.execute(WHOLE_LOG, (upto,))


_INSERT = "INSERT OR IGNORE INTO fact_events VALUES (?,?,?,?,?,?)"

# `_rows` of every event up to a seq, as one statement over the log (the store's
# `named_in_bodies`, SQLite's JSON functions): a full rebuild on SQLite writes the table with it
# instead of binding each row from Python (docs/performance.md, "Rebuild: the Python side").
_ROLE = " ".join(f"WHEN '{field}' THEN '{role}'" for field, role in _REFERENCES)
WHOLE_LOG = (f"INSERT OR IGNORE INTO fact_events SELECT value, seq, app, user, type, CASE field {_ROLE}"
             " WHEN 'loser_ids' THEN 'loser' END FROM "
             f"({named_in_bodies(tuple(field for field, _role in _REFERENCES), ('loser_ids',))})")


def _rows(event: Event) -> list[tuple]:
    body = event.body
    if body is None:
        return []
    seq, app, user, type_ = event.seq, event.app, event.user, event.type
    rows = [(body[field], seq, app, user, type_, role) for field, role in _REFERENCES if body.get(field)]
    losers = body.get("loser_ids")
    if losers:
        rows += [(loser, seq, app, user, type_, "loser") for loser in losers]
    return rows


def fact_partition(conn: sqlite3.Connection, fact_id: str) -> tuple[str, str] | None:
    """(app, user) of the partition a fact lives in, or None if no event touched it."""
    row = conn.execute("SELECT app, user FROM fact_events WHERE fact_id = ? LIMIT 1", (fact_id,)).fetchone()
    return None if row is None else tuple(row)


def observed_in(conn: sqlite3.Connection, fact_id: str, app: str, user: str) -> bool:
    """Whether this partition observed the fact (fact ids are partition-local)."""
    return conn.execute("SELECT 1 FROM fact_events WHERE fact_id = ? AND app = ? AND user = ? AND type ="
                        f" '{EVENT.FactObserved}' LIMIT 1", (fact_id, app, user)).fetchone() is not None


def touching(conn: sqlite3.Connection, fact_id: str) -> list[tuple[int, str]]:
    """(seq, role) of every event that touched a fact, in seq order."""
    return conn.execute("SELECT seq, role FROM fact_events WHERE fact_id = ? ORDER BY seq, role",
                        (fact_id,)).fetchall()


def seqs_touching(conn: sqlite3.Connection, fact_ids: list[str], type_: str) -> list[int]:
    """Seqs of the events of one type that touched any of these facts, in seq order (once per fact
    and role it touched)."""
    marks = ", ".join("?" for _ in fact_ids)
    return [row[0] for row in conn.execute(
        f"SELECT seq FROM fact_events WHERE fact_id IN ({marks}) AND type = ? ORDER BY seq",
        (*fact_ids, type_))]


# The seqs of the events that touched a fact, as a subquery (`log --fact`); and of the events that
# touched any of the facts a subquery names (`log --predicate`).
SEQS_OF_FACT = "SELECT seq FROM fact_events WHERE fact_id = ?"


def seqs_of_facts(facts: str) -> str:
    return f"SELECT seq FROM fact_events WHERE fact_id IN ({facts})"
