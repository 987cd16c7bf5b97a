"""The core CLI through click's CliRunner (and the real console script for exit codes)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.projections.queries import FACT_FIELDS, HISTORY_FIELDS

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
PART = ["--app", "mealkit", "--user", "priya"]


def observe_args(**overrides) -> list[str]:
    args = {"predicate": "diet", "value": "vegetarian", "quote": "I'm vegetarian",
            "session": "s1", "event-id": "e1", "said-at": "2026-08-30T09:00:00Z"}
    args.update(overrides)
    out = ["observe", *PART]
    for key, value in args.items():
        if value is not None:
            out += [f"--{key}", value]
    return out


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("FACTLEDGER_NOW", "2026-11-01T00:00:00Z")
    db = str(tmp_path / "cli.db")

    def invoke(*args: str, ok: bool = True):
        result = CliRunner().invoke(cli, ["--db", db, *args])
        if ok:
            assert result.exit_code == 0, (result.output, result.exception)
        return result

    invoke("init")
    return invoke


def count_events(run) -> int:
    return json.loads(run("stats", "--json").stdout)["events"]


def test_observe_json_prints_the_decision(run):
    out = json.loads(run(*observe_args(), "--json").stdout)
    assert set(out) >= {"decision", "fact_id", "reason", "seqs"}
    assert out["decision"] == "insert" and out["seqs"] == [1]
    moved = json.loads(run(*observe_args(predicate="city", value="Pune", quote="we're in Pune"),
                           "--json").stdout)
    later = json.loads(run(*observe_args(predicate="city", value="Bengaluru", quote="We moved to Bengaluru",
                                         session="s2", **{"said-at": "2026-09-30"}), "--json").stdout)
    assert moved["decision"] == "insert" and later["decision"] == "supersede"
    assert later["seqs"] == [3, 4]


def test_facts_json_uses_the_design_field_names(run):
    run(*observe_args())
    facts = json.loads(run("facts", *PART, "--json").stdout)
    assert len(facts) == 1 and set(FACT_FIELDS) <= set(facts[0])
    for name in ("fact_id", "app", "user", "subject", "predicate", "value", "status", "basis",
                 "confidence", "effective_confidence", "sensitivity", "said_at", "recorded_at",
                 "confirmed_at", "confirmed_by", "session", "evidence_event", "quote", "author",
                 "disputes"):
        assert name in facts[0]
    assert facts[0]["recorded_at"] == "2026-11-01T00:00:00.000000Z"
    history = json.loads(run("history", *PART, "--json").stdout)
    assert set(HISTORY_FIELDS) <= set(history[0])


def test_output_formats(run):
    run(*observe_args())
    run(*observe_args(predicate="pet", value="cat", quote="my cat"))
    nl = run("facts", *PART, "--nl").stdout.strip().splitlines()
    assert [json.loads(line)["value"] for line in nl] == ["vegetarian", "cat"]
    rows = list(csv.DictReader(io.StringIO(run("facts", *PART, "--csv").stdout)))
    assert [r["value"] for r in rows] == ["vegetarian", "cat"]
    table = run("facts", *PART, "-t").stdout
    assert table.splitlines()[0].startswith("subject") and "vegetarian" in table


def test_filters_and_time_travel(run):
    run(*observe_args(predicate="city", value="Pune", quote="we're in Pune"))
    run(*observe_args(predicate="city", value="Bengaluru", quote="We moved to Bengaluru", session="s2",
                      **{"said-at": "2026-09-30"}))
    now = json.loads(run("facts", *PART, "--predicate", "location", "--json").stdout)
    assert [f["value"] for f in now] == ["Bengaluru"]
    then = json.loads(run("facts", *PART, "--valid-at", "2026-09-01", "--json").stdout)
    assert [(f["value"], f["status"]) for f in then] == [("Pune", "superseded")]
    assert json.loads(run("facts", *PART, "--subject", "user.partner", "--json").stdout) == []


def test_why_log_head_stats_replay(run):
    fact_id = json.loads(run(*observe_args(), "--json").stdout)["fact_id"]
    why = json.loads(run("why", fact_id, "--json").stdout)
    assert why["fact"]["quote"] == "I'm vegetarian" and why["events"][0]["type"] == "FactObserved"
    assert "I'm vegetarian" in run("why", fact_id, "-t").stdout
    log = json.loads(run("log", "--app", "mealkit", "--json").stdout)
    assert [e["type"] for e in log] == ["FactObserved"] and log[0]["body"]["value"] == "vegetarian"
    head = run("head").stdout.strip()
    assert head.startswith("1:") and len(head) == 66
    stats = json.loads(run("stats", "--json").stdout)
    assert (stats["events"], stats["facts"], stats["open_facts"]) == (1, 1, 1)
    assert json.loads(run("replay", "--check", "--json").stdout)["ok"] is True
    assert json.loads(run("replay", "--json").stdout)["replayed"] == 1


def test_resolve_through_the_cli(run):
    run(*observe_args(predicate="plan", value="basic", quote="Plan: basic", author="document",
                      basis="verified"))
    challenger = json.loads(run(*observe_args(predicate="plan", value="premium", quote="premium",
                                              session="s2"), "--json").stdout)
    assert challenger["decision"] == "dispute"
    bad = run("resolve", challenger["fact_id"], "--by", "ana", "--reason", "x", ok=False)
    assert bad.exit_code == 2 and "--accept or --reject" in bad.output
    run("resolve", challenger["fact_id"], "--reject", "--by", "ana", "--reason", "invoice says basic")
    facts = json.loads(run("facts", *PART, "--json").stdout)
    assert [(f["value"], f["status"]) for f in facts] == [("basic", "current")]


@pytest.mark.parametrize("overrides,message", [
    ({"basis": "certain"}, "basis"),
    ({"author": "oracle"}, "author"),
    ({"value": ""}, "value"),
    ({"quote": "   "}, "quote"),
    ({"value": "x" * 501}, "longer than"),
    ({"said-at": "last tuesday"}, "ISO 8601"),
    ({"value": "a\x07b"}, "control character"),
    ({"subject": "the user"}, "subject"),
    ({"confidence": "nan"}, "confidence"),
])
def test_bad_input_is_an_error_and_writes_nothing(run, overrides, message):
    run(*observe_args(session="s0"))
    before = count_events(run)
    result = run(*observe_args(**overrides), ok=False)
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and message in result.output
    assert count_events(run) == before


def test_missing_partition_is_a_usage_error_naming_it(run, monkeypatch):
    monkeypatch.delenv("FACTLEDGER_USER", raising=False)
    args = observe_args()
    args.remove("--user")
    args.remove("priya")
    result = run(*args, ok=False)
    assert result.exit_code == 2 and "--user (or FACTLEDGER_USER)" in result.output


def test_environment_supplies_the_partition(run, monkeypatch):
    monkeypatch.setenv("FACTLEDGER_APP", "mealkit")
    monkeypatch.setenv("FACTLEDGER_USER", "priya")
    run(*observe_args())
    assert len(json.loads(run("facts", "--json").stdout)) == 1


def test_real_process_exit_codes_and_no_traceback(tmp_path):
    db = str(tmp_path / "p.db")
    missing = subprocess.run([FACTLEDGER, "--db", db, "facts", *PART], capture_output=True, text=True)
    assert missing.returncode == 1 and missing.stderr.startswith("Error: no ledger")
    bad = subprocess.run([FACTLEDGER, "--db", db, *observe_args(basis="sure")],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    usage = subprocess.run([FACTLEDGER, "--db", db, "facts", "--bogus"], capture_output=True, text=True)
    assert usage.returncode == 2
    good = subprocess.run([FACTLEDGER, "--db", db, *observe_args(), "--create", "--json"],
                          capture_output=True, text=True)
    assert good.returncode == 0 and json.loads(good.stdout)["decision"] == "insert"


def test_not_a_ledger_file_is_a_clear_error(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    result = subprocess.run([FACTLEDGER, "--db", str(junk), "stats"], capture_output=True, text=True)
    assert result.returncode == 1 and result.stderr.startswith("Error: ")


def test_resolve_refuses_both_flags(run):
    run(*observe_args(predicate="plan", value="basic", quote="Plan: basic", author="document",
                      basis="verified"))
    challenger = json.loads(run(*observe_args(predicate="plan", value="premium", quote="premium",
                                              session="s2"), "--json").stdout)
    before = count_events(run)
    both = run("resolve", challenger["fact_id"], "--accept", "--reject", "--by", "a", "--reason", "r",
               ok=False)
    assert both.exit_code == 2 and count_events(run) == before


def test_head_of_an_empty_ledger_verifies(run):
    head = run("head").stdout.strip()
    assert head == "0:" + "0" * 64
    run("verify", "--expect-head", head)
    run(*observe_args())
    run("verify", "--expect-head", head.upper().replace("0:", "0:"))
    new_head = run("head").stdout.strip()
    run("verify", "--expect-head", new_head.upper())
    wrong = run("verify", "--expect-head", "0:" + "1" * 64, ok=False)
    assert wrong.exit_code == 1 and f"the log does not extend the pinned head (pinned 0:{'1' * 64}, log at 1:" in wrong.output


def test_reserved_partition_is_refused(run):
    result = run("observe", "--app", "mealkit", "--user", "_erasures", *observe_args()[5:], ok=False)
    assert result.exit_code == 1 and "reserved" in result.output


def test_ancient_said_at_stays_readable(run):
    run(*observe_args(**{"said-at": "0001-01-01"}))
    facts = json.loads(run("facts", *PART, "--json").stdout)
    assert facts[0]["said_at"] == "0001-01-01T00:00:00.000000Z"
    assert run("recall", "diet", *PART, "--preload", "--min-confidence", "0").exit_code == 0
    epoch = run(*observe_args(**{"said-at": "1788080400"}), ok=False)
    assert epoch.exit_code == 1 and "ISO 8601" in epoch.output
