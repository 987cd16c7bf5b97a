"""Long-term memory over two years: what recall serves at dates along the way, at each clearance.

Multi-session stories (moves, diets, an allergy stated once and never again, an agent's inferred
guesses, health facts withheld from a lower clearance), recorded at their dates and then recalled
at later dates through the CLI with FACTLEDGER_NOW, as a deployment would on those days.  The
rules they hold to (docs/recall.md, "Age" and "Withheld"): a stated fact is served however old,
dated and marked "not confirmed since" once decay takes it below the serving threshold, and
"ask the user to confirm" past its predicate's confirm age; an inferred guess stops being served
when it decays; a recall that withheld facts says how many and why and never "holds nothing".
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger
from factledger.ledger.recall.render import EMPTY
from tests.conftest import MovableClock, cand

FAMILY = dict(app="mealkit", user="noor")
P = ["--app", "mealkit", "--user", "noor"]

# (recorded at, candidates): two years of one household.
STORY = [
    ("2025-01-10T09:00:00Z", [
        cand(**FAMILY, predicate="home_city", value="Leeds", quote="we live in Leeds", session="n1",
             event="n1-e1", said_at="2025-01-10T08:55:00Z"),
        cand(**FAMILY, predicate="diet", value="vegetarian", quote="I'm vegetarian", session="n1",
             event="n1-e2", said_at="2025-01-10T08:56:00Z"),
        cand(**FAMILY, subject="user.daughter", predicate="allergy", value="peanuts",
             quote="my daughter is allergic to peanuts", session="n1", event="n1-e3",
             said_at="2025-01-10T08:57:00Z")]),
    ("2025-03-02T12:00:00Z", [
        cand(**FAMILY, predicate="likes_spicy", value="true", quote="I love spicy food, more chilli please",
             session="n2", event="n2-e1", said_at="2025-03-02T11:58:00Z", author="agent",
             basis="inferred")]),
    ("2025-09-20T18:00:00Z", [
        cand(**FAMILY, predicate="home_city", value="Bristol", quote="we moved to Bristol",
             session="n3", event="n3-e1", said_at="2025-09-20T17:55:00Z"),
        cand(**FAMILY, predicate="condition", value="asthma", quote="I have asthma",
             session="n3", event="n3-e2", said_at="2025-09-20T17:56:00Z")]),
    ("2026-02-14T10:00:00Z", [
        cand(**FAMILY, predicate="diet", value="vegan", quote="I'm vegan now", session="n4",
             event="n4-e1", said_at="2026-02-14T09:58:00Z")]),
    ("2026-06-01T10:00:00Z", [
        cand(**FAMILY, predicate="home_city", value="Bristol", quote="still in Bristol",
             session="n5", event="n5-e1", said_at="2026-06-01T09:58:00Z")]),
]


@pytest.fixture
def story_db(tmp_path) -> str:
    path = tmp_path / "story.db"
    clock = MovableClock(STORY[0][0])
    with Ledger(path, clock=clock, create=True) as ledger:
        for when, candidates in STORY:
            clock.set(when)
            ledger.observe_many(candidates)
    return str(path)


def recall(db: str, now: str, *args: str) -> tuple[str, str]:
    """What the ledger served on the day `now`: the facts open then (--as-of), scored then."""
    result = CliRunner(env={"FACTLEDGER_NOW": now}).invoke(cli, ["--db", db, "recall", *args, *P,
                                                                 "--as-of", now])
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def lines(block: str) -> dict[str, str]:
    """key -> the fact's line in the block."""
    out = {}
    for line in block.splitlines():
        if line.startswith("- "):
            out[line[2:].split(" = ")[0]] = line
    return out


def test_a_month_after_the_first_session(story_db):
    block, _ = recall(story_db, "2025-02-10T00:00:00Z", "", "--preload", "--clearance", "health")
    got = lines(block)
    assert got["home_city"] == "- home_city = Leeds (stated 2025-01-10)"
    assert got["diet"] == "- diet = vegetarian (stated 2025-01-10)"
    assert got["user.daughter allergy"] == "- user.daughter allergy = peanuts (stated 2025-01-10)"


