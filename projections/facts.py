"""The facts projection: runs the fold and writes its result to `fact_history` and `facts_current`."""

from __future__ import annotations

import sqlite3

from ledger.store import Event

from . import current, history
from .factbatch import PartitionFacts
from .factstate import transition


class FactsProjection:
    name = "facts"
    tables = ("facts_current", "fact_history")
    schema = current.SCHEMA + history.SCHEMA

    # The last event folded and its new snapshots by fact_id: the recall index projection,
    # which runs next for the same event, takes a touched fact's row from here instead of
    # reading back the facts_current row just written (checked by event identity).
    last: tuple[Event | None, dict] = (None, {})

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        changes = transition(event, history.lookup(conn))
        self.last = (event, {snap["fact_id"]: snap for snap, _reason in changes})
        if changes:
            history.record(conn, event.seq, event.recorded_at, changes)
            current.record(conn, changes)

    def rebuild_partition(self, conn: sqlite3.Connection, events: list[Event], state: dict) -> None:
        """A rebuild's fold of one partition in memory (projections/factbatch.py); the open
        facts are left in `state["open_facts"]` for the recall index, which runs later."""
        facts = PartitionFacts()
        facts.fold(events)
        facts.write(conn)
        state["open_facts"] = facts.open
