"""The facts fold for a rebuild: one `(app, user)` partition folded in memory, written at once.

The live fold (`history.record`, `current.record`) runs one event at a time inside the appending
transaction and so reads each fact's open interval back from `fact_history` and writes up to
four statements per event.  A rebuild knows the partition's whole log in advance, and every
fact lives in exactly one partition (fact ids are partition-local: the fold never names a fact
of another partition, which is also what makes a one-partition rebuild after forgetting exact).
So a rebuild keeps, per fact, the latest snapshot and its open interval as Python objects, runs
the same `transition` with an in-memory lookup, mirrors the live statements' effect on those
rows (overwrite an interval that lasted no transaction time, close-and-open otherwise), and
writes the partition's rows with one `executemany` per table.

The rows written are the live fold's rows, in the live fold's insertion order within the
partition: `fact_history` rows in the order they were opened, `facts_current` rows in the order
they were (re)inserted (a Python dict keeps a key's position on update and moves it to the end
when it is removed and added again, which is what the upsert and delete do to rowids).
"""

from __future__ import annotations

import sqlite3
from typing import Iterable

from ledger.store import Event

from .factstate import OPEN_STATES, SNAPSHOT_COLUMNS, Snapshot, encode, transition
from .history import HISTORY_COLUMNS

_N = len(SNAPSHOT_COLUMNS)
_RECORDED_FROM = HISTORY_COLUMNS.index("recorded_from")
_RECORDED_TO = HISTORY_COLUMNS.index("recorded_to")
_ENDED_BY = HISTORY_COLUMNS.index("ended_by")
_REASON = HISTORY_COLUMNS.index("reason")

_INSERT_HISTORY = (f"INSERT INTO fact_history ({', '.join(HISTORY_COLUMNS)}) "
                   f"VALUES ({', '.join('?' for _ in HISTORY_COLUMNS)})")
_INSERT_CURRENT = (f"INSERT INTO facts_current ({', '.join(SNAPSHOT_COLUMNS)}) "
                   f"VALUES ({', '.join('?' for _ in SNAPSHOT_COLUMNS)})")


class PartitionFacts:
    """One partition's facts, folded in memory (see the module docstring)."""

    def __init__(self) -> None:
        self.snaps: dict[str, Snapshot] = {}     # latest snapshot of every fact (open interval)
        self.open_rows: dict[str, list] = {}     # fact_id -> its open interval's row
        self.closed: dict[str, list] = {}        # fact_id -> its last closed interval's row
        self.rows: list[list] = []               # every fact_history row, in insertion order
        self.current: dict[str, list] = {}       # facts_current rows, in rowid order
        self.open: dict[str, Snapshot] = {}      # open facts' snapshots (for the recall index)

    def fold(self, events: Iterable[Event]) -> None:
        lookup = self.snaps.get
        for event in events:
            if event.body is None:
                continue
            changes = transition(event, lookup)
            if changes:
                self._record(event.seq, event.recorded_at, changes)

    def _record(self, seq: int, recorded_at: str, changes: list[tuple[Snapshot, str]]) -> None:
        """What `history.record` and `current.record` do to the tables, done to Python rows."""
        for snap, reason in changes:
            fact_id = snap["fact_id"]
            values = encode(snap)
            open_row = self.open_rows.get(fact_id)
            if open_row is not None and open_row[_RECORDED_FROM] == recorded_at:
                open_row[:_N] = values                       # history._REPLACE
                closed = self.closed.get(fact_id)            # history._MORE_REASON
                if (closed is not None and closed[_RECORDED_TO] == recorded_at
                        and reason not in closed[_REASON]):
                    closed[_REASON] = closed[_REASON] + ", " + reason
            else:
                if open_row is not None:                     # history._CLOSE
                    open_row[_RECORDED_TO] = recorded_at
                    open_row[_ENDED_BY] = seq
                    open_row[_REASON] = reason
                    self.closed[fact_id] = open_row
                row = values + [seq, snap["said_at"], recorded_at, None, None, None]
                self.rows.append(row)
                self.open_rows[fact_id] = row
            self.snaps[fact_id] = snap
            if snap["status"] in OPEN_STATES:                # current._UPSERT
                self.current[fact_id] = values
                self.open[fact_id] = snap
            else:                                            # the DELETE
                self.current.pop(fact_id, None)
                self.open.pop(fact_id, None)

    def write(self, conn: sqlite3.Connection) -> None:
        if self.rows:
            conn.executemany(_INSERT_HISTORY, self.rows)
        if self.current:
            conn.executemany(_INSERT_CURRENT, self.current.values())