def test_the_inferred_guess_is_served_while_fresh_then_decays_away(story_db):
    fresh, _ = recall(story_db, "2025-03-03T00:00:00Z", "spicy chilli food", "--min-confidence", "0.3")
    assert "likes_spicy = true (inferred 2025-03-02)" in fresh
    default, _ = recall(story_db, "2025-03-03T00:00:00Z", "spicy chilli food")
    assert "likes_spicy" not in lines(default)                  # 0.4 < 0.7: never by default
    assert "1 below the confidence threshold" in default and EMPTY not in default
    later, _ = recall(story_db, "2027-01-01T00:00:00Z", "spicy chilli food", "--min-confidence", "0.3")
    assert "likes_spicy" not in lines(later) and "below the confidence threshold" in later


def test_after_the_move_the_new_city_with_its_confirmation(story_db):
    block, _ = recall(story_db, "2026-07-01T00:00:00Z", "where do we live", "--clearance", "personal")
    assert lines(block)["home_city"] == "- home_city = Bristol (stated 2025-09-20, confirmed 2026-06-01)"
    assert "Leeds" not in block


def test_the_allergy_stated_once_is_still_served_two_years_on_and_asks_to_be_confirmed(story_db):
    block, stderr = recall(story_db, "2027-01-10T00:00:00Z", "allergies", "--clearance", "health")
    line = lines(block)["user.daughter allergy"]
    assert line == ("- user.daughter allergy = peanuts (stated 2025-01-10, not confirmed since; "
                    "ask the user to confirm)")
    # three months after it was said it is past the allergy's confirm age (90 days), still served
    early, _ = recall(story_db, "2025-05-01T00:00:00Z", "allergies", "--clearance", "health")
    assert lines(early)["user.daughter allergy"].endswith("(stated 2025-01-10; ask the user to confirm)")


def test_diet_changes_and_every_stated_fact_stays_two_years_on(story_db):
    block, _ = recall(story_db, "2027-06-01T00:00:00Z", "", "--preload", "--clearance", "personal")
    got = lines(block)
    assert got["diet"] == "- diet = vegan (stated 2026-02-14, not confirmed since; ask the user to confirm)"
    assert got["home_city"] == "- home_city = Bristol (stated 2025-09-20, confirmed 2026-06-01, not confirmed since)"
    assert "vegetarian" not in block


@pytest.mark.parametrize("now", ["2025-10-01T00:00:00Z", "2026-12-01T00:00:00Z", "2027-12-31T00:00:00Z"])
def test_each_clearance_at_dates_along_the_way(story_db, now):
    """normal < personal < health: each level sees its own and below; what it may not see is
    counted with its reason, never shown, and never called silence."""
    seen = {}
    for level in ("normal", "personal", "health"):
        block, _ = recall(story_db, now, "", "--preload", "--clearance", level, "--limit", "20")
        seen[level] = set(lines(block))
        report = json.loads(CliRunner(env={"FACTLEDGER_NOW": now}).invoke(
            cli, ["--db", story_db, "recall", "", *P, "--preload", "--explain", "--json",
                  "--clearance", level, "--limit", "20", "--as-of", now]).stdout)
        withheld = report["withheld"].get("sensitivity", 0)
        assert withheld == {"normal": 3, "personal": 2, "health": 0}[level]
        if withheld:
            assert f"{withheld} above this caller's clearance" in block
        assert EMPTY not in block
    assert seen["normal"] == {"diet"}
    assert seen["personal"] == {"diet", "home_city"}
    assert seen["health"] == {"diet", "home_city", "user.daughter allergy", "condition"}
    for level in ("normal", "personal"):
        block, _ = recall(story_db, now, "", "--preload", "--clearance", level)
        assert "peanuts" not in block and "asthma" not in block


def test_a_query_nothing_in_scope_matches_is_silence(story_db):
    block, _ = recall(story_db, "2026-01-01T00:00:00Z", "shipping warehouse invoice", "--clearance", "health")
    assert EMPTY in block and "Withheld" not in block
    below, _ = recall(story_db, "2026-01-01T00:00:00Z", "shipping warehouse invoice", "--clearance", "normal")
    assert EMPTY not in below and "above this caller's clearance" in below
