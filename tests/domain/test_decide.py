"""The decision table, row by row, plus properties over generated inputs."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from factledger.ledger.domain.candidate import value_key
from factledger.ledger.domain.confidence import BASIS_RANK
from factledger.ledger.domain.decide import REJECTING_RULES, Negation, OpenFact, decide
from factledger.ledger.registry.predicates import PredicateSpec
from factledger.ledger.vocabulary.words import DECISION_ACTIONS
from tests.conftest import cand

ONE = PredicateSpec("diet", "one", "normal", "preference")
MANY = PredicateSpec("allergy", "many", "health", "fact")
SERIES = PredicateSpec("blood_pressure", "series", "health", "measurement")


def fact(value, basis="stated", status="current", said_at="2026-08-01T00:00:00.000000Z",
         sessions=("s0",), fid=None, effective_date=None, valid_to=None, again=()):
    """`again`: the times it was said again (each by a session of its own), after `said_at`."""
    said = ((said_at, sessions[0], 1),) + tuple((t, f"again{i}", 2 + i) for i, t in enumerate(again))
    return OpenFact(fid or f"f-{value}-{status}", value, basis, status, said_at,
                    frozenset(sessions) | {f"again{i}" for i in range(len(again))}, effective_date, valid_to,
                    max(t for t, _s, _q in said), said)


def past(value, said_at, valid_to, basis="stated", status="superseded", sessions=("s0",)):
    return fact(value, basis, status, f"2026-{said_at}T00:00:00.000000Z", sessions, f"p-{value}-{said_at}",
                valid_to=f"2026-{valid_to}T00:00:00.000000Z")


# Row 1: negation -----------------------------------------------------------------------

def test_negation_retracts_open_fact_of_same_value():
    d = decide(cand(value="vegetarian", negated=True), [fact("vegetarian")], ONE)
    assert (d.action, d.reason, d.target.fact_id) == ("retract", "retracted", "f-vegetarian-current")


def test_negation_with_nothing_to_retract_is_rejected():
    d = decide(cand(value="vegan", negated=True), [fact("vegetarian")], ONE)
    assert (d.action, d.reason) == ("reject", "nothing_to_retract")


def test_negation_from_lower_authority_is_rejected():
    d = decide(cand(value="vegetarian", negated=True, basis="stated"),
               [fact("vegetarian", basis="verified")], ONE)
    assert (d.action, d.reason) == ("reject", "insufficient_authority")


def test_negation_said_before_the_fact_is_rejected():
    d = decide(cand(value="vegetarian", negated=True, said_at="2026-07-01"),
               [fact("vegetarian")], ONE)
    assert (d.action, d.reason) == ("reject", "older_than_current")


def test_negation_matches_values_whatever_their_case():
    d = decide(cand(value="Vegetarian", negated=True), [fact("vegetarian")], ONE)
    assert d.action == "retract"


# Row 2: series ----------------------------------------------------------------------------

def test_series_same_value_same_date_reinforces():
    reading = fact("148/92 mmHg", effective_date="2026-08-30")
    d = decide(cand(predicate="bp", value="148/92 mmHg", said_at="2026-08-30T18:00:00Z"), [reading], SERIES)
    assert (d.action, d.rule) == ("reinforce", "series_duplicate")


def test_series_same_value_new_date_is_a_new_reading():
    reading = fact("148/92 mmHg", effective_date="2026-08-01")
    d = decide(cand(value="148/92 mmHg", said_at="2026-08-30"), [reading], SERIES)
    assert (d.action, d.rule) == ("insert", "series_reading")


def test_series_explicit_effective_date_decides_duplicate():
    reading = fact("148/92 mmHg", effective_date="2026-08-01")
    d = decide(cand(value="148/92 mmHg", said_at="2026-08-30", effective_date="2026-08-01"),
               [reading], SERIES)
    assert d.action == "reinforce"


def test_series_duplicate_in_same_session_is_already_counted():
    reading = fact("148/92 mmHg", effective_date="2026-08-30", sessions=("s1",))
    d = decide(cand(value="148/92 mmHg", said_at="2026-08-30", session="s1"), [reading], SERIES)
    assert (d.action, d.reason) == ("reject", "already_counted")


def test_series_different_value_is_a_new_reading_never_a_supersession():
    reading = fact("148/92 mmHg", effective_date="2026-08-30")
    d = decide(cand(value="130/85 mmHg", said_at="2026-08-30"), [reading], SERIES)
    assert d.action == "insert" and not d.closes


# Row 3: same value ---------------------------------------------------------------------------

def test_same_value_from_new_session_reinforces():
    d = decide(cand(value="vegetarian", session="s2"), [fact("vegetarian")], ONE)
    assert (d.action, d.rule, d.target.fact_id) == ("reinforce", "same_value", "f-vegetarian-current")


def test_same_value_from_same_session_is_already_counted():
    d = decide(cand(value="vegetarian", session="s0"), [fact("vegetarian")], ONE)
    assert (d.action, d.reason) == ("reject", "already_counted")


def test_same_value_as_disputed_fact_with_enough_authority_settles_dispute():
    incumbent = fact("25 mg", basis="verified", sessions=("d",))
    challenger = fact("50 mg", basis="stated", status="disputed", sessions=("c",))
    d = decide(cand(value="50 mg", basis="verified", author="document", session="o2"),
               [incumbent, challenger], ONE)
    assert d.action == "reinforce" and d.settles
    assert d.target is challenger and [f.fact_id for f in d.closes] == [incumbent.fact_id]


def test_same_value_as_disputed_fact_without_authority_only_reinforces():
    incumbent = fact("25 mg", basis="verified", sessions=("d",))
    challenger = fact("50 mg", basis="stated", status="disputed", sessions=("c",))
    d = decide(cand(value="50 mg", basis="stated", session="c2"), [incumbent, challenger], ONE)
    assert d.action == "reinforce" and not d.settles and d.target is challenger


# Row 4: insert -------------------------------------------------------------------------------

def test_no_open_fact_inserts():
    d = decide(cand(value="vegetarian"), [], ONE)
    assert (d.action, d.rule) == ("insert", "new_key")


def test_many_accumulates_values():
    d = decide(cand(predicate="allergy", value="peanuts"), [fact("shellfish")], MANY)
    assert (d.action, d.rule) == ("insert", "many_accumulates") and not d.closes


def test_many_same_value_reinforces():
    d = decide(cand(value="peanuts", session="s9"), [fact("peanuts")], MANY)
    assert d.action == "reinforce"


# Row 5: one with a different current value ------------------------------------------------

def test_lower_authority_disputes_never_overwrites():
    d = decide(cand(value="50 mg", basis="stated"), [fact("25 mg", basis="verified")], ONE)
    assert (d.action, d.reason) == ("dispute", "lower_authority_than_current")
    assert d.target.value == "25 mg" and not d.closes


def test_inferred_disputes_stated():
    d = decide(cand(value="vegan", basis="inferred", author="agent"), [fact("vegetarian")], ONE)
    assert d.action == "dispute"


def test_late_arrival_is_backfilled_never_rolled_back():
    current = fact("Bengaluru", said_at="2026-09-30T00:00:00Z")
    d = decide(cand(value="Pune", said_at="2026-07-01"), [current], ONE)
    assert (d.action, d.rule, d.reason) == ("backfill", "backfill", "backfilled")
    assert d.until is current and d.cuts is None and d.closes == ()


# Row 5b: late arrivals, placed in the key's valid-time line ----------------------------------

LINE = [past("Pune", "07-01", "08-01"), past("Goa", "08-01", "09-01")]
NOW = fact("Lyon", said_at="2026-09-01T00:00:00.000000Z")


def test_late_value_ends_at_the_next_known_value_and_cuts_the_one_it_interrupts():
    d = decide(cand(value="Oslo", said_at="2026-07-15"), [NOW], ONE, past=LINE)
    assert (d.action, d.rule) == ("backfill", "backfill")
    assert d.until is LINE[1] and d.cuts is LINE[0]


def test_late_value_before_every_known_one_cuts_nothing():
    d = decide(cand(value="Oslo", said_at="2026-06-15"), [NOW], ONE, past=LINE)
    assert (d.action, d.until, d.cuts) == ("backfill", LINE[0], None)


def test_late_value_in_a_gap_after_a_retraction_cuts_nothing():
    line = [past("Pune", "07-01", "07-10", status="retracted"), LINE[1]]
    d = decide(cand(value="Oslo", said_at="2026-07-15"), [NOW], ONE, past=line)
    assert (d.action, d.until, d.cuts) == ("backfill", LINE[1], None)


def test_late_value_under_a_stronger_past_value_cuts_nothing():
    line = [past("Pune", "07-01", "08-01", basis="verified"), LINE[1]]
    d = decide(cand(value="Oslo", said_at="2026-07-15"), [fact("Lyon", said_at="2026-09-01T00:00:00Z")],
               ONE, past=line)
    assert (d.action, d.until, d.cuts) == ("backfill", LINE[1], None)


def test_late_repeat_of_the_value_that_held_reinforces_it():
    d = decide(cand(value="pune", said_at="2026-07-15"), [NOW], ONE, past=LINE)
    assert (d.action, d.rule, d.target) == ("reinforce", "late_same_value", LINE[0])


def test_late_repeat_from_a_session_already_counted_is_rejected():
    d = decide(cand(value="Pune", said_at="2026-07-15", session="s0"), [NOW], ONE, past=LINE)
    assert (d.action, d.reason) == ("reject", "already_counted")


def test_late_statement_of_the_next_value_moves_its_start():
    d = decide(cand(value="Goa", said_at="2026-07-15"), [NOW], ONE, past=LINE)
    assert (d.action, d.rule, d.target, d.cuts) == ("backfill", "earlier_same_value", LINE[1], LINE[0])


def test_earlier_statement_of_the_current_value_moves_its_start():
    d = decide(cand(value="Lyon", said_at="2026-08-15"), [NOW], ONE, past=LINE)
    assert (d.action, d.rule, d.target, d.cuts) == ("backfill", "earlier_same_value", NOW, LINE[1])


def test_earlier_statement_of_a_many_value_moves_its_start():
    d = decide(cand(value="a", said_at="2026-07-01"), [fact("a")], MANY)
    assert (d.action, d.rule) == ("backfill", "earlier_same_value")


def test_late_weaker_value_still_disputes_the_current_fact():
    d = decide(cand(value="Oslo", said_at="2026-07-15", basis="inferred", author="agent"), [NOW], ONE, past=LINE)
    assert (d.action, d.rule) == ("dispute", "lower_authority")


def test_late_negation_retracts_the_past_value_that_held():
    d = decide(cand(value="Goa", negated=True, said_at="2026-08-15"), [NOW], ONE, past=LINE)
    assert (d.action, d.rule, d.target) == ("retract", "late_negation", LINE[1])


def test_late_negation_of_a_stronger_past_value_is_rejected():
    line = [past("Goa", "08-01", "09-01", basis="verified")]
    d = decide(cand(value="Goa", negated=True, said_at="2026-08-15"), [NOW], ONE, past=line)
    assert (d.action, d.reason) == ("reject", "insufficient_authority")


def test_late_negation_of_a_value_that_did_not_hold_then_is_rejected():
    d = decide(cand(value="Pune", negated=True, said_at="2026-08-15"), [NOW], ONE, past=LINE)
    assert (d.action, d.reason) == ("reject", "nothing_to_retract")


def test_the_past_is_read_only_for_a_late_statement():
    class Untouchable:
        def __iter__(self):
            raise AssertionError("read")
    for c in (cand(value="Oslo", said_at="2026-09-15"), cand(value="Lyon", said_at="2026-09-15"),
              cand(value="Lyon", negated=True, said_at="2026-09-15")):
        decide(c, [NOW], ONE, past=Untouchable())


# Row 5c: a value said between two statements of one fact splits it ------------------------------

def test_a_value_said_between_two_statements_of_the_current_fact_splits_it():
    lyon = fact("Lyon", said_at="2026-09-01T00:00:00.000000Z", again=("2026-09-20T00:00:00.000000Z",
                                                                        "2026-09-10T00:00:00.000000Z"))
    d = decide(cand(value="Goa", said_at="2026-09-05"), [lyon], ONE)
    assert (d.action, d.rule, d.reason) == ("backfill", "backfill", "split")
    assert d.splits is lyon and d.until is lyon and d.closes == () and d.cuts is None
    assert d.resumes == ("2026-09-10T00:00:00.000000Z", "again1", 3) and d.valid_to == d.resumes[0]


def test_a_value_said_after_every_statement_of_the_current_fact_supersedes_it():
    lyon = fact("Lyon", said_at="2026-09-01T00:00:00.000000Z", again=("2026-09-10T00:00:00.000000Z",))
    for said_at in ("2026-09-10T00:00:00.000000Z", "2026-09-11"):     # at the instant: by arrival
        assert decide(cand(value="Goa", said_at=said_at), [lyon], ONE).action == "supersede"


def test_a_fact_whose_statement_times_are_unknown_is_not_split():
    """A fact written before facts noted each statement's time (`said` None) is superseded."""
    lyon = fact("Lyon", said_at="2026-09-01T00:00:00.000000Z", again=("2026-09-10T00:00:00.000000Z",))
    old = OpenFact(lyon.fact_id, "Lyon", "stated", "current", lyon.said_at, lyon.sessions,
                   confirmed_at=lyon.confirmed_at)
    assert decide(cand(value="Goa", said_at="2026-09-05"), [old], ONE).action == "supersede"


