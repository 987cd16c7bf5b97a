"""The facts projection: folds events into `fact_history` and `facts_current` (projections/factbatch.py).

Live, the events of a write transaction are folded into one `FactBatch` and written when the
projector flushes (after every event, or once at the end of a batched transaction); the decision
table's read of a key goes through `key_view`, so a candidate sees what the candidates before it
in the same transaction did, written or not.  A rebuild folds a partition into a fresh batch.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from factledger.ledger.domain.eventrow import Event
from factledger.ledger.errors import LedgerError
from factledger.projections import current, history
from factledger.projections.base import OPEN_FACTS
from factledger.projections.factbatch import FactBatch, OpenFacts, WholeFold
from factledger.projections.factcolumns import SNAPSHOT_COLUMNS
from factledger.projections.factstate import Snapshot
from factledger.projections.keyindex import KeyView, LazyPast


def _check_rows(conn: sqlite3.Connection, batch: FactBatch, key: tuple, rows: list, check: Callable) -> None:
    """Hand a key's stored open facts to `check(conn, key, facts, open_ids)` before the decision
    table reads them.  A fact this batch folded has events the stored row does not know yet: the
    check reads the stored rows as of the last flush, and the key's open set as `facts_current`
    has it (not through the join, which a deleted history interval would shorten without a trace)."""
    names = (*SNAPSHOT_COLUMNS, "recorded_from")
    check(conn, key, [dict(zip(names, row)) for row in rows if row[0] not in batch.snaps],
          {row[0] for row in conn.execute(current.KEY_OPEN_IDS, key)})


class FactsProjection:
    name = "facts"
    tables = ("facts_current", "fact_history")
    schema = current.SCHEMA + history.SCHEMA
    depends_on: tuple[str, ...] = ()

    def __init__(self) -> None:
        self._batch: FactBatch | None = None
        # What the last flush wrote, for the recall index (which flushes next): per fact its
        # snapshot now and whether it was in facts_current before with the same text (a late
        # first statement changes an open fact's quote: it counts as new, so it is indexed again).
        self.flushed: list[tuple[Snapshot, bool]] = []
        # A batch's keys read up front (`prefetch_keys`): each key's closed facts as stored then,
        # for `key_past` (true until the next flush).
        self._past: dict[tuple, list] = {}

    def _live(self, conn: sqlite3.Connection) -> FactBatch:
        if not conn.in_transaction:
            # What the batch holds is only true under the write lock it was read under.
            raise LedgerError("internal: the facts projection is read or applied outside a transaction")
        if self._batch is None:
            self._batch = FactBatch(history.lookup(conn))
        return self._batch

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        self._live(conn).fold((event,))

    def key_view(self, conn: sqlite3.Connection, app: str, user: str, subject: str,
                 predicate: str, check: Callable | None = None) -> KeyView:
        """The key's open facts as this transaction has them (stored, or changed and not yet
        written), indexed by value (projections/keyindex.py).  `check(conn, key, facts)` is given
        the stored rows the batch has not folded yet (what the decision would take from
        `facts_current` as it is) and the key, before anything is decided on them."""
        key = (app, user, subject, predicate)
        batch = self._live(conn)

        def stored() -> list:
            rows = conn.execute(current.KEY_SNAPSHOTS, key).fetchall()
            if check is not None:
                _check_rows(conn, batch, key, rows, check)
            return rows

        return batch.key_view(key, stored)

    def minted(self, conn: sqlite3.Connection, fact_id: str) -> None:
        """A fact id minted in this transaction (`FactBatch.minted`)."""
        self._live(conn).minted.add(fact_id)

    def prefetch_keys(self, conn: sqlite3.Connection, keys, check: Callable | None = None,
                      check_many: Callable | None = None) -> None:
        """The open facts of every key not read yet in this transaction, read in one statement per
        `current.PREFETCH` keys (in the same order `key_view` reads one key), so a batch reads the
        key states it decides on up front instead of one statement per key.  `check_many(conn,
        items)`, when given, checks the chunk's keys at once (`_check_rows` of each, its open ids
        read for all of them in one statement); else `check` checks them one by one."""
        batch = self._live(conn)
        wanted = [k for k in dict.fromkeys(keys) if k not in batch.key_indexes]
        for start in range(0, len(wanted), current.PREFETCH):
            chunk = wanted[start:start + current.PREFETCH]
            args = [v for k in chunk for v in k]
            rows: dict[tuple, list] = {key: [] for key in chunk}
            for row in conn.execute(current.keys_snapshots(len(chunk)), args):
                rows[row[-4:]].append(row[:-4])
            if check_many is not None:
                # with the checks on, each key's past too (checked in the same few statements;
                # `key_past` then reads it from here): a batch's keys mostly open new facts, and
                # a key with nothing open reads its past
                past: dict[tuple, list] = {key: [] for key in chunk}
                for row in conn.execute(history.keys_past(len(chunk)), args):
                    if history.is_past(row):
                        past[row[-4:]].append(row[:-5])
                open_ids: dict[tuple, set[str]] = {key: set() for key in chunk}
                for fact_id, *key in conn.execute(current.keys_open_ids(len(chunk)), args):
                    open_ids[tuple(key)].add(fact_id)
                names = (*SNAPSHOT_COLUMNS, "recorded_from")
                changed = set(batch.current) | batch.removed
                check_many(conn, [(key, [dict(zip(names, row)) for row in found if row[0] not in batch.snaps],
                                   open_ids[key]) for key, found in rows.items()],
                           [(key, [dict(zip(names, row)) for row in found if row[0] not in batch.snaps],
                             {row[0] for row in found}, changed) for key, found in past.items()])
                self._past.update(past)
            for key, found in rows.items():
                if check is not None and check_many is None:
                    _check_rows(conn, batch, key, found, check)
                batch.key_view(key, lambda found=found: found)

    def key_past(self, conn: sqlite3.Connection, app: str, user: str, subject: str,
                 predicate: str, check: Callable | None = None) -> LazyPast:
        """The key's closed facts (superseded or retracted) as this transaction has them, read
        only when iterated: the decision table looks at them for a statement said before the key's
        current fact, which is rare, and the read scans the partition's open history intervals."""
        key = (app, user, subject, predicate)

        def stored() -> list:
            rows = self._past.get(key)
            if rows is not None:              # read (and checked) up front with the batch's keys
                return rows
            rows = conn.execute(history.KEY_PAST, key).fetchall()
            if check is not None:
                # as of the last flush, like the open facts; the facts this transaction changed
                # are the batch's (their rows are not written yet)
                batch = self._live(conn)
                names = (*SNAPSHOT_COLUMNS, "recorded_from")
                check(conn, key, [dict(zip(names, row)) for row in rows if row[0] not in batch.snaps],
                      {row[0] for row in rows}, set(batch.current) | batch.removed)
            return rows

        return LazyPast(lambda: self._live(conn).key_past(key, stored))

    def flush(self, conn: sqlite3.Connection) -> None:
        batch, self._batch = self._batch, None
        self._past = {}
        if batch is None:
            self.flushed = []
            return
        batch.write(conn)
        self.flushed = ([(s, f in batch.stored_open and f not in batch.retold) for f, s in batch.current.items()] +
                        [(batch.snaps[f], f in batch.stored_open) for f in batch.removed])

    def discard(self) -> None:
        self._batch = None
        self._past = {}
        self.flushed = []

    def rebuild_partition(self, conn: sqlite3.Connection, events: list[Event], state: dict) -> None:
        """A rebuild's fold of one partition in memory; the open facts are left in
        `state[OPEN_FACTS]` for the projections that follow this fold (they run later).  The
        fold is `factbatch.WholeFold`, the batch fold written for a partition with nothing stored
        (the same rows, tests/projections/test_wholefold.py)."""
        facts = WholeFold()
        facts.fold(events)
        facts.write(conn)
        state[OPEN_FACTS] = OpenFacts(facts)
