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
from factledger.projections.current import PREFETCH

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

    def __init__(self) -> None:
        # A batch's keys read up front (`prefetch`): key -> value key -> its negations, kept as
        # the table has them for this transaction (`apply` adds each one heard meanwhile).
        self._heard: dict[tuple, dict[str, list[Negation]]] = {}

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
        kept = self._heard.get((event.app, event.user, subject, predicate))
        if kept is not None:
            kept.setdefault(wanted, []).append(Negation(negation.said_at, negation.basis, event.seq))

    def prefetch(self, conn: sqlite3.Connection, keys: list[tuple]) -> None:
        """Read the negations of these keys (app, user, subject, predicate) in one statement per
        `PREFETCH` keys, for `negations_of` to answer from for the rest of the transaction."""
        wanted = [k for k in dict.fromkeys(keys) if k not in self._heard]
        for start in range(0, len(wanted), PREFETCH):
            chunk = wanted[start:start + PREFETCH]
            found: dict[tuple, dict[str, list[Negation]]] = {key: {} for key in chunk}
            values = ", ".join("(?,?,?,?)" for _ in chunk)
            for app, user, subject, predicate, seq, value, said_at, basis in conn.execute(
                    f"WITH k(a, u, s, p) AS (VALUES {values}) SELECT n.app, n.user, n.subject, n.predicate,"
                    " n.seq, n.value_key, n.said_at, n.basis FROM k JOIN key_negations n ON n.app = k.a"
                    " AND n.user = k.u AND n.subject = k.s AND n.predicate = k.p ORDER BY n.seq",
                    [v for key in chunk for v in key]):
                found[(app, user, subject, predicate)].setdefault(value, []).append(Negation(said_at, basis, seq))
            self._heard.update(found)

    def negations_of(self, conn: sqlite3.Connection, app: str, user: str, subject: str, predicate: str,
                     wanted: str) -> list[Negation]:
        """`negations_of`, from what `prefetch` read when it read the key."""
        kept = self._heard.get((app, user, subject, predicate))
        if kept is None:
            return negations_of(conn, app, user, subject, predicate, wanted)
        return list(kept.get(wanted, ()))

    def forget_heard(self) -> None:
        """At a transaction's edges: what `prefetch` read is true only inside it."""
        self._heard.clear()


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
