"""The facts fold over a batch of events, held in memory and written with one `executemany` a table.

A write transaction folds the events it appends from what the tables hold, writing only what
changed at the end; a rebuild folds one `(app, user)` partition from nothing with `WholeFold`, the
same fold on plain rows for that case (the same rows, tests/projections/test_wholefold.py). An
interval that would last no transaction time is overwritten, not closed (no `--as-of` could return
it; the log keeps every step for `why`). The rows are those the event-at-a-time SQL fold it
replaced would write (tests/projections/test_fold_reference.py), and `facts_current` keeps the
order `decide` sees a key's open facts in.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping

import orjson

from factledger.ledger.domain.candidate import value_key
from factledger.ledger.domain.confidence import BASIS_RANK, reinforced_confidence
from factledger.ledger.domain.decide import OpenFact
from factledger.ledger.domain.eventrow import Event
from factledger.ledger.domain.events import EVENT
from factledger.ledger.domain.late import PAST_STATES
from factledger.ledger.domain.textindex import document_terms_many
from factledger.ledger.vocabulary.words import Rule
from factledger.projections.factstate import (
    OPEN_FROM,
    OPEN_STATES,
    SNAPSHOT_COLUMNS,
    Lookup,
    Snapshot,
    decode,
    encode,
    transition,
)
from factledger.projections.history import HISTORY_COLUMNS
from factledger.projections.keyindex import KeyIndex, KeyView, past_fact, said_order

_N = len(SNAPSHOT_COLUMNS)
_RECORDED_FROM = HISTORY_COLUMNS.index("recorded_from")
_VALID_FROM = HISTORY_COLUMNS.index("valid_from")
_RECORDED_TO = HISTORY_COLUMNS.index("recorded_to")
_ENDED_BY = HISTORY_COLUMNS.index("ended_by")
_REASON = HISTORY_COLUMNS.index("reason")

_INSERT_HISTORY = (f"INSERT INTO fact_history ({', '.join(HISTORY_COLUMNS)}) "
                  f"VALUES ({', '.join('?' for _ in HISTORY_COLUMNS)})")
# Every statement by fact id names the fact's partition too (fact ids are partition-local): on
# PostgreSQL's partitioned tables that reads one partition's index, not each (docs/scale.md).
_CLOSE = ("UPDATE fact_history SET recorded_to = ?, ended_by = ?, reason = ? "
          "WHERE fact_id = ? AND recorded_to IS NULL AND app = ? AND user = ?")
_REPLACE = (f"UPDATE fact_history SET {', '.join(c + ' = ?' for c in HISTORY_COLUMNS[:_N])}, valid_from = ?"
            " WHERE fact_id = ? AND recorded_to IS NULL AND app = ? AND user = ?")
# By fact id alone: with (app, user) too, SQLite's planner (no statistics) chose the
# (app, user, ...) interval index over the primary key's fact_id and scanned the partition's
# intervals; a rare statement, it probes each leaf's key on a partitioned PostgreSQL ledger.
_MORE_REASON = ("UPDATE fact_history SET reason = reason || ', ' || ? WHERE fact_id = ?"
                " AND recorded_to = ? AND instr(reason, ?) = 0")
# An upsert that updates the row in place: INSERT OR REPLACE would delete the row and insert a
# new one (new rowid), rewriting both index entries every time a fact is reinforced.  A fact's key
# (app, user, subject, predicate) never changes, so the update leaves those columns out: SQLite
# rewrites an index's entry for any SET that names one of its columns, equal or not.
_KEY_COLUMNS = ("fact_id", "app", "user", "subject", "predicate")
_UPSERT_CURRENT = (f"INSERT INTO facts_current ({', '.join(SNAPSHOT_COLUMNS)}) "
                   f"VALUES ({', '.join('?' for _ in SNAPSHOT_COLUMNS)}) ON CONFLICT (fact_id) DO UPDATE SET "
                   + ", ".join(f"{c} = excluded.{c}" for c in SNAPSHOT_COLUMNS if c not in _KEY_COLUMNS))
_DELETE_CURRENT = "DELETE FROM facts_current WHERE fact_id = ? AND app = ? AND user = ?"

_UNSEEN = object()


class FactBatch:
    """A batch's facts, folded in memory (see the module docstring)."""

    def __init__(self, lookup: Lookup | None = None) -> None:
        self._lookup = lookup                      # None in a rebuild: nothing is stored yet
        self.snaps: dict[str, Snapshot] = {}       # latest snapshot of every fact seen
        self.open_rows: dict[str, list] = {}       # fact_id -> its open interval's row
        self.closed: dict[str, list] = {}          # fact_id -> its last interval closed here
        self.rows: list[list] = []                 # fact_history rows opened here, in order
        self.current: dict[str, Snapshot] = {}     # changed facts open now, in rowid order
        self.current_rows: dict[str, list] = {}    # ... and their facts_current rows
        self.removed: set[str] = set()             # changed facts closed now
        self.stored: dict[str, list] = {}          # fact_id -> its open interval as stored
        self.stored_open: set[str] = set()         # ... of those, the ones in facts_current
        self.rewritten: set[str] = set()           # stored open intervals overwritten in place
        self.more_reason: list[tuple] = []         # reasons for intervals closed before the batch
        self.by_key: dict[tuple, list[str]] = {}   # (app, user, subject, predicate) -> fact ids
        self.key_indexes: dict[tuple, KeyIndex] = {}   # keys the decision table has read
        self.retold: set[str] = set()              # facts whose quote changed (recall and vectors re-index)
        self._partition: tuple = ()                # (app, user) of the event being folded
        self.minted: set[str] = set()              # ids minted in this transaction: never stored

    # --- what the batch knows ------------------------------------------------------------

    def get(self, fact_id: str) -> Snapshot | None:
        """The fact's latest snapshot; the transition's lookup."""
        snap = self.snaps.get(fact_id, _UNSEEN)
        if snap is _UNSEEN:
            if self._lookup is None or fact_id in self.minted:
                return None
            found = self._lookup(fact_id, *self._partition)
            if found is None:
                return None
            snap = self.seed(found)
        return snap

    def seed(self, snap: Snapshot) -> Snapshot:
        """Take a fact as stored (a snapshot carrying its open interval's `recorded_from`)."""
        fact_id = snap["fact_id"]
        row = [None] * len(HISTORY_COLUMNS)
        row[_RECORDED_FROM] = snap.pop(OPEN_FROM)
        self.stored[fact_id] = self.open_rows[fact_id] = row
        if snap["status"] in OPEN_STATES:        # open facts are the ones facts_current holds
            self.stored_open.add(fact_id)
        self.snaps[fact_id] = snap
        self._index(snap)
        index = self.key_indexes.get(_key(snap))
        if index is not None:
            index.update(snap)
        return snap

    def key_view(self, key: tuple, stored_rows: Callable[[], Iterable]) -> KeyView:
        """A key's open facts (keyindex.py): those stored (in stored order) as this batch now has
        them, then the ones this batch opened.  `stored_rows` is read once per key and batch."""
        index = self.key_indexes.get(key)
        if index is None:
            stored = []
            for row in stored_rows():
                if row[0] not in self.snaps:
                    self.seed(decode(row))
                stored.append(row[0])
            index = self.key_indexes[key] = KeyIndex(self.snaps)
            for fact_id in (*stored, *self.by_key.get(key, ())):
                index.place(fact_id)
            for fact_id in dict.fromkeys((*stored, *self.by_key.get(key, ()))):
                index.update(self.snaps[fact_id])
        return index.view()

    def key_past(self, key: tuple, stored_rows: Callable[[], Iterable]) -> list[OpenFact]:
        """A key's closed facts that held it (superseded, retracted): those stored as this batch
        now has them, then the ones it closed; in the order they were said."""
        for row in stored_rows():
            if row[0] not in self.snaps:
                self.seed(decode(row))
        snaps = [self.snaps[f] for f in self.by_key.get(key, ())]
        return [past_fact(s) for s in sorted(snaps, key=said_order) if s["status"] in PAST_STATES]

    def _index(self, snap: Snapshot) -> None:
        key = _key(snap)
        ids = self.by_key.setdefault(key, [])
        if snap["fact_id"] not in ids:
            ids.append(snap["fact_id"])
            index = self.key_indexes.get(key)
            if index is not None:
                index.place(snap["fact_id"])

    # --- the fold ------------------------------------------------------------------------

    def fold(self, events: Iterable[Event]) -> None:
        get = self.get
        for event in events:
            if event.body is None:
                continue
            self._partition = (event.app, event.user)   # the facts an event names are its partition's
            changes = transition(event, get)
            if changes:
                self._record(event.seq, event.recorded_at, changes)

    def _record(self, seq: int, recorded_at: str, changes: list[tuple[Snapshot, str]]) -> None:
        for snap, reason in changes:
            fact_id = snap["fact_id"]
            if fact_id not in self.snaps and self._lookup is not None and fact_id not in self.minted:
                self.get(fact_id)                    # a new id may still have a stored interval
            values = encode(snap)
            open_row = self.open_rows.get(fact_id)
            if open_row is not None and open_row[_RECORDED_FROM] == recorded_at:
                open_row[:_N] = values               # overwrite: it lasted no transaction time
                open_row[_VALID_FROM] = snap["said_at"]  # (a late first statement moves it)
                closed = self.closed.get(fact_id)
                if closed is not None:
                    if closed[_RECORDED_TO] == recorded_at and reason not in closed[_REASON]:
                        closed[_REASON] = closed[_REASON] + ", " + reason
                elif open_row is self.stored.get(fact_id):
                    self.rewritten.add(fact_id)
                    self.more_reason.append((reason, fact_id, recorded_at, reason))
            else:
                _reopen(self, fact_id, open_row, values, seq, snap["said_at"], recorded_at, reason)
            if fact_id not in self.snaps:
                self._index(snap)
            elif self.snaps[fact_id]["quote"] != snap["quote"]:
                self.retold.add(fact_id)             # a late first statement: its text is new
            self.snaps[fact_id] = snap
            index = self.key_indexes.get(_key(snap)) if self.key_indexes else None
            if index is not None:
                index.update(snap)
            # A dict keeps a key's place when it is updated and moves it to the end when it is
            # removed and added again: what the upsert and the delete do to rowids.
            if snap["status"] in OPEN_STATES:
                self.current[fact_id] = snap
                self.current_rows[fact_id] = values
                self.removed.discard(fact_id)
            else:
                self.current.pop(fact_id, None)
                self.current_rows.pop(fact_id, None)
                self.removed.add(fact_id)

    # --- writing -------------------------------------------------------------------------

    def write(self, conn: sqlite3.Connection) -> None:
        """Write what changed; `conn` may be anything with `executemany` (a rebuild's buffer)."""
        closes, replaces = [], []
        for fact_id, row in self.stored.items():
            where = (fact_id, *self._where(fact_id))
            if row[_RECORDED_TO] is not None:
                closes.append((row[_RECORDED_TO], row[_ENDED_BY], row[_REASON], *where))
            elif fact_id in self.rewritten:
                replaces.append(row[:_N] + [row[_VALID_FROM], *where])
        if closes:
            conn.executemany(_CLOSE, closes)
        if replaces:
            conn.executemany(_REPLACE, replaces)
        if self.more_reason:
            conn.executemany(_MORE_REASON, self.more_reason)
        if self.rows:
            conn.executemany(_INSERT_HISTORY, self.rows)
        deletes = [(f, *self._where(f)) for f in self.removed if f in self.stored_open]
        if deletes:
            conn.executemany(_DELETE_CURRENT, deletes)
        if self.current_rows:
            conn.executemany(_UPSERT_CURRENT, self.current_rows.values())

    def _where(self, fact_id: str) -> tuple[str, str]:
        snap = self.snaps[fact_id]
        return snap["app"], snap["user"]