def test_a_weaker_value_said_between_two_statements_disputes_as_before():
    lyon = fact("Lyon", said_at="2026-09-01T00:00:00.000000Z", again=("2026-09-10T00:00:00.000000Z",))
    d = decide(cand(value="Goa", said_at="2026-09-05", basis="inferred", author="agent"), [lyon], ONE)
    assert d.action == "dispute"


def test_a_late_value_said_between_two_statements_of_a_past_fact_splits_it():
    line = [past("Pune", "07-01", "08-01"),
            fact("Goa", said_at="2026-08-01T00:00:00.000000Z", status="superseded", fid="p-goa",
                 valid_to="2026-09-01T00:00:00.000000Z", again=("2026-08-20T00:00:00.000000Z",))]
    d = decide(cand(value="Oslo", said_at="2026-08-10"), [NOW], ONE, past=line)
    assert (d.action, d.reason, d.splits, d.valid_to) == ("backfill", "split", line[1], "2026-08-20T00:00:00.000000Z")
    stronger = [line[0], replace(line[1], basis="verified")]
    d = decide(cand(value="Oslo", said_at="2026-08-10"), [NOW], ONE, past=stronger)
    assert d.splits is None and d.until is NOW        # in order it would only have disputed it


def test_a_negation_said_between_two_statements_of_the_current_fact_splits_it():
    """In said order A day 1 is retracted on day 5 and A day 10 is a new fact: the part before is
    retracted, the fact holds again from day 10."""
    lyon = fact("Lyon", said_at="2026-09-01T00:00:00.000000Z", again=("2026-09-10T00:00:00.000000Z",))
    d = decide(cand(value="Lyon", negated=True, said_at="2026-09-05"), [lyon], ONE)
    assert (d.action, d.rule, d.reason, d.splits, d.resumes[0]) == (
        "retract", "late_negation", "split", lyon, "2026-09-10T00:00:00.000000Z")
    assert decide(cand(value="Lyon", negated=True, said_at="2026-09-11"), [lyon], ONE).reason == "retracted"


