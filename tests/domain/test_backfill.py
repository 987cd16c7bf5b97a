"""Late arrivals: a statement said before the key's current fact is kept as history (`backfill`).

The property: for statements of one authority, on a `one` key (values may come back once replaced:
a value said between two statements of one fact splits it) and a `many` key, every order of
ingesting the same sessions ends with the same current facts and the same valid-time history
(docs/decisions.md, "Late arrivals", says why the promise stops at one authority).
"""

from __future__ import annotations

import itertools
import json
import sqlite3

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factledger.cli.main import cli
from factledger.ledger import Ledger
from factledger.ledger.audit.why import related
from factledger.projections.history import KEY_PAST
from tests.conftest import MovableClock, cand
from tests.projections.reference_fold import TABLES, reference_tables

TRUE_STATES = ("current", "disputed", "superseded", "retracted")


def day(n: int) -> str:
    return f"2026-08-{n:02d}T10:00:00.000000Z"


def city(value, n, session=None, **extra):
    return cand(predicate="home_city", value=value, said_at=day(n), session=session or f"s{n}",
                event=f"e{n}", **{"author": "user", **extra})


def line(path, predicate="home_city") -> list[tuple]:
    """The key's valid-time line as today's knowledge has it: (value, state, valid_from, valid_to)."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT value, state, valid_from, valid_to FROM fact_history WHERE recorded_to IS NULL"
            " AND predicate = ? AND state IN ('current', 'disputed', 'superseded', 'retracted')"
            " ORDER BY valid_from, value, state, valid_to", (predicate,)).fetchall()
    return [tuple(r) for r in rows]


def test_late_value_is_backfilled_between_its_neighbours(ledger, tmp_path):
    ledger.observe(city("Pune", 1))
    ledger.observe(city("Lyon", 20))
    out = ledger.observe(city("Goa", 10))
    assert (out.decision, out.rule, out.reason) == ("backfill", "backfill", "backfilled")
    assert [f["value"] for f in ledger.facts("app", "u1")] == ["Lyon"]        # current untouched
    assert line(tmp_path / "ledger.db") == [
        ("Pune", "superseded", day(1), day(10)),                             # cut short
        ("Goa", "superseded", day(10), day(20)),
        ("Lyon", "current", day(20), None)]
    at = ledger.facts("app", "u1", valid_at="2026-08-15")
    assert [(f["value"], f["state"]) for f in at] == [("Goa", "superseded")]


def test_why_names_both_sides_of_a_backfill(ledger):
    pune = ledger.observe(city("Pune", 1)).fact_id
    lyon = ledger.observe(city("Lyon", 20)).fact_id
    goa = ledger.observe(city("Goa", 10)).fact_id

    def relations(fact_id):
        report = ledger.why(fact_id)
        return [(r["relation"], r["value"]) for r in related(ledger._conn, fact_id, report["events"])]

    assert ("learnt late, held until", "Lyon") in relations(goa)
    assert ("cut short the value before it", "Pune") in relations(goa)
    assert ("cut short by a value learnt late", "Goa") in relations(pune)
    assert ("followed a value learnt late", "Goa") in relations(lyon)


def test_the_cli_shows_a_backfill_in_why_and_valid_at(tmp_path, clock):
    path = tmp_path / "ledger.db"
    with Ledger(path, clock=clock, create=True) as ledger:
        ledger.observe(city("Pune", 1))
        ledger.observe(city("Lyon", 20))
        clock.set("2026-11-20T00:00:00Z")
        goa = ledger.observe(city("Goa", 10)).fact_id
    runner = CliRunner(env={"FACTLEDGER_NOW": "2026-12-01T00:00:00Z"})
    observed = runner.invoke(cli, ["--db", str(path), "observe", "--app", "app", "--user", "u1", "--predicate",
                                   "home_city", "--value", "Oslo", "--quote", "Oslo then", "--session", "s12",
                                   "--event-id", "e12", "--said-at", day(12), "--json"])
    assert json.loads(observed.stdout)["decision"] == "backfill", observed.output
    why = runner.invoke(cli, ["--db", str(path), "why", goa, "-t"]).stdout
    assert "learnt late, held until 'Oslo'" in why and "valid 2026-08-10T10:00:00.000000Z .. 2026-08-12" in why
    table = runner.invoke(cli, ["--db", str(path), "facts", "--app", "app", "--user", "u1",
                                "--valid-at", "2026-08-11", "--json"]).stdout
    [row] = json.loads(table)
    assert (row["value"], row["state"], row["valid_from"], row["valid_to"]) == ("Goa", "superseded", day(10), day(12))
    assert row["recorded_from"] > row["valid_to"]                    # learnt after it stopped holding
    shown = runner.invoke(cli, ["--db", str(path), "facts", "--app", "app", "--user", "u1",
                                "--valid-at", "2026-08-11", "-t"]).stdout
    assert "recorded_from" in shown.splitlines()[0]


def test_the_correction_is_recorded_in_transaction_time(ledger, clock):
    ledger.observe(city("Pune", 1))
    clock.tick(60)
    ledger.observe(city("Lyon", 20))
    clock.tick(60)
    before = clock.now.isoformat()
    clock.tick(60)
    ledger.observe(city("Goa", 10))
    believed = ledger.facts("app", "u1", as_of=before, valid_at="2026-08-15")
    assert [(f["value"], f["state"]) for f in believed] == [("Pune", "superseded")]
    now = ledger.facts("app", "u1", valid_at="2026-08-15")
    assert [f["value"] for f in now] == ["Goa"]


def test_an_earlier_statement_of_the_current_value_moves_its_start(ledger, tmp_path):
    ledger.observe(city("Lyon", 20))
    out = ledger.observe(city("Lyon", 5))
    assert (out.decision, out.rule) == ("backfill", "earlier_same_value")
    [fact] = ledger.facts("app", "u1")
    assert (fact["said_at"], fact["session"], fact["confirmed_at"]) == (day(5), "s5", day(20))
    assert line(tmp_path / "ledger.db") == [("Lyon", "current", day(5), None)]


def test_a_value_said_between_two_statements_of_one_fact_splits_it(ledger, tmp_path):
    """Lyon said on days 5 and 20 is one fact; Goa, said on day 10 and learnt last, splits it: the
    part before ends at Goa, Goa holds until day 20, and Lyon (the fact's id) holds again from
    its statement of day 20, as in said order, where that statement was a new fact."""
    lyon = ledger.observe(city("Lyon", 20)).fact_id
    ledger.observe(city("Lyon", 5))
    out = ledger.observe(city("Goa", 10))
    assert (out.decision, out.rule, out.reason) == ("backfill", "backfill", "split")
    [fact] = ledger.facts("app", "u1")
    assert (fact["fact_id"], fact["value"], fact["said_at"], fact["session"], fact["confirmed_at"]) == (
        lyon, "Lyon", day(20), "s20", day(20))
    assert line(tmp_path / "ledger.db") == [("Lyon", "superseded", day(5), day(10)),
                                             ("Goa", "superseded", day(10), day(20)),
                                             ("Lyon", "current", day(20), None)]


THREE = [("Lyon", 5), ("Goa", 10), ("Lyon", 20)]


@pytest.mark.parametrize("order", list(itertools.permutations(THREE)), ids=lambda o: "-".join(f"{v}{d}" for v, d in o))
def test_every_order_of_a_value_that_comes_back_gives_the_same_facts(tmp_path, order):
    """A d5, B d10, A d20 in all six orders: the same current fact and the same valid-time line."""
    folder = tmp_path / "o"
    folder.mkdir()
    said = [[city(value, n)] for value, n in THREE]
    got = ingest(folder / "any.db", [[city(value, n)] for value, n in order])
    assert got == ingest(folder / "said.db", said)
    assert got[1][-2] == [("Lyon", "superseded", day(5), day(10)), ("Goa", "superseded", day(10), day(20)),
                       ("Lyon", "current", day(20), None)]


def test_a_split_is_recorded_in_transaction_time(ledger, clock):
    ledger.observe(city("Lyon", 5))
    clock.tick(60)
    ledger.observe(city("Lyon", 20))
    clock.tick(60)
    before = clock.now.isoformat()
    clock.tick(60)
    ledger.observe(city("Goa", 10))
    believed = ledger.facts("app", "u1", as_of=before, valid_at="2026-08-15")
    assert [(f["value"], f["state"], f["valid_from"]) for f in believed] == [("Lyon", "current", day(5))]
    [then] = ledger.facts("app", "u1", as_of=before)
    assert (then["said_at"], then["session"]) == (day(5), "s5")
    now = ledger.facts("app", "u1", valid_at="2026-08-15")
    assert [(f["value"], f["state"]) for f in now] == [("Goa", "superseded")]


def test_a_closed_fact_is_split_too(ledger, tmp_path):
    """Lyon (days 5, 20) was replaced by Oslo on day 30; Goa on day 10 splits the closed Lyon."""
    ledger.observe(city("Lyon", 5))
    ledger.observe(city("Lyon", 20))
    ledger.observe(city("Oslo", 30))
    out = ledger.observe(city("Goa", 10))
    assert (out.decision, out.reason) == ("backfill", "split")
    assert [f["value"] for f in ledger.facts("app", "u1")] == ["Oslo"]
    assert line(tmp_path / "ledger.db") == [("Lyon", "superseded", day(5), day(10)),
                                             ("Goa", "superseded", day(10), day(20)),
                                             ("Lyon", "superseded", day(20), day(30)),
                                             ("Oslo", "current", day(30), None)]


def test_why_says_the_earlier_part_was_cut_short_by_the_late_value(ledger):
    lyon = ledger.observe(city("Lyon", 5)).fact_id
    ledger.observe(city("Lyon", 20))
    goa = ledger.observe(city("Goa", 10)).fact_id
    [early] = [r["fact_id"] for r in ledger.history("app", "u1", predicate="home_city")
               if r["value"] == "Lyon" and r["fact_id"] != lyon]

    def relations(fact_id):
        report = ledger.why(fact_id)
        return [(r["relation"], r["value"]) for r in related(ledger._conn, fact_id, report["events"])]

    assert ("cut short by a value learnt late", "Goa") in relations(early)
    assert ("split from (held again later)", "Lyon") in relations(early)
    assert ("held again after a value learnt late", "Goa") in relations(lyon)
    assert ("learnt late, held until", "Lyon") in relations(goa)
    runner = CliRunner(env={"FACTLEDGER_NOW": "2026-12-01T00:00:00Z"})
    shown = runner.invoke(cli, ["--db", str(ledger.path), "why", early, "-t"]).stdout
    assert "cut short by a value learnt late 'Goa'" in shown and "valid 2026-08-05T10:00:00.000000Z .. 2026-08-10" in shown


def test_a_late_repeat_of_a_past_value_reinforces_it_in_the_past(ledger, tmp_path):
    ledger.observe(city("Pune", 1))
    ledger.observe(city("Lyon", 20))
    out = ledger.observe(city("Pune", 10))
    assert (out.decision, out.rule) == ("reinforce", "late_same_value")
    assert line(tmp_path / "ledger.db")[0] == ("Pune", "superseded", day(1), day(20))
    history = ledger.history("app", "u1", predicate="home_city")
    pune = [r for r in history if r["value"] == "Pune"][-1]
    assert (pune["confirmed_at"], pune["confirmed_by"], pune["confidence"]) == (day(10), "s10", 0.92)


def test_a_backfilled_value_can_be_retracted_in_the_past(ledger, tmp_path):
    ledger.observe(city("Lyon", 20))
    ledger.observe(city("Pune", 1))
    out = ledger.observe(city("Pune", 10, negated=True))
    assert (out.decision, out.rule) == ("retract", "late_negation")
    assert line(tmp_path / "ledger.db") == [("Pune", "retracted", day(1), day(10)),
                                             ("Lyon", "current", day(20), None)]
    assert [f["value"] for f in ledger.facts("app", "u1")] == ["Lyon"]


def test_a_backfilled_value_is_disputed_by_a_weaker_late_one(ledger, tmp_path):
    """Said under the authority of a stronger past value, a weaker late one does not cut it short:
    in order, it would have disputed that value and closed with it."""
    ledger.observe(city("Lyon", 20, basis="inferred", author="agent"))
    ledger.observe(city("Pune", 1))                                    # stated: backfilled
    out = ledger.observe(city("Goa", 10, basis="inferred", author="agent"))
    assert (out.decision, out.rule) == ("backfill", "backfill")
    assert line(tmp_path / "ledger.db") == [("Pune", "superseded", day(1), day(20)),
                                             ("Goa", "superseded", day(10), day(20)),
                                             ("Lyon", "current", day(20), None)]


def test_a_weaker_late_value_still_disputes_the_current_one(ledger):
    """The table's order: authority against the current fact first, then time (docs/decisions.md)."""
    ledger.observe(city("Lyon", 20))
    out = ledger.observe(city("Goa", 10, basis="inferred", author="agent"))
    assert (out.decision, out.reason) == ("dispute", "lower_authority_than_current")


def test_redecision_backfills_the_same_way(tmp_path, clock):
    """A forget re-decides what follows it through the same table: a late statement recorded after
    a now-forgotten session is decided again with the key's past (Pune, closed before the cut)."""
    with Ledger(tmp_path / "a.db", clock=clock, create=True) as a:
        a.observe(city("Pune", 1))
        a.observe(city("Lyon", 20))
        a.observe(city("Oslo", 30, session="gone"))
        assert a.observe(city("Goa", 10)).decision == "backfill"
        a.forget("app", "u1", session="gone", reason="test")
        forgot = line(tmp_path / "a.db")
        current = [(f["value"], f["said_at"]) for f in a.facts("app", "u1")]
    with Ledger(tmp_path / "b.db", clock=MovableClock(), create=True) as b:
        for said in (city("Pune", 1), city("Lyon", 20), city("Goa", 10)):
            b.observe(said)
        assert current == [(f["value"], f["said_at"]) for f in b.facts("app", "u1")] == [("Lyon", day(20))]
    assert forgot == line(tmp_path / "b.db") == [("Pune", "superseded", day(1), day(10)),
                                                  ("Goa", "superseded", day(10), day(20)),
                                                  ("Lyon", "current", day(20), None)]


# The property -----------------------------------------------------------------------------------

CITIES = ["Pune", "Goa", "Lyon", "Oslo"]
ALLERGIES = ["peanuts", "shellfish", "pollen"]


@st.composite
def sessions(draw):
    """Sessions in said order (one day each): any run of cities (a value may come back after
    another replaced it: A, B, A), and any allergies; each session's statements share its time,
    and every statement one source kind (user, agent or document: one authority)."""
    n = draw(st.integers(2, 7))
    basis, author = draw(st.sampled_from([("stated", "user"), ("inferred", "agent"), ("verified", "document")]))
    out = []
    for i in range(n):
        said = []
        value = draw(st.sampled_from([None, *CITIES[:draw(st.integers(1, len(CITIES)))]]))
        if value is not None:
            said.append(city(value, 2 + 3 * i, session=f"s{i}", basis=basis, author=author))
        for allergy in draw(st.lists(st.sampled_from(ALLERGIES), max_size=2, unique=True)):
            said.append(cand(predicate="allergy", value=allergy, said_at=day(2 + 3 * i), session=f"s{i}",
                             event=f"e{i}-{allergy}", basis=basis, author=author))
        if said:
            out.append(said)
    return out


def ingest(path, order) -> tuple[list, list]:
    clock = MovableClock()
    with Ledger(path, clock=clock, create=True) as ledger:
        for session in order:
            clock.tick(60)
            ledger.observe_many(session)
        current = sorted(
            (f["subject"], f["predicate"], f["value"], f["status"], f["basis"], f["said_at"], f["session"],
             f["quote"], f["confirmed_at"], f["confirmed_by"], f["confidence"])
            for f in ledger.facts("app", "u1", include_sensitive=True))
        valid = [sorted((f["predicate"], f["value"], f["state"], f["valid_from"], f["valid_to"])
                        for f in ledger.facts("app", "u1", include_sensitive=True, valid_at=day(n)[:10]))
                 for n in range(1, 26)]
    return current, valid + [line(path), line(path, "allergy")]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sessions(), st.randoms(use_true_random=False))
