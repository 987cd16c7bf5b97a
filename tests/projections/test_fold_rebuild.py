"""The invariant that makes the log the source of truth: rebuild from the log == live projections.

Generated sequences of observations (every cardinality, basis, negation, late arrival) and
reviewer resolutions run against a real ledger file; afterwards a rebuild must reproduce every
projection table exactly, and the key-level invariants must hold.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factledger.ledger import Ledger, LedgerError
from factledger.ledger.domain.confidence import BASIS_RANK
from tests.conftest import MovableClock, cand

AUTHORS = {"inferred": "agent", "stated": "user", "verified": "document"}

observation = st.fixed_dictionaries({
    "op": st.just("observe"),
    "user": st.sampled_from(["u1", "u1", "u2"]),
    "subject": st.sampled_from(["user", "user.partner"]),
    "predicate": st.sampled_from(["diet", "diet", "allergy", "blood_pressure", "plan", "refund_rule"]),
    "value": st.sampled_from(["a", "b", "A"]),
    "basis": st.sampled_from(["inferred", "stated", "verified"]),
    "negated": st.sampled_from([False, False, False, True]),
    "session": st.sampled_from(["s1", "s2", "s3", "s4"]),
    "day": st.integers(1, 28),
})
resolution = st.fixed_dictionaries({
    "op": st.just("resolve"), "pick": st.integers(0, 50), "accept": st.booleans()})
operations = st.lists(st.one_of(observation, observation, observation, resolution),
                      min_size=8, max_size=40)


@contextmanager
def ledger_after(ops: list[dict]) -> Iterator[Ledger]:
    """A new ledger in a temporary folder, with `ops` run on it (`run`)."""
    with tempfile.TemporaryDirectory() as tmp:
        clock = MovableClock()
        with Ledger(Path(tmp) / "l.db", clock=clock, create=True) as ledger:
            run(ledger, clock, ops)
            yield ledger


def run(ledger: Ledger, clock: MovableClock, ops: list[dict]) -> None:
    for op in ops:
        clock.tick(60)
        if op["op"] == "observe":
            ledger.observe(cand(user=op["user"], subject=op["subject"], predicate=op["predicate"],
                                value=op["value"], basis=op["basis"], author=AUTHORS[op["basis"]],
                                negated=op["negated"], session=op["session"],
                                said_at=f"2026-08-{op['day']:02d}T10:00:00Z"))
        else:
            disputed = ledger._conn.execute(
                "SELECT fact_id FROM facts_current WHERE disputes != '[]' ORDER BY fact_id").fetchall()
            if disputed:
                fact_id = disputed[op["pick"] % len(disputed)][0]
                ledger.resolve(fact_id, op["accept"], by="reviewer", reason="checked")


def check_invariants(ledger: Ledger) -> None:
    rows = ledger._conn.execute(
        "SELECT app, user, subject, predicate, cardinality, status, basis FROM facts_current").fetchall()
    current: dict = {}
    for app, user, subject, predicate, cardinality, status, basis in rows:
        if status == "current" and cardinality == "one":
            key = (app, user, subject, predicate)
            assert key not in current, f"two current facts for {key}"
            current[key] = basis
    for app, user, subject, predicate, _cardinality, status, _basis in rows:
        if status == "disputed":      # a dispute always has a current fact to dispute
            assert (app, user, subject, predicate) in current
    # no supersession ever replaced a fact with a less authoritative one
    for old_basis, new_basis in ledger._conn.execute(
            "SELECT o.basis, n.basis FROM fact_history o JOIN fact_history n"
            " ON n.fact_id = json_extract(e.body, '$.by_fact_id') AND n.recorded_to IS NULL"
            " JOIN events e ON e.seq = o.ended_by AND e.type = 'FactSuperseded'"
            " WHERE o.recorded_to IS NOT NULL"):
        assert BASIS_RANK[new_basis] >= BASIS_RANK[old_basis]
    # history's open intervals and facts_current agree
    open_history = ledger._conn.execute(
        "SELECT COUNT(*) FROM fact_history WHERE recorded_to IS NULL"
        " AND state IN ('current', 'disputed')").fetchone()[0]
    assert open_history == len(rows)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_rebuild_equals_live(ops):
    with ledger_after(ops) as ledger:
        check_invariants(ledger)
        assert ledger.replay_differences() == []
        before = {t: sorted(ledger._conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr)
                  for t in ledger.projector.tables}
        ledger.replay()
        after = {t: sorted(ledger._conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr)
                 for t in ledger.projector.tables}
        assert before == after
        assert ledger.verify()["ok"]


def test_resolve_refuses_a_fact_not_in_dispute(ledger):
    outcome = ledger.observe(cand(value="vegan"))
    try:
        ledger.resolve(outcome.fact_id, True, by="r", reason="x")
    except LedgerError as err:
        assert "not in dispute" in str(err)
    else:
        raise AssertionError("resolve accepted a fact with no dispute")


def _candidate(op: dict):
    return cand(user=op["user"], subject=op["subject"], predicate=op["predicate"],
                value=op["value"], basis=op["basis"], author=AUTHORS[op["basis"]],
                negated=op["negated"], session=op["session"],
                said_at=f"2026-08-{op['day']:02d}T10:00:00Z")


def _open_values(ledger: Ledger) -> list[tuple]:
    return sorted(ledger._conn.execute(
        "SELECT app, user, subject, predicate, value, status, basis, confidence, reinforcements,"
        " said_at, confirmed_at, session, sessions FROM facts_current").fetchall())


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(observation, min_size=4, max_size=40), st.lists(st.integers(1, 8), min_size=1),
       st.lists(st.sampled_from([0, 0, 60]), min_size=1))
def test_batched_transactions_decide_and_fold_like_single_ones(ops, sizes, ticks):
    """`observe_many` folds a transaction's events in memory and writes at the end; each
    candidate must still see the ones before it, as when each is its own transaction.  A clock
    that does not move gives transactions the same time, so stored intervals are overwritten
    in place and their reasons added to the interval closed at that time."""
    with tempfile.TemporaryDirectory() as tmp:
        one_clock, many_clock = MovableClock(), MovableClock()
        with Ledger(Path(tmp) / "one.db", clock=one_clock, create=True) as one, \
                Ledger(Path(tmp) / "many.db", clock=many_clock, create=True) as many:
            singles = []
            for j, op in enumerate(ops):
                one_clock.tick(ticks[j % len(ticks)])
                singles.append(one.observe(_candidate(op)))
            batched, start, i = [], 0, 0
            while start < len(ops):
                many_clock.tick(ticks[i % len(ticks)])
                size = sizes[i % len(sizes)]
                batched += many.observe_many([_candidate(op) for op in ops[start:start + size]])
                start, i = start + size, i + 1
            assert ([(o.decision, o.reason, o.rule, len(o.seqs)) for o in batched] ==
                    [(o.decision, o.reason, o.rule, len(o.seqs)) for o in singles])
            assert _open_values(many) == _open_values(one)
            check_invariants(many)
            assert many.replay_differences() == []
            assert many.verify()["ok"]


def test_a_stored_interval_overwritten_at_its_own_time_adds_its_reason(ledger, clock):
    """Two transactions at one transaction time: the second overwrites the interval the first
    opened (it lasted no time) and adds its reason to the interval the first closed."""
    first = ledger.observe(cand(value="vegan", session="s1"))
    clock.tick(60)
    ledger.observe(cand(value="vegan", session="s2", event="e2"))                  # reinforce
    ledger.observe_many([cand(value="vegetarian", session="s3", event="e3", basis="inferred",
                              author="agent")])                                  # dispute, same time
    reasons = [r for (r,) in ledger._conn.execute(
        "SELECT reason FROM fact_history WHERE fact_id = ? AND recorded_to IS NOT NULL",
        (first.fact_id,))]
    assert reasons == ["reinforced, disputed"]
    assert ledger.replay_differences() == []
