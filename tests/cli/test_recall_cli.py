"""`factledger recall` through click's CliRunner and as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli

MEAL = ["--app", "mealkit", "--user", "priya"]
NOW = {"FACTLEDGER_NOW": "2026-11-29T10:00:00Z"}
QUESTION = "where do I live and what do I eat?"
STEPS = [
    ["--predicate", "diet", "--value", "vegetarian", "--quote", "I'm vegetarian", "--session",
     "meal-1", "--event-id", "m1-e1", "--said-at", "2026-08-30T09:00:00Z"],
    ["--predicate", "city", "--value", "Pune", "--quote", "we're in Pune", "--session", "meal-1",
     "--event-id", "m1-e1", "--said-at", "2026-08-30T09:00:00Z"],
    ["--predicate", "home_city", "--value", "Bengaluru", "--quote", "We moved to Bengaluru",
     "--session", "meal-2", "--event-id", "m2-e1", "--said-at", "2026-09-30T18:00:00Z"],
    ["--predicate", "likes_spicy", "--value", "true", "--quote", "I love spicy food, extra chilli on everything",
     "--session", "meal-2", "--event-id", "m2-e4", "--said-at", "2026-09-30T18:05:00Z",
     "--author", "agent", "--basis", "inferred"],
    ["--predicate", "diet", "--value", "pescatarian", "--quote",
     "I eat fish now, so pescatarian options are fine", "--session", "meal-3", "--event-id",
     "m3-e1", "--said-at", "2026-10-28T12:00:00Z"],
]


def invoke(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], env=NOW)


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "cli.db"
    assert invoke(path, "init").exit_code == 0
    for step in STEPS:
        result = invoke(path, "observe", *MEAL, *step, "--json")
        assert result.exit_code == 0, result.output
    return path


def test_plain_output_is_the_rendered_block(db):
    result = invoke(db, "recall", QUESTION, *MEAL, "--clearance", "personal")
    assert result.exit_code == 0
    assert result.stdout.startswith("<stored_facts>\n")
    assert "- home_city = Bengaluru (stated 2026-09-30)" in result.stdout
    assert "- diet = pescatarian (stated 2026-10-28)" in result.stdout
    assert "Pune" not in result.stdout and "vegetarian" not in result.stdout


def test_explain_table_lists_every_in_scope_fact(db):
    result = invoke(db, "recall", QUESTION, *MEAL, "--explain", "--clearance", "normal")
    assert result.exit_code == 0
    out = result.stdout
    for outcome in ("selected", "sensitivity", "no_match"):
        assert outcome in out
    assert "other partitions" not in out               # other tenants are not even counted
    assert "Bengaluru" not in out                      # personal, not cleared: value withheld


def test_json_gives_the_selected_facts(db):
    result = invoke(db, "recall", QUESTION, *MEAL, "--clearance", "personal", "--json")
    facts = json.loads(result.stdout)
    assert [f["predicate"] for f in facts] == ["diet", "home_city"]
    for name in ("fact_id", "app", "user", "subject", "predicate", "value", "status", "basis",
                 "confidence", "effective_confidence", "sensitivity", "said_at", "recorded_at",
                 "confirmed_at", "confirmed_by", "session", "evidence_event", "quote", "author",
                 "disputes"):
        assert name in facts[0]


def test_json_explain_gives_every_candidate_with_scores(db):
    result = invoke(db, "recall", "spicy", *MEAL, "--explain", "--json", "--min-confidence", "0.2",
                    "--clearance", "normal")
    report = json.loads(result.stdout)
    assert {c["predicate"]: c["outcome"] for c in report["candidates"]} == {
        "likes_spicy": "selected", "diet": "no_match", "home_city": "sensitivity"}
    assert all({"relevance", "recency", "score", "outcome", "rank"} <= set(c)
               for c in report["candidates"])
    assert report["rendered"].startswith("<stored_facts>")
    assert report["withheld"] == {"sensitivity": 1}


def test_preload_limit_budget_and_no_domain(db):
    assert "diet = pescatarian" in invoke(db, "recall", *MEAL, "--preload").stdout
    assert invoke(db, "recall", *MEAL, "--preload", "--limit", "0").stdout.count("\n- ") == 0
    assert invoke(db, "recall", *MEAL, "--preload", "--budget", "2").stdout.count("\n- ") == 0
    assert invoke(db, "recall", *MEAL, "--preload", "--no-domain", "--max-age", "90d",
                  "--half-life", "30d", "--recency-weight", "0.5").exit_code == 0


@pytest.mark.parametrize("args, message", [
    (["--clearance", "secret"], "unknown clearance 'secret'"),
    (["--limit", "-1"], "--limit cannot be negative"),
    (["--budget", "-2"], "--budget cannot be negative"),
    (["--half-life", "0"], "--half-life must be more than zero"),
    (["--min-confidence", "2"], "--min-confidence must be a number from 0 to 1"),
    (["--max-age", "soon"], "--max-age 'soon' is not a duration"),
])
def test_bad_input_is_an_error_exit_1(db, args, message):
    result = invoke(db, "recall", "x", *MEAL, *args)
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ") and message in result.stderr
    assert "Traceback" not in result.output


def test_missing_partition_is_a_usage_error(db):
    result = invoke(db, "recall", "x")
    assert result.exit_code == 2 and "one partition: give --app" in result.stderr


def test_real_subprocess(db):
    exe = Path(sys.executable).with_name("factledger")
    env = {**os.environ, **NOW}
    done = subprocess.run([str(exe), "--db", str(db), "recall", 'where" OR NEAR(live*) ^eat\n',
                           *MEAL, "--clearance", "personal"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "home_city = Bengaluru" in done.stdout
    bad = subprocess.run([str(exe), "--db", str(db), "recall", "x", *MEAL, "--half-life", "0"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 1 and bad.stderr.startswith("Error: ") and "Traceback" not in bad.stderr


def test_history_labels_superseded_with_dates(db):
    rows = json.loads(invoke(db, "history", *MEAL, "--predicate", "home_city", "--json").stdout)
    pune = [r for r in rows if r["value"] == "Pune" and r["recorded_to"] is None][0]
    assert pune["status"] == "superseded" and pune["valid_to"].startswith("2026-09-30")
    assert "Pune" not in invoke(db, "recall", "city", *MEAL, "--clearance", "personal").stdout