def test_a_late_negation_said_between_two_statements_of_a_past_fact_splits_it():
    line = [fact("Goa", said_at="2026-08-01T00:00:00.000000Z", status="superseded", fid="p-goa",
                 valid_to="2026-09-01T00:00:00.000000Z", again=("2026-08-20T00:00:00.000000Z",))]
    d = decide(cand(value="Goa", negated=True, said_at="2026-08-10"), [NOW], ONE, past=line)
    assert (d.action, d.reason, d.splits) == ("retract", "split", line[0])


def test_newer_equal_authority_supersedes():
    d = decide(cand(value="Bengaluru", said_at="2026-09-30"), [fact("Pune")], ONE)
    assert (d.action, d.rule) == ("supersede", "newer_value") and d.target.value == "Pune"


def test_higher_authority_supersedes_even_when_not_newer_than_a_dispute():
    d = decide(cand(value="75 mg", basis="verified", author="document", said_at="2026-08-05"),
               [fact("25 mg", basis="stated")], ONE)
    assert d.action == "supersede"


def test_supersession_closes_every_open_dispute_on_the_key():
    incumbent = fact("25 mg", basis="stated")
    challenger = fact("50 mg", basis="inferred", status="disputed")
    d = decide(cand(value="75 mg", said_at="2026-09-01"), [incumbent, challenger], ONE)
    assert d.action == "supersede"
    assert {f.fact_id for f in d.closes} == {incumbent.fact_id, challenger.fact_id}


