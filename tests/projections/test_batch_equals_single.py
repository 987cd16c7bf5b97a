"""A batch folds once and writes each table once, and is still one candidate after another.

`observe_many` reads the key states of its batch up front, decides every candidate in memory,
holds the log's rows and writes each table with one `executemany` at the end.  Property: the same
candidates observed one by one (a transaction each) and in batches, at the same transaction
times, give the same decisions, the same events and the same projection tables, row for row
(ids aside: each ledger mints its own, so ids are numbered in the order the log first names them).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factledger.ledger import Ledger
from factledger.ledger.store.postgres import backend as pg_backend
from tests.conftest import MovableClock
from tests.projections.test_fold_rebuild import _candidate, observation

_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Columns that differ between two ledgers of the same events by construction (salted, chained).
_LOG = "SELECT type, app, user, recorded_at, body FROM events ORDER BY seq"


class Ids:
    """Each id as the order in which its ledger's log first names it."""

    def __init__(self, ledger: Ledger) -> None:
        self.names: dict[str, str] = {}
        for (body,) in ledger._conn.execute("SELECT body FROM events ORDER BY seq"):
            for found in _ID.findall(body or ""):
                self.names.setdefault(found, f"id{len(self.names)}")

    def __call__(self, value):
        return _ID.sub(lambda m: self.names.get(m.group(0), "unknown"), value) if isinstance(value, str) else value


def _tables(ledger: Ledger) -> dict[str, list]:
    ids = Ids(ledger)
    out = {"events": [tuple(map(ids, row)) for row in ledger._conn.execute(_LOG)]}
    for table in ledger.projector.tables:
        rows = [tuple(map(ids, row)) for row in ledger._conn.execute(f"SELECT {_columns(ledger, table)} FROM {table}"
                                                                     + (" ORDER BY rowid" if table == "facts_current"
                                                                        else ""))]
        # facts_current in its own order (the order decide reads a key in); the others as sets
        out[table] = rows if table == "facts_current" else sorted(rows, key=repr)
    return out


def _columns(ledger: Ledger, table: str) -> str:
    """The table's columns but PostgreSQL's explicit `rowid` (an identity an upsert may spend a
    number of without a row: its order is compared, not its values)."""
    names = [d[0] for d in ledger._conn.execute(f"SELECT * FROM {table} LIMIT 0").description]
    return ", ".join(f'"{n}"' if n == "user" else n for n in names if n != "rowid")


def _same(one_location, many_location, ops, sizes, ticks) -> None:
    one_clock, many_clock = MovableClock(), MovableClock()
    with Ledger(one_location, clock=one_clock, create=True) as one, \
            Ledger(many_location, clock=many_clock, create=True) as many:
        singles, batched, start, i = [], [], 0, 0
        while start < len(ops):
            for clock in (one_clock, many_clock):       # one time per batch, on both sides
                clock.tick(ticks[i % len(ticks)])
            chunk = [_candidate(op) for op in ops[start:start + sizes[i % len(sizes)]]]
            singles += [one.observe(c) for c in chunk]
            batched += many.observe_many(chunk)
            start, i = start + len(chunk), i + 1
        assert ([(o.decision, o.reason, o.rule, len(o.seqs)) for o in batched] ==
                [(o.decision, o.reason, o.rule, len(o.seqs)) for o in singles])
        assert _tables(many) == _tables(one)
        assert many.replay_differences() == []


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(observation, min_size=2, max_size=40), st.lists(st.integers(1, 12), min_size=1),
       st.lists(st.sampled_from([0, 0, 60]), min_size=1))
def test_a_batch_equals_its_candidates_one_by_one(ops, sizes, ticks):
    with tempfile.TemporaryDirectory() as tmp:
        _same(Path(tmp) / "one.db", Path(tmp) / "many.db", ops, sizes, ticks)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(observation, min_size=2, max_size=40), st.lists(st.integers(1, 12), min_size=1),
       st.lists(st.sampled_from([0, 0, 60]), min_size=1))
def test_a_batch_equals_its_candidates_one_by_one_on_postgresql(postgres, monkeypatch, ops, sizes, ticks):
    """The same on PostgreSQL, whose batch reads its keys' state and its checks' material in a
    few statements (long key lists sent as arrays) and writes plain inserts' rows with one COPY
    (from two rows here, so that these small batches take that path too)."""
    monkeypatch.setattr(pg_backend, "COPY_ROWS", 2)
    _same(postgres.location(), postgres.location(), ops, sizes, ticks)
