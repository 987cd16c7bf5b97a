"""The forgetting commands through click (CliRunner) and a few real `factledger` processes;
`verify` after redactions, and its tamper detection on scrubbed envelopes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger
from tests.conftest import MovableClock, cand

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
P = ["--app", "app", "--user", "u1"]


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "ledger.db"
    clock = MovableClock()
    with Ledger(path, clock=clock, create=True) as ledger:
        ledger.observe(cand(predicate="home_city", value="Pune", session="s1", said_at="2026-08-01"))
        clock.tick()
        ledger.observe(cand(predicate="home_city", value="Bengaluru", session="s2",
                            said_at="2026-09-01"))
        ledger.observe(cand(value="vegan", session="s2", said_at="2026-09-01"))
        ledger.observe(cand(user="u2", value="vegan", session="s9"))
    return str(path)


def run(db, *args, input=None):
    return CliRunner().invoke(cli, ["--db", db, *args], input=input)


def current(db, user="u1"):
    result = run(db, "facts", "--app", "app", "--user", user, "--json")
    return sorted(f["value"] for f in orjson.loads(result.stdout))


def head(db):
    return run(db, "head").stdout.strip()


def test_forget_session_prints_receipt_json(db):
    result = run(db, "forget", *P, "--session", "s2", "--reason", "request 7", "--yes", "--json")
    assert result.exit_code == 0, result.output
    receipt = orjson.loads(result.stdout)
    assert receipt["counts"]["events"] == 3 and receipt["redaction_seq"] and receipt["event_id"]
    assert len(receipt["scope_hash"]) == 32 and "s2" not in result.stdout
    assert current(db) == ["Pune"]
    rows = orjson.loads(run(db, "erasures", "--json").stdout)
    assert [r["scope_kind"] for r in rows] == ["session"]
    assert run(db, "replay", "--check").exit_code == 0
    assert run(db, "verify").exit_code == 0


def test_forget_table_output_and_repeat_is_a_noop(db):
    first = run(db, "forget", *P, "--session", "s2", "--reason", "r", "--yes", "-t")
    assert first.exit_code == 0 and "forgotten: session" in first.stdout
    again = run(db, "forget", *P, "--session", "s2", "--reason", "r", "--yes", "--json")
    assert again.exit_code == 0
    receipt = orjson.loads(again.stdout)
    assert receipt["noop"] and receipt["counts"] == {"events": 0, "facts": 0, "sessions": 0, "keys": 0,
                                                   "restated": 0}


def test_forget_fact_predicate_sensitivity_and_user(db):
    fact = orjson.loads(run(db, "facts", *P, "--predicate", "diet", "--json").stdout)[0]["fact_id"]
    assert run(db, "forget", *P, "--fact", fact, "--reason", "r", "--yes").exit_code == 0
    assert current(db) == ["Bengaluru"]
    assert run(db, "forget", *P, "--predicate", "home_city", "--reason", "r", "--yes").exit_code == 0
    assert current(db) == []
    assert run(db, "forget", "--app", "app", "--user", "u2", "--sensitivity", "normal",
               "--reason", "r", "--yes").exit_code == 0
    assert current(db, "u2") == []
    result = run(db, "forget", *P, "--reason", "r", "--yes", "--json")
    assert result.exit_code == 0 and orjson.loads(result.stdout)["counts"]["pseudonymised"] == 4
    assert run(db, "replay", "--check").exit_code == 0 and run(db, "verify").exit_code == 0


def test_dry_run_prints_plan_and_changes_nothing(db):
    before = head(db)
    result = run(db, "forget", *P, "--session", "s2", "--reason", "r", "--dry-run", "-t")
    assert result.exit_code == 0
    assert "dry run" in result.stdout and "user home_city" in result.stdout
    assert "FactObserved 2" in result.stdout
    assert head(db) == before and current(db) == ["Bengaluru", "vegan"]


@pytest.mark.parametrize("args, message", [
    (["--session", "nope", "--reason", "r"], "no session"),
    (["--fact", "nope", "--reason", "r"], "no fact"),
    (["--session", "s1", "--fact", "x", "--reason", "r"], "at most one"),
    (["--session", "s1"], "reason is required"),
    (["--session", "s1", "--reason", ""], "reason is required"),
    (["--sensitivity", "secret", "--reason", "r"], "unknown sensitivity"),
])
def test_bad_input_is_error_exit_1_and_changes_nothing(db, args, message):
    before = head(db)
    result = run(db, "forget", *P, *args, "--yes")
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("Error: ") and message in result.stderr
    assert "Traceback" not in result.output
    assert head(db) == before


def test_missing_partition_is_a_usage_error(db):
    result = run(db, "forget", "--app", "app", "--reason", "r")
    assert result.exit_code == 2 and "Error:" in result.stderr and "--user" in result.stderr


def test_retain_is_a_dry_run_unless_apply(tmp_path):
    db = tmp_path / "r.db"
    clock = MovableClock("2026-11-01T00:00:00Z")
    with Ledger(db, clock=clock, create=True) as ledger:
        ledger.observe(cand(predicate="support_ticket", value="T-1", said_at="2026-01-01"))
    env = {"FACTLEDGER_NOW": "2026-11-01T00:00:00Z"}
    dry = CliRunner(env=env).invoke(cli, ["--db", str(db), "retain", "--all", "--json"])
    assert dry.exit_code == 0 and orjson.loads(dry.stdout)["dry_run"]
    assert current(str(db)) == ["T-1"]
    done = CliRunner(env=env).invoke(cli, ["--db", str(db), "retain", "--all", "--apply", "--yes", "--json"])
    assert done.exit_code == 0, done.output
    assert orjson.loads(done.stdout)["counts"]["facts"] == 1 and current(str(db)) == []
    bad = CliRunner(env=env).invoke(cli, ["--db", str(db), "retain", "--all", "--older-than", "5"])
    assert bad.exit_code == 1 and "needs a class" in bad.stderr


def test_confirmation_on_a_terminal(db, monkeypatch):
    import factledger.cli.forget as module

    monkeypatch.setattr(module, "interactive", lambda: True)
    before = head(db)
    refused = run(db, "forget", *P, "--session", "s2", "--reason", "r", input="n\n")
    assert refused.exit_code == 1 and head(db) == before
    accepted = run(db, "forget", *P, "--session", "s2", "--reason", "r", input="y\n")
    assert accepted.exit_code == 0 and current(db) == ["Pune"]


# --- real processes ------------------------------------------------------------------------

def sh(db, *args):
    return subprocess.run([FACTLEDGER, "--db", db, *args], capture_output=True, text=True)


def test_real_process_forget_verify_replay(db):
    result = sh(db, "forget", *P, "--session", "s2", "--reason", "r", "--yes", "--json")
    assert result.returncode == 0, result.stderr
    assert orjson.loads(result.stdout)["purge"]["checkpoint"] == "truncated"
    assert sh(db, "verify").returncode == 0
    assert sh(db, "replay", "--check").returncode == 0
    bad = sh(db, "forget", *P, "--session", "s1", "--fact", "f", "--reason", "r")
    assert bad.returncode == 1 and bad.stderr.startswith("Error: ") and "Traceback" not in bad.stderr
    missing = sh(db, "forget", *P, "--session", "s1")
    assert missing.returncode == 1 and "reason" in missing.stderr


# --- verify after redaction, and tampering with scrubbed envelopes --------------------------

def tamper(db, *statements):
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER events_refuse_update")
    for sql in statements:
        conn.execute(sql)
    conn.commit()
    conn.close()


def scrubbed_seq(db):
    assert run(db, "forget", *P, "--session", "s2", "--reason", "r", "--yes").exit_code == 0
    conn = sqlite3.connect(db)
    seq = conn.execute("SELECT MIN(seq) FROM events WHERE body IS NULL").fetchone()[0]
    conn.close()
    return seq


@pytest.mark.parametrize("change", [
    "type = 'FactReinforced'", "recorded_at = '2020-01-01T00:00:00.000000Z'",
    "commitment = '" + "0" * 64 + "'", "event_id = 'forged'",
])
def test_verify_catches_tampering_with_a_scrubbed_envelope(db, change):
    seq = scrubbed_seq(db)
    assert sh(db, "verify").returncode == 0
    tamper(db, f"UPDATE events SET {change} WHERE seq = {seq}")
    result = sh(db, "verify")
    assert result.returncode == 1 and f"seq {seq}" in result.stderr


def test_verify_catches_a_scrub_no_redaction_authorised(db):
    seq = scrubbed_seq(db)
    tamper(db, f"UPDATE events SET body = NULL, salt = NULL, redacted_by = {seq}"
               " WHERE seq = 1")
    result = sh(db, "verify")
    assert result.returncode == 1 and "seq 1" in result.stderr


def test_verify_catches_an_orphaned_scrub(db):
    seq = scrubbed_seq(db)
    tamper(db, f"UPDATE events SET redacted_by = NULL WHERE seq = {seq}")
    assert sh(db, "verify").returncode == 1


def test_reason_rules_are_the_library_s_and_come_before_opening_the_ledger(tmp_path):
    missing = str(tmp_path / "none.db")
    runner = CliRunner()
    for reason, message in (("  ", "a reason is required"), ("x" * 501, "limited to 500")):
        result = runner.invoke(cli, ["--db", missing, "forget", "--app", "app", "--user", "u1",
                                     "--reason", reason, "--yes"])
        assert result.exit_code == 1 and message in result.stderr, result.output
    assert not (tmp_path / "none.db").exists()


@pytest.mark.parametrize("scope", [["--session", "s2"], []])
def test_the_plan_and_the_receipt_count_the_same_keys_in_the_same_words(db, scope):
    """The plan lists the keys decided again, the receipt counts them: a session forget decides
    home_city (Pune comes back) and diet again, a user forget decides nothing again (issue 46)."""
    plan = orjson.loads(run(db, "forget", *P, *scope, "--reason", "r", "--dry-run", "--json").stdout)["plan"]
    receipt = orjson.loads(run(db, "forget", *P, *scope, "--reason", "r", "--yes", "--json").stdout)
    keys = [k for p in plan for k in p["keys"]]
    assert len(keys) == receipt["counts"]["keys"]
    assert keys == (["user diet", "user home_city"] if scope else [])


def test_the_plan_and_receipt_texts_say_keys_decided_again(db):
    plan = run(db, "forget", *P, "--session", "s2", "--reason", "r", "--dry-run", "-t").stdout
    receipt = run(db, "forget", *P, "--session", "s2", "--reason", "r", "--yes", "-t").stdout
    assert "keys decided again: 2 (user diet, user home_city)" in plan and "re-decided" not in plan
    assert "keys decided again 2" in " ".join(receipt.split())