def test_simultaneous_statement_supersedes():
    d = decide(cand(value="vegan", said_at="2026-08-01"), [fact("vegetarian")], ONE)
    assert d.action == "supersede"


# Properties ------------------------------------------------------------------------------------

BASES = ["inferred", "stated", "verified"]
AUTHORS = {"inferred": "agent", "stated": "user", "verified": "document"}
VALUES = ["a", "b", "c"]


@st.composite
def key_line(draw, before: int):
    """Closed facts of a key that held it one after the other, all said before day `before`."""
    days = sorted(draw(st.lists(st.integers(1, max(1, before - 1)), max_size=3, unique=True)))
    out = []
    for i, start in enumerate(days):
        end = days[i + 1] if i + 1 < len(days) else before
        if draw(st.booleans()):
            end = draw(st.integers(start, end))                     # retracted early
        again = draw(st.lists(st.integers(start, max(start, end - 1)), max_size=2)) if end > start else []
        out.append(fact(draw(st.sampled_from(VALUES)), basis=draw(st.sampled_from(BASES)),
                        status="retracted" if end < (days[i + 1] if i + 1 < len(days) else before)
                        else "superseded", said_at=f"2026-08-{start:02d}T00:00:00.000000Z",
                        sessions=(draw(st.sampled_from(["s0", "s1"])),), fid=f"p{i}",
                        valid_to=f"2026-08-{end:02d}T00:00:00.000000Z",
                        again=tuple(f"2026-08-{d:02d}T00:00:00.000000Z" for d in again)))
    return out