def _reopen(fold, fact_id: str, open_row: list | None, values: list, seq: int, said_at: str,
            recorded_at: str, reason: str) -> list:
    """A change that lasted into a later transaction: close the fact's open interval (if any) at
    `recorded_at`, ended by `seq` for `reason`, and open a new one holding `values`.  One rule for
    the live fold (`FactBatch`) and the rebuild's (`WholeFold`), which hold `rows`, `open_rows`
    and `closed` alike."""
    if open_row is not None:
        open_row[_RECORDED_TO] = recorded_at
        open_row[_ENDED_BY] = seq
        open_row[_REASON] = reason
        fold.closed[fact_id] = open_row
    row = values + [seq, said_at, recorded_at, None, None, None]
    fold.rows.append(row)
    fold.open_rows[fact_id] = row
    return row


def _key(snap: Snapshot) -> tuple:
    return (snap["app"], snap["user"], snap["subject"], snap["predicate"])


# --- a rebuild's fold -----------------------------------------------------------------------
# The same fold as `FactBatch` with nothing stored (a rebuild's, one partition from nothing),
# written for that case alone: a fact's state is its open `fact_history` row (a list, the
# snapshot's columns first); the common events (a fact observed, reinforced, superseded or
# retracted with nothing in dispute) edit that row directly, and every other event goes through
# the general `transition` on a snapshot made from the row.  It writes the same statements with
# the same rows in the same order as `FactBatch.write` (tests/projections/test_wholefold.py
# compares them row for row), without a snapshot dict, `encode` or a lookup per change.

