"""The ingest, sessions and review commands: CliRunner for most, real subprocesses for a few."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger
from tests.ingest.helpers import CANDIDATES, ROOT, SESSIONS, adk_event, adk_session, write_json

FACTLEDGER = str(Path(sys.executable).parent / "factledger")
MEAL = ["--app", "mealkit", "--user", "priya"]


def run(db, *args, input=None):
    if args and args[0] == "ingest" and "--create" not in args:
        args = (*args, "--create")             # these tests start from a fresh file
    return CliRunner().invoke(cli, ["--db", str(db), *args], input=input, catch_exceptions=False)


def count(db) -> int:
    with Ledger(db) as ledger:
        return ledger._conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]


def test_ingest_directory_summary_json(tmp_path):
    db = tmp_path / "l.db"
    result = run(db, "ingest", str(SESSIONS / "meal-kit"), *MEAL, "--extractor", "patterns", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["sessions"], summary["events_read"], summary["candidates"]) == (3, 10, 5)
    assert summary["applied"] == {"insert": 3, "supersede": 2}
    assert summary["rejected"] == {} and summary["held"] == {}
    again = json.loads(run(db, "ingest", str(SESSIONS / "meal-kit"), *MEAL, "--json").stdout)
    assert (again["unchanged"], again["candidates"]) == (3, 0)


def test_ingest_text_summary_names_rejections_by_reason(tmp_path):
    result = run(tmp_path / "l.db", "ingest", str(SESSIONS / "deployment"), "-t")
    assert result.exit_code == 0
    assert "rejected: 1 (preference_not_user_authored 1)" in result.stdout
    assert "applied: 3 (insert 2, supersede 1)" in result.stdout


def test_ingest_from_stdin(tmp_path):
    text = (SESSIONS / "meal-kit" / "1-vegetarian-in-pune.json").read_text()
    result = run(tmp_path / "l.db", "ingest", "-", "--json", input=text)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["applied"] == {"insert": 2}


def test_candidates_option_implies_the_candidates_extractor(tmp_path):
    result = run(tmp_path / "l.db", "ingest", str(SESSIONS / "meal-kit"),
                 "--candidates", str(CANDIDATES / "meal-kit.jsonl"), "--json")
    summary = json.loads(result.stdout)
    assert result.exit_code == 0 and summary["results"][0]["status"] == "ingested"
    with Ledger(tmp_path / "l.db") as ledger:
        assert ledger.sessions("mealkit", "priya")[0]["extractor"] == "candidates"


def test_bad_candidates_file_names_file_and_line(tmp_path):
    bad = tmp_path / "c.jsonl"
    bad.write_text('{"predicate": "diet", "value": "v", "quote": "q", "evidence_event": "e"}\n{oops\n')
    result = run(tmp_path / "l.db", "ingest", str(SESSIONS / "meal-kit"), "--candidates", str(bad))
    assert result.exit_code == 1 and f"{bad} line 2" in result.stderr
    assert "Traceback" not in result.output


def test_one_bad_file_does_not_lose_the_good_ones(tmp_path):
    db = tmp_path / "l.db"
    bad = tmp_path / "broken.json"
    bad.write_text('{"id": "x", "appName": "mealkit", "userId": "priya", "events": [{"id": "e1"}]}')
    result = run(db, "ingest", str(SESSIONS / "meal-kit"), str(bad), "--json")
    assert result.exit_code == 1
    summary = json.loads(result.stdout)
    assert summary["ingested"] == 3 and summary["failures"][0]["source"] == str(bad)
    assert "Error: 1 of 4 sessions or files failed: " + str(bad) in result.stderr
    assert summary["ingested"] + summary["unchanged"] + summary["skipped_erased"] + summary["failed"] \
        == summary["sources"] == 4
    table = run(tmp_path / "again.db", "ingest", str(SESSIONS / "meal-kit"), str(bad), "--create", "-t")
    assert "sessions or files: 4 (3 ingested, 0 unchanged, 1 failed)" in table.stdout
    assert "the event has no timestamp" in result.stderr
    with Ledger(db) as ledger:
        assert len(ledger.sessions("mealkit", "priya")) == 3
        assert ledger.lookup.session_state("mealkit", "priya", "x") is None


def test_bad_input_writes_nothing_and_exits_1(tmp_path):
    db = tmp_path / "l.db"
    for name, text in (("a.json", "{"), ("b.json", '{"appName": "a", "userId": "u", "events": []}'),
                       ("c.json", json.dumps(adk_session([{"id": "e", "author": "user", "timestamp": "x"}])))):
        path = tmp_path / name
        path.write_text(text)
        result = run(db, "ingest", str(path))
        assert result.exit_code == 1 and str(path) in result.stderr and "Traceback" not in result.output
    assert count(db) == 0


def test_missing_user_is_an_error_naming_the_file(tmp_path):
    path = write_json(tmp_path / "s.json", adk_session([adk_event("e1", "user", "hi")], user=None))
    result = run(tmp_path / "l.db", "ingest", str(path))
    assert result.exit_code == 1 and "names no user (give --user)" in result.stderr
    assert run(tmp_path / "l.db", "ingest", str(path), "--user", "u1").exit_code == 0


def test_no_paths_is_an_error(tmp_path):
    result = run(tmp_path / "l.db", "ingest")
    assert result.exit_code == 1 and "name at least one" in result.stderr


def test_sessions_command_lists_watermark_counts_digest(tmp_path):
    db = tmp_path / "l.db"
    run(db, "ingest", str(SESSIONS / "meal-kit"))
    rows = json.loads(run(db, "sessions", *MEAL, "--json").stdout)
    assert [(r["session"], r["watermark"], r["applied"]) for r in rows] == [
        ("meal-1", "m1-e4", 2), ("meal-2", "m2-e5", 2), ("meal-3", "m3-e2", 1)]
    assert "digest" in rows[0]
    assert run(db, "sessions").exit_code == 2                   # a usage error: no partition named


def test_review_list_accept_and_reject_are_events(tmp_path):
    db = tmp_path / "l.db"
    cands = tmp_path / "c.jsonl"
    cands.write_text(
        '{"predicate": "hometown", "value": "Pune", "quote": "we\'re in Pune", "evidence_event": "m1-e1"}\n'
        '{"predicate": "eats", "value": "vegetarian", "quote": "I\'m vegetarian", "evidence_event": "m1-e1"}\n')
    run(db, "ingest", str(SESSIONS / "meal-kit" / "1-vegetarian-in-pune.json"), "--candidates", str(cands))
    held = json.loads(run(db, "review", "--json").stdout)
    assert sorted(h["predicate"] for h in held) == ["eats", "hometown"]
    by = {h["predicate"]: h["hold_id"] for h in held}

    accepted = run(db, "review", "accept", by["hometown"], "--as", "city", "--confirm-sensitivity", "personal",
                   "--json")
    assert accepted.exit_code == 0, accepted.output
    outcome = json.loads(accepted.stdout)
    assert outcome["decision"] == "insert"
    rejected = run(db, "review", "reject", by["eats"], "--reason", "duplicate of diet", "--json")
    assert rejected.exit_code == 0
    assert json.loads(run(db, "review", "--json").stdout) == []
    closed = {h["predicate"]: h["status"] for h in json.loads(run(db, "review", "--all", "--json").stdout)}
    assert closed == {"hometown": "accepted", "eats": "rejected"}

    with Ledger(db) as ledger:
        (fact,) = ledger.facts("mealkit", "priya", predicate="home_city")
        assert (fact["value"], fact["session"], fact["quote"]) == ("Pune", "meal-1", "we're in Pune")
        observed = ledger.log(type="FactObserved")[-1]["body"]
        assert observed["hold_id"] == by["hometown"]
        assert ledger.log(type="CandidateRejected")[-1]["body"]["hold_id"] == by["eats"]
        assert ledger.replay_differences() == []
    again = run(db, "review", "accept", by["hometown"], "--as", "city", "--confirm-sensitivity", "personal")
    assert again.exit_code == 1 and "already accepted" in again.stderr
    unknown = run(db, "review", "accept", "nope", "--as", "city")
    assert unknown.exit_code == 1 and "no held candidate" in unknown.stderr


def test_review_accept_under_an_unknown_predicate_is_refused(tmp_path):
    db = tmp_path / "l.db"
    cands = tmp_path / "c.jsonl"
    cands.write_text('{"predicate": "hometown", "value": "Pune", "quote": "we\'re in Pune", "evidence_event": "m1-e1"}\n')
    run(db, "ingest", str(SESSIONS / "meal-kit" / "1-vegetarian-in-pune.json"), "--candidates", str(cands))
    (held,) = json.loads(run(db, "review", "--json").stdout)
    before = count(db)
    result = run(db, "review", "accept", held["hold_id"], "--as", "favourite_colour")
    assert result.exit_code == 1 and "not a predicate" in result.stderr and count(db) == before


def test_review_accept_of_an_existing_value_reinforces_and_closes(tmp_path):
    db = tmp_path / "l.db"
    run(db, "ingest", str(SESSIONS / "meal-kit" / "1-vegetarian-in-pune.json"))
    cands = tmp_path / "c.jsonl"
    cands.write_text('{"predicate": "eats", "value": "pescatarian", "quote": "I eat fish now, so pescatarian options are fine", "evidence_event": "m3-e1"}\n')
    run(db, "ingest", str(SESSIONS / "meal-kit" / "3-pescatarian.json"), "--candidates", str(cands))
    run(db, "ingest", str(SESSIONS / "meal-kit" / "2-moved-to-bengaluru.json"))
    # diet is vegetarian; pescatarian said in meal-3 is held; accept it as diet -> supersede
    (held,) = json.loads(run(db, "review", "--json").stdout)
    outcome = json.loads(run(db, "review", "accept", held["hold_id"], "--as", "diet", "--json").stdout)
    assert outcome["decision"] == "supersede"
    assert json.loads(run(db, "review", "--json").stdout) == []


def _subprocess(*args, cwd, stdin=None):
    env = dict(os.environ, FACTLEDGER_DB=str(cwd / "l.db"))
    env.pop("ANTHROPIC_API_KEY", None)
    if args and args[0] == "ingest":
        args = (*args, "--create")
    return subprocess.run([FACTLEDGER, *args], cwd=cwd, env=env, input=stdin, capture_output=True,
                          text=True, timeout=120)


def test_real_process_ingest_all_examples_then_facts(tmp_path):
    done = _subprocess("ingest", str(ROOT / "examples" / "sessions"), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["sessions"] == 9 and summary["failed"] == 0
    assert done.stderr == "factledger: extractor: patterns\n"   # which ran; no progress bar when not a terminal
    facts = json.loads(_subprocess("facts", *MEAL, "--json", cwd=tmp_path).stdout)
    assert {f["predicate"]: f["value"] for f in facts}["diet"] == "pescatarian"
    again = _subprocess("ingest", str(ROOT / "examples" / "sessions"), "--json", cwd=tmp_path)
    assert json.loads(again.stdout)["unchanged"] == 9


def test_real_process_bad_file_exit_1_no_traceback(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"session": "s", "app": "a", "user": "u"}\n{"id": "e1", "author": "user", "timestamp": "soon"}\n')
    done = _subprocess("ingest", str(bad), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("Error: ") and f"{bad} line 2" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_demo_ingests_the_examples_and_explains_a_superseded_value():
    result = CliRunner().invoke(cli, ["demo"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "preference_not_user_authored 1" in result.stdout
    assert "user home_city = 'Pune'  [superseded" in result.stdout
    assert "ok: " in result.stdout
    assert '"format": "factledger/inclusion-proof/v1"' in result.stdout and "checkpoint ok: " in result.stdout