@st.composite
def candidate_and_key(draw):
    spec = draw(st.sampled_from([ONE, MANY, SERIES]))
    basis = draw(st.sampled_from(BASES))
    current_basis = draw(st.sampled_from(BASES))
    facts, history = [], []
    start = 29
    if draw(st.booleans()):
        start = draw(st.integers(1, 28))
        again = draw(st.lists(st.integers(start, 28), max_size=2))
        facts.append(fact(draw(st.sampled_from(VALUES)), current_basis, "current",
                          f"2026-08-{start:02d}T00:00:00.000000Z", ("s0",), f"f-{start}",
                          f"2026-08-{draw(st.integers(1, 3)):02d}",
                          again=tuple(f"2026-08-{d:02d}T00:00:00.000000Z" for d in again)))
        if spec is ONE and draw(st.booleans()):
            facts.append(fact(draw(st.sampled_from(VALUES)), basis=draw(st.sampled_from(BASES)),
                              status="disputed", fid="challenger",
                              said_at=f"2026-08-{draw(st.integers(1, 28)):02d}T00:00:00.000000Z"))
    if spec is not SERIES:
        # a `one` key's past (with or without a current fact); a `many` key's retracted values
        history = draw(key_line(start))
        if spec is MANY:
            history = [replace(f, status="retracted") for f in history]
    negations = draw(st.lists(st.tuples(st.sampled_from(VALUES), st.integers(1, 28), st.sampled_from(BASES)),
                              max_size=3))
    c = cand(value=draw(st.sampled_from(VALUES)), basis=basis, author=AUTHORS[basis],
             negated=draw(st.booleans()), session=draw(st.sampled_from(["s0", "s1"])),
             said_at=f"2026-08-{draw(st.integers(1, 28)):02d}",
             effective_date=draw(st.sampled_from([None, "2026-08-01", "2026-08-02"])))
    heard = [(v, Negation(f"2026-08-{d:02d}T00:00:00.000000Z", b, 100 + i)) for i, (v, d, b) in enumerate(negations)]
    return c, facts, spec, history, heard