_C = {name: i for i, name in enumerate(SNAPSHOT_COLUMNS)}
_STATUS, _BASIS, _BASE, _REINF, _CONF = (_C[c] for c in ("status", "basis", "base_confidence",
                                                          "reinforcements", "confidence"))
_SAID_AT, _CONFIRMED_AT, _CONFIRMED_BY = _C["said_at"], _C["confirmed_at"], _C["confirmed_by"]
_DISPUTES, _SESSIONS, _VALID_TO = _C["disputes"], _C["sessions"], _C["valid_to"]
_SUBJECT, _PREDICATE, _VALUE, _QUOTE, _OBSERVED_SEQ = (_C[c] for c in ("subject", "predicate", "value",
                                                                        "quote", "observed_seq"))
# the columns a late first statement replaces (factstate._reinforced)
_FIRST = tuple((_C[c], c) for c in ("said_at", "session", "evidence_event", "quote", "author"))
# the events that close an open fact (`factstate._superseded`, `_retracted`, `_negated`): the state
# it closes in, and where the end of its valid time is read (`None`: the body's `valid_to`, if any)
_CLOSERS = {EVENT.FactSuperseded: ("superseded", None), EVENT.FactRetracted: ("retracted", "said_at"),
            EVENT.FactNegated: ("retracted", "valid_to")}