def test_any_ingestion_order_gives_the_same_facts_and_valid_time(tmp_path_factory, said, rnd):
    shuffled = list(said)
    rnd.shuffle(shuffled)
    folder = tmp_path_factory.mktemp("orders")
    in_order = ingest(folder / "in_order.db", said)
    assert ingest(folder / "shuffled.db", shuffled) == in_order


def test_the_part_split_off_is_a_fact_of_its_own(ledger):
    """The part before a split is opened by the split (its own observed_seq, by which the recall
    index and the key's said order tell facts apart): a rejected repeat that names it later leaves
    the current fact's recall row alone, in the live fold and in the event-at-a-time one."""
    lyon = ledger.observe(city("Lyon", 5)).fact_id
    ledger.observe(city("Lyon", 20))
    ledger.observe(city("Goa", 10))
    assert ledger.observe(city("Lyon", 7, session="s5")).reason == "already_counted"
    assert ledger._conn.execute("SELECT fact_id FROM recall_index").fetchall() == [(lyon,)]
    live = {t: sorted(ledger._conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in TABLES}
    assert live == {t: rows for t, rows in reference_tables(ledger._conn).items() if t in TABLES}
    assert ledger.replay_differences() == []


def test_the_past_of_a_key_is_read_by_key_not_by_scanning_the_partition(ledger):
    """`KEY_PAST` goes through its partial index (`fact_history_past`), so a late statement costs
    the same in a partition of any size (bench/backfill.py measures it)."""
    plan = ledger._conn.execute("EXPLAIN QUERY PLAN " + KEY_PAST, ("app", "u1", "user", "home_city")).fetchall()
    assert any("USING INDEX fact_history_past" in row[-1] for row in plan), plan
