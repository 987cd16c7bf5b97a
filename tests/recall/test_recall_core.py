"""Recall on real ledger files: scope, gates, scoring, packing, explanations, the two paths."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factledger.ledger import Ledger, LedgerError
from factledger.ledger.recall.render import CLOSE_TAG, EMPTY, OPEN_TAG
from factledger.ledger.recall.serve import OUTCOMES
from tests.conftest import cand

MEAL = dict(app="mealkit", user="priya")
QUESTION = "where do I live and what do I eat?"


def meal_kit(ledger, clock):
    """The three meal-kit sessions: Pune and vegetarian, then Bengaluru, then pescatarian."""
    clock.set("2026-08-30T09:05:00Z")
    ledger.observe_many([
        cand(**MEAL, predicate="diet", value="vegetarian", quote="I'm vegetarian",
             session="meal-1", event="m1-e1", said_at="2026-08-30T09:00:00Z"),
        cand(**MEAL, predicate="home_city", value="Pune", quote="we're in Pune",
             session="meal-1", event="m1-e1", said_at="2026-08-30T09:00:00Z")])
    clock.set("2026-09-30T18:10:00Z")
    ledger.observe_many([
        cand(**MEAL, predicate="home_city", value="Bengaluru", quote="We moved to Bengaluru",
             session="meal-2", event="m2-e1", said_at="2026-09-30T18:00:00Z"),
        cand(**MEAL, predicate="likes_spicy", value="true", quote="I love spicy food, extra chilli on everything",
             session="meal-2", event="m2-e4", said_at="2026-09-30T18:05:00Z", author="agent",
             basis="inferred")])
    clock.set("2026-10-28T12:05:00Z")
    ledger.observe_many([
        cand(**MEAL, predicate="diet", value="pescatarian",
             quote="I eat fish now, so pescatarian options are fine", session="meal-3",
             event="m3-e1", said_at="2026-10-28T12:00:00Z")])
    clock.set("2026-11-29T10:00:00Z")


@pytest.fixture
def meal(ledger, clock):
    meal_kit(ledger, clock)
    return ledger


def outcomes(result) -> dict:
    return {(c["predicate"], c["value"]): c["outcome"] for c in result.candidates}


def test_meal_kit_question_serves_current_values_only(meal):
    result = meal.recall(**MEAL, query=QUESTION, clearance="personal")
    assert "- home_city = Bengaluru (stated 2026-09-30)" in result.text
    assert "- diet = pescatarian (stated 2026-10-28)" in result.text
    for stale in ("Pune", "vegetarian"):
        assert stale not in result.text
    assert [f["predicate"] for f in result.selected] == ["diet", "home_city"]
    assert all(set(f) >= {"fact_id", "value", "effective_confidence", "said_at", "confirmed_at",
                          "session", "quote", "disputes", "relevance", "score"} for f in result.selected)


def test_superseded_and_retracted_are_never_candidates(meal, clock):
    history = meal.history(**MEAL)
    old = {r["fact_id"] for r in history if r["value"] in ("Pune", "vegetarian")}
    clock.set("2026-11-30T00:00:00Z")
    meal.observe(cand(**MEAL, predicate="diet", value="pescatarian", negated=True,
                      quote="I no longer eat fish", session="meal-4", event="m4-e1",
                      said_at="2026-11-29T12:00:00Z"))
    result = meal.recall(**MEAL, query="diet eat fish pescatarian vegetarian Pune city",
                         clearance="all", preload=True, explain=True, min_confidence=0)
    ids = {c["fact_id"] for c in result.candidates}
    assert not ids & old
    assert "pescatarian" not in result.text and "Pune" not in result.text
    assert {c["predicate"] for c in result.candidates} == {"home_city", "likes_spicy"}


def test_history_path_labels_superseded_values_with_dates(meal):
    rows = [r for r in meal.history(**MEAL, predicate="home_city") if r["value"] == "Pune"]
    closed = [r for r in rows if r["recorded_to"] is None]
    assert closed and closed[0]["status"] == "superseded" and closed[0]["state"] == "superseded"
    assert closed[0]["valid_from"].startswith("2026-08-30") and closed[0]["valid_to"].startswith("2026-09-30")
    believed = meal.facts(**MEAL, predicate="home_city", as_of="2026-09-15")
    assert [(r["value"], r["status"]) for r in believed] == [("Pune", "current")]
    assert [f["value"] for f in meal.facts(**MEAL, predicate="home_city")] == ["Bengaluru"]


def test_default_clearance_is_personal_and_a_lower_one_withholds_the_value(meal):
    assert "Bengaluru" in meal.recall(**MEAL, query=QUESTION).text      # the agent-facing default
    result = meal.recall(**MEAL, query=QUESTION, clearance="normal", explain=True)
    assert "Bengaluru" not in result.text
    assert result.withheld == {"sensitivity": 1}
    assert "Withheld: 1 stored fact (1 above this caller's clearance)" in result.text
    withheld = [c for c in result.candidates if c["outcome"] == "sensitivity"]
    assert [c["predicate"] for c in withheld] == ["home_city"]
    assert withheld[0]["value"] is None and withheld[0]["quote"] is None
    assert withheld[0]["relevance"] is None and withheld[0]["score"] is None


def test_confidence_gate_on_effective_confidence(meal):
    result = meal.recall(**MEAL, query="spicy chilli", explain=True)
    assert outcomes(result)[("likes_spicy", "true")] == "confidence"
    assert "likes_spicy" not in result.text
    low = meal.recall(**MEAL, query="spicy chilli", min_confidence=0.3)
    assert "- likes_spicy = true (inferred 2026-09-30)" in low.text


def test_age_shows_a_stated_fact_unconfirmed_and_never_hides_it(meal, clock):
    clock.set("2027-06-01T00:00:00Z")          # seven months since pescatarian was last said
    result = meal.recall(**MEAL, query="what do I eat", explain=True)
    fact = [c for c in result.candidates if c["predicate"] == "diet"][0]
    assert fact["effective_confidence"] < 0.7 and fact["outcome"] == "selected"
    assert "- diet = pescatarian (stated 2026-10-28, not confirmed since)" in result.text
    clock.set("2029-06-01T00:00:00Z")          # past the diet's confirm age (365 days)
    later = meal.recall(**MEAL, query="what do I eat")
    assert "- diet = pescatarian (stated 2026-10-28, not confirmed since; ask the user to confirm)" in later.text
    # --min-confidence still filters what the caller asks it to (a stated fact by its own confidence)
    strict = meal.recall(**MEAL, query="what do I eat", min_confidence=0.95, explain=True)
    assert strict.selected == [] and strict.withheld == {"confidence": 1}
    assert EMPTY not in strict.text and "1 below the confidence threshold" in strict.text


def test_decay_still_drops_an_old_inferred_fact(meal, clock):
    clock.set("2026-10-01T00:00:00Z")
    assert "likes_spicy" in meal.recall(**MEAL, query="spicy chilli", min_confidence=0.3).text
    clock.set("2029-10-01T00:00:00Z")          # inferred 0.4 decayed to the floor
    gone = meal.recall(**MEAL, query="spicy chilli", min_confidence=0.3, explain=True)
    assert outcomes(gone)[("likes_spicy", "true")] == "confidence"


def test_max_age(meal):
    result = meal.recall(**MEAL, query=QUESTION, clearance="personal", max_age="40d", explain=True)
    assert outcomes(result)[("home_city", "Bengaluru")] == "age"
    assert outcomes(result)[("diet", "pescatarian")] == "selected"


def test_search_excludes_no_match_but_preload_serves(meal):
    result = meal.recall(**MEAL, query="shipping address of the warehouse", explain=True)
    assert result.selected == []
    assert EMPTY in result.text
    assert outcomes(result)[("diet", "pescatarian")] == "no_match"
    preload = meal.recall(**MEAL, query="", preload=True, clearance="personal")
    assert [f["predicate"] for f in preload.selected] == ["diet", "home_city"]


def test_recency_breaks_ties_and_weight_moves_the_order(ledger, clock):
    clock.set("2026-10-01T00:00:00Z")
    ledger.observe_many([
        cand(predicate="favorite_cuisine", value="thai", quote="thai food", session="a",
             said_at="2026-09-01T00:00:00Z"),
        cand(predicate="favorite_cuisine", value="korean", quote="korean food", session="b",
             said_at="2026-09-20T00:00:00Z")])
    result = ledger.recall("app", "u1", "food", recency_weight=0)
    assert [f["value"] for f in result.selected] == ["korean", "thai"]   # equal scores: newer first
    assert result.selected[0]["score"] == result.selected[1]["score"]
    leaning = ledger.recall("app", "u1", "thai food", recency_weight=0.9)
    assert leaning.selected[0]["value"] == "korean"                       # recency wins at 0.9
    relevant = ledger.recall("app", "u1", "thai food", recency_weight=0.1)
    assert relevant.selected[0]["value"] == "thai"


def test_limit_and_budget_pack_greedily(ledger, clock):
    clock.set("2026-10-01T00:00:00Z")
    long_value = "a very long description of a cuisine with many many words in it"
    ledger.observe_many([
        cand(predicate="favorite_cuisine", value=long_value, quote=f"cuisine one: {long_value}", session="a",
             said_at="2026-09-30T00:00:00Z"),
        cand(predicate="favorite_cuisine", value="thai", quote="cuisine two: thai", session="b",
             said_at="2026-09-01T00:00:00Z"),
        cand(predicate="favorite_cuisine", value="korean", quote="cuisine three: korean", session="c",
             said_at="2026-08-01T00:00:00Z")])
    limited = ledger.recall("app", "u1", "cuisine", limit=1, explain=True)
    assert [o for o in (c["outcome"] for c in limited.candidates)] == ["selected", "limit", "limit"]
    budget = ledger.recall("app", "u1", "cuisine", budget=12, explain=True)
    got = {c["value"]: c["outcome"] for c in budget.candidates}
    assert got == {long_value: "budget", "thai": "selected", "korean": "selected"}
    assert sum(len(line.split()) for line in budget.text.splitlines() if line.startswith("- ")) <= 12
    nothing = ledger.recall("app", "u1", "cuisine", limit=0)
    assert nothing.selected == [] and EMPTY not in nothing.text and nothing.withheld == {"limit": 3}
    assert "3 past the limit of 0 facts" in nothing.text


def test_scope_domain_and_other_partitions(ledger, clock):
    clock.set("2026-10-01T00:00:00Z")
    ledger.observe_many([
        cand(app="ops", user="_domain", predicate="deploy.region", value="eu-west-1",
             quote="we deploy to eu-west-1", session="d", said_at="2026-09-01T00:00:00Z"),
        cand(app="ops", user="alice", predicate="preferred_language", value="Python",
             quote="I write Python", session="a", said_at="2026-09-01T00:00:00Z"),
        cand(app="ops", user="bob", predicate="preferred_language", value="Rust",
             quote="I write Rust", session="b", said_at="2026-09-01T00:00:00Z"),
        cand(app="other", user="alice", predicate="preferred_language", value="Haskell",
             quote="I write Haskell", session="c", said_at="2026-09-01T00:00:00Z")])
    result = ledger.recall("ops", "alice", "", preload=True, explain=True)
    assert "shared: deploy.region = eu-west-1" in result.text and "Python" in result.text
    assert "Rust" not in repr(result.as_dict()) and "Haskell" not in repr(result.as_dict())
    assert result.other_partitions is None             # other tenants are not even counted
    alone = ledger.recall("ops", "alice", "", preload=True, domain=False)
    assert "eu-west-1" not in alone.text and "Python" in alone.text


def test_disputed_key_shows_both_values_and_says_they_conflict(ledger, clock):
    clock.set("2026-10-02T00:00:00Z")
    ledger.observe(cand(predicate="preferred_language", value="Python", quote="I write Python",
                        session="s1", event="e1", said_at="2026-09-01T00:00:00Z"))
    ledger.observe(cand(predicate="preferred_language", value="Go", quote="they write Go",
                        session="s2", event="e9", said_at="2026-10-01T00:00:00Z", author="agent",
                        basis="inferred"))
    result = ledger.recall("app", "u1", "language", explain=True)
    lines = [line for line in result.text.splitlines() if line.startswith("- ")]
    assert len(lines) == 1
    line = lines[0]
    assert "conflict" in line
    assert "Python (stated, said by the user in session s1, 2026-09-01)" in line
    assert "Go (inferred, from the agent in session s2, 2026-10-01)" in line
    assert {c["outcome"] for c in result.candidates} == {"selected"}
    assert [c["via"] for c in result.candidates if c["value"] == "Go"] != [None]


def test_another_subject_is_named(ledger, clock):
    clock.set("2026-10-01T00:00:00Z")
    ledger.observe(cand(subject="user.daughter", predicate="allergy", value="peanuts",
                        quote="my daughter is allergic to peanuts", said_at="2026-09-30T00:00:00Z"))
    assert ledger.recall("app", "u1", "allergy").selected == []          # health: not cleared
    result = ledger.recall("app", "u1", "is my daughter allergic", clearance="health")
    assert "- user.daughter allergy = peanuts (stated 2026-09-30)" in result.text


def test_reinforcement_shows_confirmed_date(ledger, clock):
    clock.set("2026-10-01T00:00:00Z")
    ledger.observe(cand(predicate="diet", value="vegan", session="s1", said_at="2026-09-01T00:00:00Z"))
    ledger.observe(cand(predicate="diet", value="vegan", session="s2", said_at="2026-09-20T00:00:00Z"))
    text = ledger.recall("app", "u1", "diet").text
    assert "- diet = vegan (stated 2026-09-01, confirmed 2026-09-20)" in text


@pytest.mark.parametrize("options, message", [
    (dict(clearance="personal,secret"), "unknown clearance 'secret'"),
    (dict(limit=-1), "--limit cannot be negative"),
    (dict(budget=-5), "--budget cannot be negative"),
    (dict(half_life=0), "--half-life must be more than zero"),
    (dict(half_life="0d"), "--half-life must be more than zero"),
    (dict(min_confidence=1.5), "--min-confidence"),
    (dict(recency_weight="heavy"), "--recency-weight"),
    (dict(max_age="forever"), "--max-age"),
])
def test_bad_options_are_ledger_errors(ledger, options, message):
    with pytest.raises(LedgerError, match=message.replace("-", r"\-")):
        ledger.recall("app", "u1", "x", **options)


def test_explain_outcomes_are_known_and_ranked(meal):
    result = meal.recall(**MEAL, query=QUESTION, explain=True)
    assert {c["outcome"] for c in result.candidates} <= set(OUTCOMES)
    assert [c["rank"] for c in result.candidates] == list(range(1, len(result.candidates) + 1))


def test_replay_check_and_partition_rebuild_keep_the_index(meal):
    assert meal.replay_differences() == []
    before = meal._conn.execute("SELECT * FROM recall_index ORDER BY seq").fetchall()
    assert sorted(r[5] for r in before) == ["diet", "home_city", "likes_spicy"]
    with meal.transaction():
        meal.projector.rebuild(meal._conn, app="mealkit", user="priya")
    assert meal._conn.execute("SELECT * FROM recall_index ORDER BY seq").fetchall() == before
    assert meal.replay_differences() == []
    meal.replay()
    assert meal.replay_differences() == []


def test_closed_facts_leave_the_index(ledger, clock):
    clock.set("2026-10-01T00:00:00Z")
    ledger.observe(cand(predicate="home_city", value="Zqxvilleunique", quote="we're in Zqxvilleunique",
                        session="s1", said_at="2026-09-01T00:00:00Z"))
    index = lambda: ledger._conn.execute("SELECT terms FROM recall_index").fetchall()  # noqa: E731
    assert any("zqx" in t for (t,) in index())
    ledger.observe(cand(predicate="home_city", value="Bengaluru", quote="we moved to Bengaluru",
                        session="s2", said_at="2026-09-20T00:00:00Z"))
    assert not any("zqx" in t for (t,) in index()) and len(index()) == 1
    with ledger.transaction():
        ledger.projector.rebuild(ledger._conn, app="app", user="u1")
    assert not any("zqx" in t for (t,) in index()) and len(index()) == 1
    assert ledger._conn.execute("PRAGMA secure_delete").fetchone() == (1,)


def test_recall_on_a_ledger_with_many_facts_is_one_read(ledger, clock):
    clock.set("2026-10-01T00:00:00Z")
    ledger.observe_many(
        cand(predicate="owned_product", value=f"gadget model {i}", quote=f"I own gadget model {i}",
             session=f"s{i}", event=f"e{i}", said_at="2026-09-01T00:00:00Z") for i in range(300))
    statements = []
    ledger._conn.set_trace_callback(statements.append)
    result = ledger.recall("app", "u1", "gadget model 7", limit=5, record=False)  # the read alone
    ledger._conn.set_trace_callback(None)
    assert [f["value"] for f in result.selected][0] == "gadget model 7"
    assert statements[0] == "BEGIN" and statements[-1] == "ROLLBACK"    # one read snapshot
    # the head (is a kept scope still the ledger's?), one read of the scope, one for the shown facts,
    # the check of what is served (ledger/audit/served.py): the head (are the kept folds the
    # log's?), the shown facts' events (two lookups by key: their `fact_events` rows, then those
    # events), the scope's counts, their index rows; and the values above the clearance, to mask in
    # what is served (one indexed read)
    assert len(statements[1:-1]) <= 9
    statements.clear()
    ledger._conn.set_trace_callback(statements.append)
    again = ledger.recall("app", "u1", "gadget model 8", limit=5, record=False)
    ledger._conn.set_trace_callback(None)
    assert [f["value"] for f in again.selected][0] == "gadget model 8"
    # the scope was kept, and the values to mask with it: the head, the shown facts, their check (two lookups)
    assert len(statements[1:-1]) <= 7 and not any("fact_history" in s for s in statements)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=300) | st.sampled_from([
    '"', "'", '"unbalanced', "NEAR(a b)", "a OR", "AND", "*", "^x", "col:val", "-x", "(", ")",
    "'; DROP TABLE events; --", "\x00", "\n\n", "x" * 5000, "\u2028", "{a b}"]))
def test_any_query_is_answered(meal, query):
    result = meal.recall(**MEAL, query=query, explain=True)
    assert result.text.startswith(OPEN_TAG) and result.text.endswith(CLOSE_TAG)
    assert "Pune" not in result.text


def test_a_ledger_opened_twice_serves_the_same(meal, tmp_path):
    path = meal.path
    first = meal.recall(**MEAL, query=QUESTION, clearance="personal").text
    with Ledger(path, clock=meal.clock, create=True) as again:
        assert again.recall(**MEAL, query=QUESTION, clearance="personal").text == first


@given(confidence=st.floats(0, 1), days=st.floats(0, 5000))
def test_recall_decay_agrees_with_the_confidence_module(confidence, days):
    from datetime import timedelta

    from factledger.ledger.domain.confidence import effective_confidence
    from factledger.ledger.recall.facts import effective
    from factledger.ledger.vocabulary.clock import iso, parse_time

    now = parse_time("2027-01-01T00:00:00Z")
    confirmed = iso(now - timedelta(days=days))
    age = (now - parse_time(confirmed)).total_seconds() / 86400.0
    assert effective(confidence, age) == effective_confidence(confidence, confirmed, now)


def test_forgetting_a_session_changes_what_recall_serves(meal):
    meal.forget("mealkit", "priya", session="meal-2", reason="user asked")
    result = meal.recall(**MEAL, query=QUESTION, clearance="personal")
    assert "- home_city = Pune (stated 2026-08-30)" in result.text
    assert "Bengaluru" not in result.text
    terms = " ".join(t for (t,) in meal._conn.execute("SELECT terms FROM recall_index"))
    assert "bengaluru" not in terms and "pun" in terms
    assert meal.replay_differences() == []
