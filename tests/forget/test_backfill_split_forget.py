"""A split fact (a value said between two statements of one fact, learnt last) after a forget.

Re-decision runs the same table and fold (`ledger/forget/redecide.py`), so a forget ends where a ledger
fed only the survivors, in the order they were recorded, would: the split is made again, or
undone when what made it is forgotten.  Forgetting either part of a split fact by id forgets the
statements of both: they were recorded under the first part's observation (docs/decisions.md).
"""

from __future__ import annotations

import pytest

from factledger.ledger import Ledger
from factledger.ledger.audit.why import related
from tests.conftest import MovableClock
from tests.domain.test_backfill import city, day, line
from tests.forget.test_forget_sequences import state

SAID = [("Lyon", 5, "s5"), ("Lyon", 20, "s20"), ("Oslo", 30, "gone"), ("Goa", 10, "s10")]


def fed(path, said, clock=None):
    ledger = Ledger(path, clock=clock or MovableClock(), create=True)
    for value, n, session in said:
        ledger.observe(city(value, n, session=session))
    return ledger


@pytest.mark.parametrize("session", ["gone", "s20", "s10", "s5"])
def test_forgetting_a_session_ends_where_the_survivors_alone_would(tmp_path, session):
    with fed(tmp_path / "full.db", SAID) as full:
        assert full.history("app", "u1", predicate="home_city")          # the split is there
        full.forget("app", "u1", session=session, reason="test")
        with fed(tmp_path / "fresh.db", [s for s in SAID if s[2] != session]) as fresh:
            assert state(full) == state(fresh)
            assert line(tmp_path / "full.db") == line(tmp_path / "fresh.db")
        assert full.verify()["ok"] and full.replay_differences() == []


def test_forgetting_the_session_that_split_the_fact_makes_it_whole_again(tmp_path):
    with fed(tmp_path / "full.db", SAID[:2] + SAID[3:]) as full:
        full.forget("app", "u1", session="s10", reason="test")
        assert line(tmp_path / "full.db") == [("Lyon", "current", day(5), None)]
        [fact] = full.facts("app", "u1")
        assert (fact["said_at"], fact["session"], fact["confirmed_at"], fact["confidence"]) == (
            day(5), "s5", day(20), 0.92)


def test_forgetting_the_part_split_off_forgets_the_statements_of_both(tmp_path):
    with fed(tmp_path / "full.db", SAID[:2] + SAID[3:]) as full:
        lyon = full.facts("app", "u1")[0]["fact_id"]
        [early] = {r["fact_id"] for r in full.history("app", "u1", predicate="home_city")
                   if r["value"] == "Lyon"} - {lyon}
        receipt = full.forget("app", "u1", fact=early, reason="test")
        assert receipt["counts"]["facts"] == 2                     # both parts, one value
        assert [(f["value"], f["status"]) for f in full.facts("app", "u1")] == [("Goa", "current")]
        assert not full._conn.execute("SELECT 1 FROM events WHERE body LIKE '%Lyon%'").fetchone()
        assert full.verify()["ok"] and full.replay_differences() == []
        again = full.forget("app", "u1", fact=early, reason="test")
        assert again["counts"]["events"] == 0


NEGATED = [("Lyon", 5, "s5"), ("Lyon", 20, "s20"), ("Lyon", 10, "s10")]


def negated_order(path, order):
    ledger = Ledger(path, clock=MovableClock(), create=True)
    for value, n, session in order:
        ledger.observe(city(value, n, session=session, negated=n == 10))
    return ledger


@pytest.mark.parametrize("order", [NEGATED, [NEGATED[1], NEGATED[0], NEGATED[2]]], ids=["5-20-not10", "20-5-not10"])
def test_a_negation_said_between_two_statements_of_one_fact_splits_it(tmp_path, order):
    """Lyon said on days 5 and 20, and "not Lyon" said on day 10, learnt last: as in said order,
    Lyon held from day 5 until it was retracted on day 10, and holds again from day 20."""
    said = [NEGATED[0], NEGATED[2], NEGATED[1]]
    with negated_order(tmp_path / "late.db", order) as late, negated_order(tmp_path / "said.db", said) as fresh:
        assert state(late) == state(fresh)
        assert line(tmp_path / "late.db") == line(tmp_path / "said.db") == [
            ("Lyon", "retracted", day(5), day(10)), ("Lyon", "current", day(20), None)]
        assert late.verify()["ok"] and late.replay_differences() == []
        early = next(r["fact_id"] for r in late.history("app", "u1", predicate="home_city")
                     if r["state"] == "retracted")
        report = late.why(early)
        relations = [r["relation"] for r in related(late._conn, early, report["events"])]
        assert "retracted while it held, learnt late" in relations and "split from (held again later)" in relations
        late.forget("app", "u1", session="s10", reason="test")
        assert line(tmp_path / "late.db") == [("Lyon", "current", day(5), None)]
        assert late.verify()["ok"] and late.replay_differences() == []
