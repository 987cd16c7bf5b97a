"""Negations and ingestion order: any order of the same sessions ends as said order does.

`tests/domain/test_backfill.py` promises, for one authority, that every ingestion order of the same
sessions gives the same current facts and valid-time history; its sessions hold no negation.
These hold negations: each case is an order that used to end differently (named after what it
shows), then a property over random sessions and orders, on SQLite and (the cases) PostgreSQL.
The rule is docs/decisions.md, "Late arrivals (backfill)", "Negations, whatever the order".
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factledger.ledger import Ledger
from factledger.ledger.audit import why as why_detail
from tests.conftest import MovableClock, cand
from tests.domain.test_backfill import ALLERGIES, CITIES, city, day, ingest


def allergy(value, n, **extra):
    return cand(predicate="allergy", value=value, said_at=day(n), session=f"s{n}", event=f"e{n}-{value}",
                **{"author": "user", **extra})


def same_in_both_orders(tmp_path, said, other) -> bool:
    return ingest(tmp_path / "said.db", said) == ingest(tmp_path / "other.db", other)


P1, P2, NOT_P3, G2 = city("Pune", 1), city("Pune", 2), city("Pune", 3, negated=True), city("Goa", 2)
L2, NOT_L3, L5 = city("Lyon", 2), city("Lyon", 3, negated=True), city("Lyon", 5)
PEANUTS1, NOT_PEANUTS3 = allergy("peanuts", 1), allergy("peanuts", 3, negated=True)
PEANUTS5, NOT_PEANUTS4 = allergy("peanuts", 5), allergy("peanuts", 4, negated=True)
P3, NOT_P4 = city("Pune", 3), city("Pune", 4, negated=True)

# case: (sessions in said order, the same sessions in an order that used to end differently)
ORDER_DEPENDENT = {
    # "not V" arrives before V: rejected nothing_to_retract, then V becomes current and stays so
    "negation_before_its_value": ([[P1], [NOT_P3]], [[NOT_P3], [P1]]),
    # "not V" said between two statements of V, learnt after the later one: older_than_current
    "negation_older_than_current": ([[L2], [NOT_L3], [L5]], [[L5], [NOT_L3], [L2]]),
    # a value said before a retracted fact of it, on a key with nothing current: a new current fact
    "late_value_on_a_key_with_nothing_current": ([[P1], [P2], [NOT_P3]], [[P2], [NOT_P3], [P1]]),
    # a value said while a fact retracted later held: in said order it supersedes that fact (and
    # the negation then has nothing to retract); learnt last, the retracted fact keeps its interval
    "value_inside_a_retracted_interval": ([[P1], [G2], [NOT_P3]], [[P1], [NOT_P3], [G2]]),
    # "not peanuts" before "peanuts" on a `many` key
    "many_negation_before_its_value": ([[PEANUTS1], [NOT_PEANUTS3]], [[NOT_PEANUTS3], [PEANUTS1]]),
    # a negation said between two statements of a `many` value, learnt after both: a split
    "many_negation_between_two_statements": ([[PEANUTS1], [NOT_PEANUTS3], [PEANUTS5]],
                                             [[PEANUTS1], [PEANUTS5], [NOT_PEANUTS3]]),
    # two negations of a `many` value learnt in reverse: the earlier one ends the fact
    "many_earlier_negation_learnt_last": ([[PEANUTS1], [NOT_PEANUTS3], [NOT_PEANUTS4]],
                                          [[PEANUTS1], [NOT_PEANUTS4], [NOT_PEANUTS3]]),
    # a negation that retracted one fact must retract another said later and learnt later still:
    # Pune 1, Goa 2, Pune 3, "not Pune" 4, learnt as Pune 1, "not Pune" 4, Goa 2, Pune 3
    "a_negation_that_retracted_ends_a_later_value_too": ([[P1], [G2], [P3], [NOT_P4]],
                                                         [[P1], [NOT_P4], [G2], [P3]]),
}



@pytest.mark.parametrize("case", sorted(ORDER_DEPENDENT))
def test_negation_orders_end_as_said_order(tmp_path, case):
    said, other = ORDER_DEPENDENT[case]
    assert same_in_both_orders(tmp_path, said, other)


@st.composite
def sessions_with_negations(draw):
    """As `test_backfill.sessions`, one authority, plus negations of a city or an allergy said in
    an earlier session (a session states a city or negates one, never both: two statements of one
    key at one instant are ordered by arrival)."""
    n = draw(st.integers(2, 7))
    basis, author = draw(st.sampled_from([("stated", "user"), ("inferred", "agent"), ("verified", "document")]))
    out, cities, allergies = [], [], []
    for i in range(n):
        said, t = [], 2 + 3 * i
        if cities and draw(st.booleans()):
            value = draw(st.sampled_from(cities))
            said.append(city(value, t, session=f"s{i}", basis=basis, author=author, negated=True))
        else:
            value = draw(st.sampled_from([None, *CITIES[:draw(st.integers(1, len(CITIES)))]]))
            if value is not None:
                cities.append(value)
                said.append(city(value, t, session=f"s{i}", basis=basis, author=author))
        stated = draw(st.lists(st.sampled_from(ALLERGIES), max_size=2, unique=True))
        for value in stated:
            allergies.append(value)
            said.append(cand(predicate="allergy", value=value, said_at=day(t), session=f"s{i}",
                             event=f"e{i}-{value}", basis=basis, author=author))
        negated = [a for a in dict.fromkeys(allergies) if a not in stated]
        if negated and draw(st.booleans()):
            value = draw(st.sampled_from(negated))
            said.append(cand(predicate="allergy", value=value, said_at=day(t), session=f"s{i}",
                             event=f"e{i}-not-{value}", basis=basis, author=author, negated=True))
        if said:
            out.append(said)
    return out



def _shuffled_ends_as_said(tmp_path_factory, said, rnd) -> None:
    shuffled = list(said)
    rnd.shuffle(shuffled)
    folder = tmp_path_factory.mktemp("orders")
    assert ingest(folder / "shuffled.db", shuffled) == ingest(folder / "in_order.db", said)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sessions_with_negations(), st.randoms(use_true_random=False))
def test_any_ingestion_order_with_negations(tmp_path_factory, said, rnd):
    _shuffled_ends_as_said(tmp_path_factory, said, rnd)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sessions_with_negations(), st.randoms(use_true_random=False))
def test_any_ingestion_order_with_negations_long(tmp_path_factory, said, rnd):
    _shuffled_ends_as_said(tmp_path_factory, said, rnd)


def _facts_and_valid_time(location: str, order) -> tuple[list, list]:
    """What `ingest` compares, read through the library only (any backend)."""
    clock = MovableClock()
    with Ledger(location, clock=clock, create=True) as ledger:
        for session in order:
            clock.tick(60)
            ledger.observe_many(session)
        current = sorted((f["predicate"], f["value"], f["status"], f["said_at"], f["session"], f["confirmed_at"])
                         for f in ledger.facts("app", "u1", include_sensitive=True))
        valid = [sorted((f["predicate"], f["value"], f["state"], f["valid_from"], f["valid_to"])
                        for f in ledger.facts("app", "u1", include_sensitive=True, valid_at=day(n)[:10]))
                 for n in range(1, 8)]
        assert ledger.replay_differences() == []
    return current, valid


@pytest.mark.parametrize("case", sorted(ORDER_DEPENDENT))
def test_negation_orders_end_as_said_order_on_postgresql(postgres, case):
    said, other = ORDER_DEPENDENT[case]
    assert _facts_and_valid_time(postgres.location(), other) == _facts_and_valid_time(postgres.location(), said)


def test_a_value_learnt_after_its_negation_is_retracted_there_and_why_names_the_negation(tmp_path):
    clock = MovableClock()
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        negation = ledger.observe(NOT_P3)
        assert (negation.decision, negation.reason) == ("reject", "nothing_to_retract")
        late = ledger.observe(P1)
        assert (late.decision, late.reason) == ("insert", "negated_later")
        assert ledger.facts("app", "u1") == []
        (fact,) = ledger.facts("app", "u1", valid_at=day(2)[:10])
        assert (fact["value"], fact["state"], fact["valid_from"], fact["valid_to"]) == ("Pune", "retracted", day(1), day(3))
        report = ledger.why(late.fact_id)
        related = [r for r in why_detail.related(ledger._conn, late.fact_id, report["events"])
                   if r["type"] == "FactNegated"]
        assert [(r["relation"], r["session"], r["quote"], r["said_at"]) for r in related] == [
            ("retracted by a negation heard before it", "s3", NOT_P3.quote, day(3))]
        assert ledger._conn.execute("SELECT seq, value_key, said_at FROM key_negations").fetchall() == [
            (negation.seqs[0], "pune", day(3))]


def test_forgetting_the_negation_opens_the_value_again_and_takes_its_row(tmp_path):
    clock = MovableClock()
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        ledger.observe(NOT_P3)
        ledger.observe(P1)
        ledger.forget("app", "u1", session="s3", reason="erasure request")
        assert [(f["value"], f["status"], f["said_at"]) for f in ledger.facts("app", "u1")] == [("Pune", "current", day(1))]
        assert ledger._conn.execute("SELECT COUNT(*) FROM key_negations").fetchone()[0] == 0
        assert ledger.verify()["ok"] and ledger.replay_differences() == []


def test_forgetting_a_value_takes_its_negations_rows_and_leaves_no_byte(tmp_path):
    """A negation of a forgotten value is that value's data too: its event and its `key_negations`
    row (the value key, a copy derived from the value) go, and the file holds no byte of it."""
    clock = MovableClock()
    path = tmp_path / "l.db"
    marker = "Zqxvilleborough"
    with Ledger(path, clock=clock, create=True) as ledger:
        ledger.observe(city(marker, 3, negated=True, quote=f"we no longer live in {marker}"))
        late = ledger.observe(city(marker, 1, quote=f"we live in {marker}"))
        ledger.observe(city("Pune", 5))
        assert late.reason == "negated_later"
        ledger.forget("app", "u1", fact=late.fact_id, reason="erasure request", vacuum=True)
        assert ledger._conn.execute("SELECT COUNT(*) FROM key_negations").fetchone()[0] == 0
        assert ledger.verify()["ok"] and ledger.replay_differences() == []
    for name in (path, path.with_name(path.name + "-wal")):
        if name.exists():
            data = name.read_bytes()
            assert marker.encode() not in data and marker.casefold().encode() not in data
