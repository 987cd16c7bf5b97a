"""A rebuild's facts fold of one partition from nothing, on plain rows.

The same fold as `factbatch.FactBatch` with nothing stored (a rebuild's), written for that case
alone: a fact's state is its open `fact_history` row (a list, the snapshot's columns first), the
common events (a fact observed, reinforced, superseded or retracted with nothing in dispute) edit
that row directly, and every other event goes through the general `factstate.transition` on a
snapshot made from the row.  It writes the same statements with the same rows in the same order
as `FactBatch.write` (tests/projections/test_wholefold.py compares them row for row), without a
snapshot dict, `encode` or a lookup per change.  The live fold (`FactBatch`) is not used here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import orjson

from factledger.ledger.domain.candidate import value_key
from factledger.ledger.domain.confidence import BASIS_RANK, reinforced_confidence
from factledger.ledger.domain.events import EVENT
from factledger.ledger.domain.textindex import document_terms_many
from factledger.ledger.vocabulary.words import Rule
from factledger.projections.factbatch import _INSERT_HISTORY, _UPSERT_CURRENT
from factledger.projections.factcolumns import SNAPSHOT_COLUMNS
from factledger.projections.factstate import OPEN_STATES, Snapshot, transition
from factledger.projections.history import HISTORY_COLUMNS

_N = len(SNAPSHOT_COLUMNS)
_C = {name: i for i, name in enumerate(SNAPSHOT_COLUMNS)}
_STATUS, _BASIS, _BASE, _REINF, _CONF = (_C[c] for c in ("status", "basis", "base_confidence",
                                                          "reinforcements", "confidence"))
_SAID_AT, _CONFIRMED_AT, _CONFIRMED_BY = _C["said_at"], _C["confirmed_at"], _C["confirmed_by"]
_DISPUTES, _SESSIONS, _VALID_TO = _C["disputes"], _C["sessions"], _C["valid_to"]
_SUBJECT, _PREDICATE, _VALUE, _QUOTE, _OBSERVED_SEQ = (_C[c] for c in ("subject", "predicate", "value",
                                                                        "quote", "observed_seq"))
# the columns a late first statement replaces (factstate._reinforced)
_FIRST = tuple((_C[c], c) for c in ("said_at", "session", "evidence_event", "quote", "author"))
_VALID_FROM = HISTORY_COLUMNS.index("valid_from")
_RECORDED_FROM = HISTORY_COLUMNS.index("recorded_from")
_RECORDED_TO = HISTORY_COLUMNS.index("recorded_to")
_ENDED_BY = HISTORY_COLUMNS.index("ended_by")
_REASON = HISTORY_COLUMNS.index("reason")
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
            if open_row is not None:                 # close the open interval
                open_row[_RECORDED_TO] = recorded_at
                open_row[_ENDED_BY] = seq
                open_row[_REASON] = reason
                self.closed[fact_id] = open_row
            open_row = values + [seq, values[_SAID_AT], recorded_at, None, None, None]
            self.rows.append(open_row)
            self.open_rows[fact_id] = open_row
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