@settings(max_examples=1500, deadline=None)
@given(candidate_and_key())
def test_decide_is_total_and_consistent(case):
    c, facts, spec, history, heard = case

    def negations(wanted):
        return [n for v, n in heard if value_key(v) == wanted]

    d = decide(c, facts, spec, past=history, negations=negations)
    current = next((f for f in facts if f.status == "current"), None)
    assert d.action in DECISION_ACTIONS          # the vocabulary's one list of what a decision can be
    if d.action in ("reinforce", "retract", "supersede", "dispute") or (d.action == "backfill" and d.rule != "backfill"):
        assert d.target in facts or d.target in history
    if d.target in history:                # the past is reached only by a statement said before the present
        assert current is None or c.said_at < current.said_at or spec.cardinality == "many"
        assert d.action in ("reinforce", "retract", "reject", "backfill")
        assert value_key(d.target.value) == value_key(c.value) or d.action == "backfill"
    if d.action == "supersede":            # a replacement is said after every statement of the value
        assert c.said_at >= d.target.said_at
        assert d.target.said is None or all(s[0] <= c.said_at for s in d.target.said)
    if d.splits is not None:
        # said between two statements of one fact (current, or past and held then): it holds
        # until the fact's first statement after it, from which the fact holds again
        # (a value: it holds until then; a negation of the fact's value: the part before is retracted)
        assert d.reason == "split" and d.splits is d.target
        assert spec.cardinality == "one" or (spec.cardinality == "many" and c.negated)
        assert d.cuts is None and d.resumes in d.splits.said and not d.closes and d.promotes is None
        assert d.splits.said_at <= c.said_at < d.resumes[0]
        assert not any(c.said_at < s[0] < d.resumes[0] for s in d.splits.said)
        assert BASIS_RANK[c.basis] >= BASIS_RANK[d.splits.basis]
        if c.negated:
            assert (d.action, d.rule, d.until) == ("retract", "late_negation", None)
            assert value_key(c.value) == value_key(d.splits.value)
        else:
            assert (d.action, d.until, d.valid_to) == ("backfill", d.splits, d.resumes[0])
            assert value_key(c.value) != value_key(d.splits.value)
    if d.action == "backfill":
        # history, never the present: nothing open closes, no authority is lowered in the present
        assert not d.closes and d.promotes is None
        assert current is None or c.said_at < current.said_at or d.splits is current
        assert (d.until is None) == (d.rule == "earlier_same_value" or (d.negated_at is not None and d.splits is None))
        if d.until is not None:
            assert d.valid_to > c.said_at and not any(c.said_at < f.said_at < d.valid_to for f in history)
            assert d.until in facts or d.until in history
        if d.cuts is not None:
            assert d.cuts in history and d.cuts.said_at <= c.said_at < d.cuts.valid_to
            assert BASIS_RANK[c.basis] >= BASIS_RANK[d.cuts.basis]
        if (spec.cardinality == "one" and d.rule == "backfill" and current is not None
                and value_key(c.value) != value_key(current.value)):
            assert BASIS_RANK[c.basis] >= BASIS_RANK[current.basis]     # a weaker one disputes instead
    if d.negated_at is not None:
        # a fact this statement opens was retracted, in said order, by the first negation of its
        # value said after it (and before the next fact of its line), of at least its authority
        n = d.negated_at
        assert not c.negated and d.action in ("insert", "supersede", "backfill") and d.reason in ("negated_later", "split")
        assert c.said_at < n.said_at and BASIS_RANK[n.basis] >= BASIS_RANK[c.basis]
        assert n in negations(value_key(c.value))
        assert not any(c.said_at < m.said_at < n.said_at and BASIS_RANK[m.basis] >= BASIS_RANK[c.basis]
                       for m in negations(value_key(c.value)))
        if d.valid_to is not None:
            assert n.said_at < d.valid_to
    elif d.action in ("insert", "supersede") and not c.negated and spec.cardinality != "series":
        # a fact that holds from now on: no negation of its value said since, with the authority
        assert not any(c.said_at < m.said_at and BASIS_RANK[m.basis] >= BASIS_RANK[c.basis]
                       for m in negations(value_key(c.value)))
    if d.action == "retract" and d.target in history:
        assert d.target.said_at <= c.said_at < d.target.valid_to
    if d.action == "supersede":
        # no decision lowers authority: a replacement is at least as authoritative
        assert BASIS_RANK[c.basis] >= BASIS_RANK[d.target.basis]
        assert spec.cardinality == "one"
    if d.action == "retract":
        assert c.negated and BASIS_RANK[d.target.basis] <= BASIS_RANK[c.basis]
    if c.negated:
        assert d.action in ("retract", "reject")
    if d.action == "reject":              # re-decision replays exactly these (ledger/forget/redecide.py)
        assert d.rule in REJECTING_RULES
    if spec.cardinality != "one":
        assert d.action not in ("supersede", "dispute")
        assert d.action != "backfill" or d.rule == "earlier_same_value" or d.negated_at is not None
    assert decide(c, facts, spec, past=history, negations=negations) == d   # pure: same inputs, same decision


@pytest.mark.parametrize("spec", [ONE, MANY, SERIES])
def test_decide_never_touches_its_inputs(spec):
    facts = [fact("a")]
    before = list(facts)
    decide(cand(value="b"), facts, spec)
    assert facts == before


def test_retracting_the_incumbent_hands_the_key_to_the_strongest_challenger():
    incumbent = fact("Pune", basis="verified")
    weak = fact("Goa", basis="inferred", status="disputed")
    strong = fact("Mumbai", basis="stated", status="disputed")
    d = decide(cand(value="Pune", negated=True, basis="verified", author="document"),
               [incumbent, weak, strong], ONE)
    assert d.action == "retract" and d.target is incumbent
    assert d.promotes is strong and d.redisputes == (weak,)


def test_retracting_a_challenger_promotes_nobody():
    incumbent = fact("Pune", basis="verified")
    challenger = fact("Goa", basis="stated", status="disputed")
    d = decide(cand(value="Goa", negated=True), [incumbent, challenger], ONE)
    assert d.target is challenger and d.promotes is None