_OBSERVED, _REINFORCED = EVENT.FactObserved, EVENT.FactReinforced
_EARLIER = Rule.EARLIER_SAME_VALUE
# a closing event whose rule corrects a closed fact first (`factstate._corrected`): the general path
_CORRECTING = (Rule.BACKFILL, Rule.LATE_NEGATION)


class WholeFold:
    """One partition's facts folded from nothing (see the module docstring)."""

    def __init__(self) -> None:
        self.open_rows: dict[str, list] = {}      # fact_id -> its latest interval (its state first)
        self.closed: dict[str, list] = {}         # fact_id -> its last interval closed
        self.rows: list[list] = []                # fact_history rows, in the order opened
        self.current: dict[str, list] = {}        # open facts, in facts_current's rowid order
        self.sessions: dict[str, list] = {}       # fact_id -> its statements (the column, decoded)
        self.disputes: dict[str, list] = {}       # fact_id -> the facts it disputes (decoded)

    def fold(self, events) -> None:
        open_rows = self.open_rows
        for event in events:
            body = event.body
            if body is None:
                continue
            type_ = event.type
            if type_ == _OBSERVED:
                self._observed(event, body)
            elif type_ == _REINFORCED:
                row = open_rows.get(body["fact_id"])
                if row is not None:
                    self._reinforced(event, body, row)
            elif type_ in _CLOSERS and body.get("rule") not in _CORRECTING:
                fact_id = body["fact_id"]
                row = open_rows.get(fact_id)
                if row is None or row[_STATUS] not in OPEN_STATES:
                    continue
                if self.disputes[fact_id]:
                    self._general(event)         # the facts it disputes are unlinked too
                    continue
                state, field = _CLOSERS[type_]
                values = row[:_N]
                values[_STATUS] = state
                values[_VALID_TO] = body.get("valid_to") if field is None else body[field]
                values[_DISPUTES] = "[]"
                self._record(event.seq, event.recorded_at, values, state)
            else:
                self._general(event)

    def _observed(self, event, body: dict) -> None:
        seq, value, said_at, session, confidence = (event.seq, body["value"], body["said_at"], body["session"],
                                                     body["confidence"])
        statements = [[session, said_at, seq]]
        fact_id = body["fact_id"]
        values = [fact_id, body["app"], body["user"], body["subject"], body["predicate"], value,
                  value_key(value), "current", body["basis"], confidence, 0, confidence, body["sensitivity"],
                  body["kind"], body["cardinality"], said_at, event.recorded_at, body.get("effective_date"),
                  said_at, session, session, body["evidence_event"], body["quote"], body["author"], "[]",
                  orjson.dumps(statements).decode(), seq, None]
        self.sessions[fact_id] = statements
        self.disputes[fact_id] = []
        self._record(seq, event.recorded_at, values, "observed")

    def _reinforced(self, event, body: dict, row: list) -> None:
        values = row[:_N]
        basis = body["basis"]
        if BASIS_RANK[basis] > BASIS_RANK[values[_BASIS]]:
            values[_BASIS] = basis
        base = values[_BASE] = max(values[_BASE], body["confidence"])
        n = values[_REINF] = values[_REINF] + 1
        values[_CONF] = round(reinforced_confidence(base, n), 6)
        fact_id, said_at = values[0], body["said_at"]
        statements = self.sessions[fact_id] = self.sessions[fact_id] + [[body["session"], said_at, event.seq]]
        if body["rule"] == _EARLIER and said_at < values[_SAID_AT]:
            for i, name in _FIRST:
                values[i] = body[name]
        if said_at >= values[_CONFIRMED_AT]:
            values[_CONFIRMED_AT] = said_at
            values[_CONFIRMED_BY] = body["session"]
        values[_SESSIONS] = orjson.dumps(statements).decode()
        self._record(event.seq, event.recorded_at, values, "reinforced")

    def _general(self, event) -> None:
        """Any other event: `factstate.transition` on snapshots made from the rows."""
        for snap, reason in transition(event, self._snapshot):
            fact_id = snap["fact_id"]
            values = [snap[c] for c in SNAPSHOT_COLUMNS]
            disputes, statements = snap["disputes"], snap["sessions"]
            values[_DISPUTES] = orjson.dumps(disputes).decode() if disputes else "[]"
            values[_SESSIONS] = orjson.dumps(statements).decode()
            self.disputes[fact_id], self.sessions[fact_id] = disputes, statements
            self._record(event.seq, event.recorded_at, values, reason)

    def _snapshot(self, fact_id: str) -> Snapshot | None:
        row = self.open_rows.get(fact_id)
        if row is None:
            return None
        snap = dict(zip(SNAPSHOT_COLUMNS, row))
        snap["disputes"], snap["sessions"] = self.disputes[fact_id], self.sessions[fact_id]
        return snap

    def _record(self, seq: int, recorded_at: str, values: list, reason: str) -> None:
        """`FactBatch._record` of one change with nothing stored."""
        fact_id = values[0]
        open_row = self.open_rows.get(fact_id)
        if open_row is not None and open_row[_RECORDED_FROM] == recorded_at:
            open_row[:_N] = values                   # overwrite: it lasted no transaction time
            open_row[_VALID_FROM] = values[_SAID_AT]
            closed = self.closed.get(fact_id)
            if closed is not None and closed[_RECORDED_TO] == recorded_at and reason not in closed[_REASON]:
                closed[_REASON] = closed[_REASON] + ", " + reason
        else:
            open_row = _reopen(self, fact_id, open_row, values, seq, values[_SAID_AT], recorded_at, reason)
        # a dict keeps a key's place when updated, moves it to the end when removed and added again
        if values[_STATUS] in OPEN_STATES:
            self.current[fact_id] = open_row
        else:
            self.current.pop(fact_id, None)

    def write(self, conn) -> None:
        """`FactBatch.write` with nothing stored: the history rows, then the open facts."""
        if self.rows:
            conn.executemany(_INSERT_HISTORY, self.rows)
        if self.current:
            conn.executemany(_UPSERT_CURRENT, [row[:_N] for row in self.current.values()])

    def recall_texts(self) -> list[tuple]:
        """Every open fact's `recall._row` with its texts in place of its terms (subject,
        predicate, value, quote: `recall_terms` cuts them), sorted as `recall` sorts its rows
        (by seq, which no two facts share)."""
        rows = [(r[_OBSERVED_SEQ], r[0], r[1], r[2], r[_SUBJECT], r[_PREDICATE], r[_VALUE], r[_QUOTE])
                for r in self.current.values()]
        rows.sort()
        return rows


def recall_terms(rows: list[tuple]) -> list[tuple]:
    """`WholeFold.recall_texts` rows as `recall._row`s, the texts of all of them cut in one pass."""
    cut = document_terms_many([row[4:] for row in rows])
    return [(*row[:6], terms) for row, terms in zip(rows, cut)]


class OpenFacts(Mapping):
    """The partition's open facts as snapshots (`base.OPEN_FACTS`), made from the rows when read."""

    def __init__(self, fold: WholeFold):
        self.fold = fold

    def __getitem__(self, fact_id: str) -> Snapshot:
        if fact_id not in self.fold.current:
            raise KeyError(fact_id)
        return self.fold._snapshot(fact_id)

    def __iter__(self) -> Iterator[str]:
        return iter(self.fold.current)

    def __len__(self) -> int:
        return len(self.fold.current)
