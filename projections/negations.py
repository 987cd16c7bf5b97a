"""`key_negations`: every negation the decision table heard, by key and value.

A statement learnt after a negation of its value that was said later must end where, in said
order, that negation ended it (`ledger.late.denied`).  The negation may have found nothing to
retract when it arrived, so it is no fact's event: the key keeps it here, one row per negation
(retracting or not; `ledger.statement.heard_negation` says which events are one).  The events
table has no key columns, so reading them from the log would scan the partition; this is a key
lookup.  Partitioned like every projection: a forget's rebuild takes a forgotten negation away.
"""

from __future__ import annotations

import sqlite3

from factledger.ledger.domain.decision import Negation
from factledger.ledger.domain.eventrow import Event
from factledger.ledger.domain.events import EVENT
from factledger.ledger.domain.statement import heard_negation

SCHEMA = """
CREATE TABLE IF NOT EXISTS key_negations (
    seq INTEGER PRIMARY KEY, app TEXT NOT NULL, user TEXT NOT NULL, subject TEXT NOT NULL,
    predicate TEXT NOT NULL, value_key TEXT NOT NULL, said_at TEXT NOT NULL, basis TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS key_negations_value ON key_negations (app, user, subject, predicate, value_key);
"""


class NegationsProjection:
    name = "negations"
    tables = ("key_negations",)
    schema = SCHEMA
    depends_on: tuple[str, ...] = ()

    # the events `apply` acts on (`heard_negation`; a rebuild hands it no others: projections/runner.py)
    event_types = frozenset((EVENT.FactRetracted, EVENT.CandidateRejected))

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        if event.body is None:
            return
        heard = heard_negation(event.seq, event.type, event.body)
        if heard is None:
            return
        (subject, predicate), wanted, negation = heard
        conn.execute("INSERT INTO key_negations VALUES (?,?,?,?,?,?,?,?)",
                     (event.seq, event.app, event.user, subject, predicate, wanted, negation.said_at,
                      negation.basis))


def negations_of(conn: sqlite3.Connection, app: str, user: str, subject: str, predicate: str,
                 wanted: str) -> list[Negation]:
    """The key's negations of one value (by value key), as the open transaction has them."""
    return [Negation(said_at, basis, seq) for seq, said_at, basis in conn.execute(
        "SELECT seq, said_at, basis FROM key_negations WHERE app = ? AND user = ? AND subject = ?"
        " AND predicate = ? AND value_key = ? ORDER BY seq", (app, user, subject, predicate, wanted))]


def key_negations(conn: sqlite3.Connection, app: str, user: str, subject: str,
                  predicate: str) -> list[tuple[str, Negation]]:
    """Every negation the key has heard, with its value key (re-decision's seed)."""
    return [(wanted, Negation(said_at, basis, seq)) for seq, wanted, said_at, basis in conn.execute(
        "SELECT seq, value_key, said_at, basis FROM key_negations WHERE app = ? AND user = ? AND subject = ?"
        " AND predicate = ? ORDER BY seq", (app, user, subject, predicate))]


def negation_ending(conn: sqlite3.Connection, fact_id: str, said_at: str) -> int | None:
    """The seq of the negation of a fact's value, on its key, said at `said_at` (what a
    `FactNegated` of the fact names by time), or None if the key keeps none."""
    row = conn.execute(
        "SELECT n.seq FROM fact_history f JOIN key_negations n ON n.app = f.app AND n.user = f.user"
        " AND n.subject = f.subject AND n.predicate = f.predicate AND n.value_key = f.value_key"
        " WHERE f.fact_id = ? AND n.said_at = ? ORDER BY n.seq LIMIT 1", (fact_id, said_at)).fetchone()
    return None if row is None else row[0]
