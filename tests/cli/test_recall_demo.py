"""Issue 28's "done when" on the demo ledger: long-term memory that does not forget on its own."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger.recall.render import EMPTY

LATER = "2028-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("demo") / "d.db")
    assert CliRunner().invoke(cli, ["demo", "--out", out]).exit_code == 0
    return out


def run(db: str, *args: str, now: str | None = None):
    result = CliRunner(env={"FACTLEDGER_NOW": now} if now else {}).invoke(cli, ["--db", db, *args])
    assert result.exit_code == 0, result.output
    return result


def test_the_deployment_question_serves_the_region_with_its_date(demo):
    block = run(demo, "recall", "which region do we deploy to?", "--app", "deploybot",
                "--user", "team-atlas").stdout
    assert "- deploy.region = us-east (stated 2026-07-01" in block and EMPTY not in block


def test_years_later_the_city_and_diet_are_served_marked_unconfirmed(demo):
    block = run(demo, "recall", "where do I live and what do I eat?", "--app", "mealkit",
                "--user", "priya", now=LATER).stdout
    assert "- home_city = Pune (stated 2026-08-30, not confirmed since" in block
    assert "- diet = pescatarian (stated 2026-10-28, not confirmed since" in block


def test_a_health_fact_past_its_confirm_age_asks_to_be_confirmed(demo):
    block = run(demo, "recall", "what medication do I take", "--app", "clinic", "--user", "arun",
                "--clearance", "health", now="2026-12-01T00:00:00Z").stdout
    assert 'medication_dose = "metoprolol tartrate 50 mg" (verified 2026-07-10' in block
    assert "ask the user to confirm" in block          # 90 days for medication_dose


def test_a_recall_that_withheld_facts_names_count_and_reason(demo):
    result = run(demo, "recall", "what medication do I take", "--app", "clinic", "--user", "arun")
    assert EMPTY not in result.stdout and "holds nothing" not in result.stdout
    assert "Withheld: 3 stored facts (3 above this caller's clearance)" in result.stdout
    assert "metoprolol" not in result.stdout


def test_facts_at_health_clearance_show_personal_facts_too(demo):
    shown = run(demo, "facts", "--app", "mealkit", "--user", "priya", "--clearance", "health", "--json").stdout
    assert '"home_city"' in shown and '"personal"' in shown
