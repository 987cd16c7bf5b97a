"""The operator's view: nothing filtered in silence, what exists, erasure evidence, output details."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.cli.output import display_width
from factledger.ledger import Ledger
from tests.conftest import MovableClock, cand

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
P = ["--app", "app", "--user", "u1"]


@pytest.fixture
def db(tmp_path) -> str:
    path = tmp_path / "ledger.db"
    clock = MovableClock("2026-09-01T00:00:00Z")
    with Ledger(path, clock=clock, create=True) as ledger:
        ledger.observe(cand(predicate="home_city", value="Pune", session="s1", said_at="2026-08-01"))
        clock.tick()
        ledger.observe(cand(predicate="home_city", value="Bengaluru", session="s2", said_at="2026-08-20"))
        ledger.observe(cand(predicate="medication", value="aspirin", session="s1", said_at="2026-08-01"))
        ledger.observe(cand(predicate="diet", value="東京風ラーメン" * 8, session="s2", said_at="2026-08-20"))
        ledger.observe(cand(user="u2", predicate="diet", value="vegan", session="s9"))
    return str(path)


def invoke(db: str, *args: str):
    return CliRunner(env={"FACTLEDGER_NOW": "2026-11-01T00:00:00Z"}).invoke(cli, ["--db", db, *args])


# --- nothing filtered in silence -----------------------------------------------------------

def test_facts_say_how_many_were_withheld_and_clearance_shows_them(db):
    shown = invoke(db, "facts", *P, "--json")
    assert "aspirin" not in shown.stdout
    assert "1 facts withheld by clearance (1 health" in shown.stderr and "--clearance health" in shown.stderr
    for level in ("health", "personal,health"):          # a list names its highest level
        cleared = invoke(db, "facts", *P, "--clearance", level, "--json")
        assert "aspirin" in cleared.stdout and "withheld" not in cleared.stderr
    bad = invoke(db, "facts", *P, "--clearance", "secret")
    assert bad.exit_code == 1 and "unknown clearance" in bad.stderr


@pytest.mark.parametrize("args, notice", [
    (["facts", "--app", "app", "--user", "u3"], "no user 'u3' in app 'app'"),
    (["facts", "--app", "ap", "--user", "u1"], "no app 'ap' in this ledger (did you mean 'app'?)"),
    (["history", "--app", "app", "--user", "u9"], "no user 'u9'"),
    (["sessions", "--app", "app", "--user", "u9"], "no user 'u9'"),
    (["log", *P, "--session", "s7"], "no session 's7'"),
    (["export", "--app", "app", "--user", "nobody", "--data-subject"], "no user 'nobody'"),
    (["recall", "city", "--app", "app", "--user", "nobody"], "no user 'nobody'"),
])
def test_a_typo_is_told_on_stderr_and_exits_0(db, args, notice):
    result = invoke(db, *args)
    assert result.exit_code == 0, result.output
    assert notice in result.stderr, result.stderr


@pytest.mark.parametrize("args, error", [
    (["facts", *P, "--predicate", "home_cty"], "did you mean home_city"),
    (["facts", *P, "--predicate", "favourite_colour"], "unknown predicate 'favourite_colour'"),
    (["history", *P, "--predicate", "favourite_colour"], "unknown predicate 'favourite_colour'"),
    (["log", "--predicate", "favourite_colour"], "unknown predicate 'favourite_colour'"),
    (["log", "--type", "Bogus"], "no event type 'Bogus'"),
    (["log", "--type", "FactObserve"], "did you mean 'FactObserved'"),
])
def test_an_unknown_name_of_the_vocabulary_in_a_filter_is_an_error(db, args, error):
    """A predicate or event type nobody defined is a typo, not an empty answer: exit 1, the hint."""
    result = invoke(db, *args)
    assert result.exit_code == 1, result.output
    assert "Error:" in result.stderr and error in result.stderr, result.stderr
    assert result.stdout.strip() in ("", "(no rows)")


def test_forget_of_an_unknown_user_and_a_repeat_say_so(db):
    unknown = invoke(db, "forget", "--app", "app", "--user", "nobody", "--reason", "r", "--yes", "--json")
    assert unknown.exit_code == 0 and "no user 'nobody'" in unknown.stderr
    first = json.loads(invoke(db, "forget", *P, "--session", "s2", "--reason", "r", "--yes", "--json").stdout)
    again = invoke(db, "forget", *P, "--session", "s2", "--reason", "r", "--yes", "-t")
    assert f"already erased at seq {first['redaction_seq']}" in again.stdout
    assert f"already erased at seq {first['redaction_seq']}" in again.stderr


@pytest.mark.parametrize("scope", [["--predicate", "home_city"], ["--sensitivity", "health"]])
def test_a_repeated_class_forget_names_the_receipt_that_did_it(db, scope):
    """A predicate or sensitivity class forgotten before and not said since: the repeat says which
    receipt erased it, not "nothing to forget" as if it had never been there."""
    first = json.loads(invoke(db, "forget", *P, *scope, "--reason", "r", "--yes", "--json").stdout)
    assert not first["noop"]
    again = invoke(db, "forget", *P, *scope, "--reason", "r", "--yes", "-t")
    assert again.exit_code == 0
    assert f"already erased at seq {first['redaction_seq']}" in again.stdout
    assert f"already erased at seq {first['redaction_seq']}" in again.stderr


def test_recall_says_what_was_withheld_and_explain_counts_no_other_tenant(db):
    result = invoke(db, "recall", "what do I take?", *P)
    assert result.exit_code == 0
    assert "withheld from this caller" in result.stderr and "health 1" in result.stderr
    assert "aspirin" not in result.stdout
    explained = invoke(db, "recall", *P, "--preload", "--explain")
    assert "other partitions" not in explained.stdout and "vegan" not in explained.stdout


def test_as_of_before_anything_says_nothing_was_recorded_yet(db):
    result = invoke(db, "facts", *P, "--as-of", "2020-01-01", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout) == []
    assert "nothing had been recorded yet" in result.stderr
    assert "ISO 8601" in " ".join(invoke(db, "facts", "--help").stdout.split())


# --- what exists, what happened --------------------------------------------------------------

def test_partitions_and_predicates(db):
    rows = json.loads(invoke(db, "partitions", "--json").stdout)
    assert [(r["app"], r["user"], r["open_facts"]) for r in rows] == [("app", "u1", 3), ("app", "u2", 1)]
    names = {r["name"]: r for r in json.loads(invoke(db, "predicates", "--json").stdout)}
    assert names["home_city"]["cardinality"] == "one" and "city" in names["home_city"]["aliases"]
    assert "retention_days" in names["home_city"]
    assert invoke(db, "predicates", "--csv").stdout.startswith("name,cardinality")


def test_log_filters_and_shows_predicate_and_value(db):
    rows = json.loads(invoke(db, "log", *P, "--predicate", "city", "--json").stdout)
    assert {r["predicate"] for r in rows} == {"home_city"}
    assert {"Pune", "Bengaluru"} <= {r["value"] for r in rows}
    by_session = json.loads(invoke(db, "log", "--session", "s9", "--json").stdout)
    assert [r["user"] for r in by_session] == ["u2"]
    fact = rows[0]["body"]["fact_id"]
    touched = json.loads(invoke(db, "log", "--fact", fact, "--json").stdout)
    assert touched and all(r["seq"] in {e["seq"] for e in json.loads(
        invoke(db, "why", fact, "--json").stdout)["events"]} for r in touched)
    assert json.loads(invoke(db, "log", "--until", "2026-01-01", "--json").stdout) == []
    assert len(json.loads(invoke(db, "log", "--since", "2026-01-01", "--json").stdout)) >= 5
    table = invoke(db, "log", *P, "-t").stdout
    assert "predicate" in table.splitlines()[0] and "Pune" in table


def test_history_table_carries_session_author_quote_and_valid_at_rows_their_interval(db):
    table = invoke(db, "history", *P, "-t").stdout      # each fact's heading: its session, author, quote
    said = json.loads(invoke(db, "history", *P, "--json").stdout)[0]
    assert f'session {said["session"]}, {said["author"]} said: "' in " ".join(table.split())
    shown = json.loads(invoke(db, "history", *P, "--predicate", "home_city", "--json").stdout)
    assert [r["belief"] for r in shown if r["belief"] == "current"] == ["current"]   # one current value
    assert all(r["belief"].startswith("was ") for r in shown if r["recorded_to"] is not None)
    rows = json.loads(invoke(db, "facts", *P, "--valid-at", "2026-08-10", "--json").stdout)
    pune = [r for r in rows if r["value"] == "Pune"][0]
    assert pune["state"] == "superseded" and pune["valid_to"].startswith("2026-08-20")
    assert (pune["state_then"], pune["state_now"]) == ("current", "superseded")   # true then, replaced since
    table = invoke(db, "facts", *P, "--valid-at", "2026-08-10", "-t").stdout.splitlines()[0]
    assert {"state_then", "state_now", "valid_from", "valid_to"} <= set(table.split())
    current = json.loads(invoke(db, "facts", *P, "--status", "current", "--json").stdout)
    assert current and {r["status"] for r in current} == {"current"}


# --- erasure evidence --------------------------------------------------------------------------

def test_erasures_of_a_subject_are_found_by_hashing_the_ids(db):
    session = json.loads(invoke(db, "forget", *P, "--session", "s2", "--reason", "r", "--yes", "--json").stdout)
    other = json.loads(invoke(db, "forget", "--app", "app", "--user", "u2", "--reason", "r", "--yes",
                              "--json").stdout)
    mine = json.loads(invoke(db, "erasures", *P, "--json").stdout)
    assert [r["redaction_seq"] for r in mine] == [session["redaction_seq"]]
    theirs = json.loads(invoke(db, "erasures", "--app", "app", "--user", "u2", "--json").stdout)
    assert [r["redaction_seq"] for r in theirs] == [other["redaction_seq"]]
    by_session = json.loads(invoke(db, "erasures", *P, "--session", "s2", "--json").stdout)
    assert [r["redaction_seq"] for r in by_session] == [session["redaction_seq"]]
    none = invoke(db, "erasures", *P, "--session", "s1", "--json")
    assert json.loads(none.stdout) == [] and "no erasure receipt" in none.stderr


def test_dry_run_receipt_has_no_seq_and_counts_are_counts(db):
    dry = json.loads(invoke(db, "forget", *P, "--session", "s2", "--reason", "r", "--dry-run", "--json").stdout)
    assert dry["redaction_seq"] is None and dry["event_id"] is None and dry["compensating_seqs"] == []
    assert all(isinstance(v, int) for v in dry["counts"].values())
    assert isinstance(dry["compensating_events"], int)


def test_report_erasure_markdown_json_html(db, tmp_path):
    receipt = json.loads(invoke(db, "forget", *P, "--session", "s2", "--reason", "GDPR 17", "--yes",
                                "--json").stdout)
    seq = str(receipt["redaction_seq"])
    md = invoke(db, "report", "erasure", seq)
    assert md.exit_code == 0 and md.stdout.startswith(f"# Erasure report: seq {seq}")
    assert receipt["scope_hash"] in md.stdout and "GDPR 17" in md.stdout and "s2" not in md.stdout
    report = json.loads(invoke(db, "report", "erasure", seq, "--json").stdout)
    assert report["verify"]["ok"] and report["head_before"].startswith(f"{int(seq) - 1}:")
    assert report["receipt"]["counts"] == receipt["counts"]
    page = tmp_path / "r.html"
    assert invoke(db, "report", "erasure", seq, "--format", "html", "-o", str(page)).exit_code == 0
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<script" not in text and "http" not in text
    assert (page.stat().st_mode & 0o777) == 0o600
    missing = invoke(db, "report", "erasure", "1")
    assert missing.exit_code == 1 and "no erasure receipt at seq 1" in missing.stderr


def test_report_takes_its_format_from_the_file_name_and_refuses_a_contradiction(db, tmp_path):
    seq = str(json.loads(invoke(db, "forget", *P, "--session", "s2", "--reason", "r", "--yes",
                                "--json").stdout)["redaction_seq"])
    page, notes, data = tmp_path / "x.html", tmp_path / "x.md", tmp_path / "x.json"
    for path in (page, notes, data):
        assert invoke(db, "report", "erasure", seq, "-o", str(path)).exit_code == 0
    assert page.read_text().startswith("<!DOCTYPE html>")
    assert notes.read_text().startswith(f"# Erasure report: seq {seq}")
    assert json.loads(data.read_text())["receipt"]["redaction_seq"] == int(seq)
    clash = invoke(db, "report", "erasure", seq, "--format", "markdown", "-o", str(tmp_path / "y.html"))
    assert clash.exit_code == 1 and "Error:" in clash.stderr and "html" in clash.stderr
    assert not (tmp_path / "y.html").exists()


def test_erasures_by_ticket_find_the_receipt_of_that_forget(db):
    receipt = json.loads(invoke(db, "forget", *P, "--session", "s2", "--reason", "GDPR 17",
                                "--ticket", "DPO-2026-114", "--yes", "--json").stdout)
    invoke(db, "forget", "--app", "app", "--user", "u2", "--reason", "r", "--ticket", "DPO-2026-200", "--yes")
    found = json.loads(invoke(db, "erasures", "--ticket", "DPO-2026-114", "--json").stdout)
    assert [(r["redaction_seq"], r["ticket"]) for r in found] == [(receipt["redaction_seq"], "DPO-2026-114")]
    typed = json.loads(invoke(db, "erasures", "--ticket", "  dpo-2026-114 ", "--json").stdout)
    assert [r["redaction_seq"] for r in typed] == [receipt["redaction_seq"]]   # as the web view finds it
    none = invoke(db, "erasures", "--ticket", "DPO-2026-999", "--json")
    assert none.exit_code == 0 and json.loads(none.stdout) == []
    assert "no erasure receipt with ticket 'DPO-2026-999'" in none.stderr and "DPO-2026-114" in none.stderr


# --- output details ----------------------------------------------------------------------------

def test_two_output_formats_is_a_usage_error(db):
    for args in (["facts", *P, "--json", "--csv"], ["recall", "x", *P, "--json", "-t"]):
        result = invoke(db, *args)
        assert result.exit_code == 2 and "one output format" in result.stderr


def test_a_piped_table_cuts_nothing_and_wide_characters_align(db):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}     # piped: the default 120 columns
    out = subprocess.run([FACTLEDGER, "--db", db, "facts", *P, "-t"], capture_output=True, text=True, env=env)
    lines = out.stdout.splitlines()
    value = lines[0].index("value")          # the long value wraps inside its column, whole
    assert "".join(line[value:].split("  ")[0] for line in lines[2:]).count("東京風ラーメン") == 8
    assert "…" not in out.stdout and max(display_width(line) for line in lines) <= 120
    column = lines[0].index("status")
    for line in lines[2:]:
        if not line.startswith("user"):
            continue                          # a continuation line of the wrapped value
        prefix = line[:len(line)]
        # the status column starts at the same display column on every row
        assert any(display_width(prefix[:i]) == column and prefix[i:].startswith(("current", "disputed"))
                   for i in range(len(prefix)))


# --- reviewers ---------------------------------------------------------------------------------

@pytest.fixture
def disputed(tmp_path) -> tuple[str, str, str]:
    """A stated diet, then an agent's weaker inference that disputes it."""
    path = str(tmp_path / "d.db")
    invoke(path, "init")
    first = json.loads(invoke(path, "observe", *P, "--predicate", "diet", "--value", "vegetarian",
                              "--quote", "I'm vegetarian", "--session", "s1", "--event-id", "e1",
                              "--said-at", "2026-08-30", "--json").stdout)
    second = json.loads(invoke(path, "observe", *P, "--predicate", "diet", "--value", "vegan",
                               "--basis", "inferred", "--author", "agent", "--quote", "orders vegan boxes",
                               "--session", "s3", "--event-id", "e9", "--said-at", "2026-10-02",
                               "--json").stdout)
    assert second["decision"] == "dispute"
    return path, first["fact_id"], second["fact_id"]


def test_review_lists_open_disputes_beside_held_candidates(disputed):
    path, original, challenger = disputed
    invoke(path, "observe", *P, "--predicate", "shoe_colour", "--value", "red", "--quote", "red shoes",
           "--session", "s4", "--event-id", "e4", "--said-at", "2026-10-03")
    rows = json.loads(invoke(path, "review", "--json").stdout)
    assert {r["kind"] for r in rows} == {"held", "dispute"}
    assert [r["item"] for r in rows if r["kind"] == "dispute"] == [challenger]
    assert [r["disputes"] for r in rows if r["kind"] == "dispute"] == [[original]]   # a list, not JSON text


def test_csv_cells_hold_scalars_flattened_or_the_csv_is_refused(disputed):
    import csv
    import io
    path, original, _ = disputed
    stats = list(csv.DictReader(io.StringIO(invoke(path, "stats", "--csv").stdout)))
    assert stats[0]["events_by_type.FactObserved"] == "2" and "events_by_type" not in stats[0]
    assert not any(v.startswith(("{", "[")) for v in stats[0].values())
    refused = invoke(path, "why", original, "--csv")
    assert refused.exit_code == 1 and refused.stdout == ""
    assert "Error: CSV holds one value a cell" in refused.stderr and "--json" in refused.stderr
    logged = list(csv.DictReader(io.StringIO(invoke(path, "log", "--csv").stdout)))
    assert logged and all(not (v or "").startswith(("{", "[")) for row in logged for v in row.values())
    assert "body.value" in logged[0]


def test_resolve_by_and_reason_are_shown_by_why_with_what_disputed_it(disputed):
    path, original, challenger = disputed
    done = invoke(path, "resolve", challenger, "--reject", "--by", "dr.rao", "--reason", "pharmacy record")
    assert done.exit_code == 0, done.output
    report = json.loads(invoke(path, "why", original, "--json").stdout)
    relations = {r["relation"]: r for r in report["related"]}
    assert relations["disputed by"]["value"] == "vegan" and relations["disputed by"]["session"] == "s3"
    text = invoke(path, "why", challenger, "-t").stdout
    assert "what happened:" in text and "dispute resolved (reject)" in text
    assert "by dr.rao: pharmacy record" in text and "'vegetarian'" in text


def test_why_shows_what_replaced_a_fact(db):
    rows = json.loads(invoke(db, "history", *P, "--predicate", "home_city", "--json").stdout)
    pune = [r for r in rows if r["value"] == "Pune"][0]["fact_id"]
    text = invoke(db, "why", pune, "-t").stdout
    assert "replaced by 'Bengaluru' (session s2" in text and '"I said Bengaluru"' in text


def test_review_accept_and_reject_record_the_reviewer(tmp_path):
    path = str(tmp_path / "r.db")
    invoke(path, "init")
    for value, event in (("vegan", "e1"), ("keto", "e2")):       # words of diet's vocabulary
        invoke(path, "observe", *P, "--predicate", "shoe_colour", "--value", value, "--quote", value,
               "--session", "s1", "--event-id", event, "--said-at", "2026-10-01")
    held = json.loads(invoke(path, "review", "--json").stdout)
    accepted = json.loads(invoke(path, "review", "accept", held[0]["item"], "--as", "diet", "--by", "ana",
                                 "--reason", "means diet", "--json").stdout)
    assert "accepted from review by ana: means diet" in invoke(path, "why", accepted["fact_id"], "-t").stdout
    assert invoke(path, "review", "reject", held[1]["item"], "--reason", "noise", "--by", "ana").exit_code == 0
    rejected = json.loads(invoke(path, "log", "--type", "CandidateRejected", "--json").stdout)
    assert rejected[-1]["body"]["reviewed_by"] == "ana"


def test_why_of_an_erased_fact_names_its_receipt(db):
    fact = json.loads(invoke(db, "facts", *P, "--predicate", "home_city", "--json").stdout)[0]["fact_id"]
    receipt = json.loads(invoke(db, "forget", *P, "--fact", fact, "--reason", "r", "--yes", "--json").stdout)
    result = invoke(db, "why", fact, "-t")                   # an answer, not an error (tests/cli/test_why_erased.py)
    assert result.exit_code == 0
    assert f"by the receipt at seq {receipt['redaction_seq']} (" in result.stdout


def test_why_of_a_fact_erased_with_its_whole_user_names_the_receipt(db):
    fact = json.loads(invoke(db, "facts", *P, "--predicate", "home_city", "--json").stdout)[0]["fact_id"]
    receipt = json.loads(invoke(db, "forget", *P, "--reason", "r", "--yes", "--json").stdout)
    result = invoke(db, "why", fact, "-t")
    assert result.exit_code == 0
    assert f"by the receipt at seq {receipt['redaction_seq']} (" in result.stdout
    assert "u1" not in json.dumps(json.loads(invoke(db, "log", "--type", "Redacted", "--json").stdout))
    unknown = invoke(db, "why", "01NEVERWASAFACT")
    assert unknown.exit_code == 1 and "erased" not in unknown.stderr


def test_forget_ticket_is_recorded_in_the_receipt_report_and_list(db):
    receipt = json.loads(invoke(db, "forget", *P, "--session", "s2", "--reason", "r", "--ticket", "DPO-2026-114",
                                "--yes", "--json").stdout)
    assert receipt["ticket"] == "DPO-2026-114"
    rows = json.loads(invoke(db, "erasures", "--json").stdout)
    assert rows[-1]["ticket"] == "DPO-2026-114"
    report = json.loads(invoke(db, "report", "erasure", str(receipt["redaction_seq"]), "--json").stdout)
    assert report["receipt"]["ticket"] == "DPO-2026-114"
    bad = invoke(db, "forget", *P, "--session", "s1", "--reason", "r", "--ticket", "a\nb", "--yes")
    assert bad.exit_code == 1 and "--ticket" in bad.stderr


def test_demo_out_leaves_a_ledger_to_explore(tmp_path):
    out = tmp_path / "demo-out" / "factledger.db"
    done = CliRunner().invoke(cli, ["demo", "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert "# Erasure report: seq" in done.stdout and f"demo ledger kept at {out}" in done.stdout
    facts = json.loads(invoke(str(out), "facts", "--app", "mealkit", "--user", "priya", "--json").stdout)
    assert {f["predicate"] for f in facts} >= {"diet", "home_city"}
    assert (out.stat().st_mode & 0o777) == 0o600


def test_head_verify_why_ingest_honour_the_output_flags(db, tmp_path):
    plain = invoke(db, "head").stdout.strip()
    assert json.loads(invoke(db, "head", "--json").stdout)["head"] == plain
    assert invoke(db, "head", "--csv").stdout.startswith("seq,hash,head")
    assert json.loads(invoke(db, "verify", "--json").stdout)["ok"] is True
    assert invoke(db, "verify", "--csv").stdout.startswith("ok,")
    fact = json.loads(invoke(db, "facts", *P, "--json").stdout)[0]["fact_id"]
    assert json.loads(invoke(db, "why", fact, "--json").stdout)["fact"]["fact_id"] == fact
    assert json.loads(invoke(db, "why", fact, "--nl").stdout)["fact"]["fact_id"] == fact
    session = tmp_path / "chat.jsonl"
    session.write_text(json.dumps({"id": "a1", "author": "user", "timestamp": "2026-06-01T09:00:00Z",
                                   "text": "I'm vegetarian"}) + "\n")
    ingested = invoke(db, "ingest", str(session), *P, "--json")
    assert json.loads(ingested.stdout)["sessions"] == 1
    assert invoke(db, "ingest", str(session), *P, "--csv").stdout.startswith("sessions,")


def test_recall_as_of_serves_what_would_have_been_served_then(tmp_path):
    path = str(tmp_path / "a.db")
    invoke(path, "init")
    for value, said, now in (("vegetarian", "2026-08-30", "2026-09-01T00:00:00Z"),
                             ("pescatarian", "2026-10-28", "2026-10-29T00:00:00Z")):
        done = CliRunner(env={"FACTLEDGER_NOW": now}).invoke(cli, [
            "--db", path, "observe", *P, "--predicate", "diet", "--value", value, "--quote", f"I am {value}",
            "--session", f"s-{value}", "--event-id", "e1", "--said-at", said])
        assert done.exit_code == 0, done.output
    then = invoke(path, "recall", "diet", *P, "--as-of", "2026-10-01")
    assert "diet = vegetarian" in then.stdout and "pescatarian" not in then.stdout
    now = invoke(path, "recall", "diet", *P)
    assert "diet = pescatarian" in now.stdout and "vegetarian" not in now.stdout
    before = invoke(path, "recall", "diet", *P, "--as-of", "2020-01-01")
    assert "nothing had been recorded yet" in before.stderr
    assert "ISO 8601" in " ".join(invoke(path, "recall", "--help").stdout.split())   # wrapped help


def test_why_lists_each_event_once_even_when_it_touched_the_fact_twice(disputed):
    """`DisputeResolved` names the loser as subject and as loser: one event, one line, both roles."""
    path, _, challenger = disputed
    invoke(path, "resolve", challenger, "--reject", "--by", "dr.rao", "--reason", "asked")
    report = json.loads(invoke(path, "why", challenger, "--json").stdout)
    seqs = [e["seq"] for e in report["events"]]
    assert len(seqs) == len(set(seqs))
    resolved = [e for e in report["events"] if e["type"] == "DisputeResolved"]
    assert len(resolved) == 1 and set(resolved[0]["roles"]) == {"loser", "subject"}
    assert invoke(path, "why", challenger, "-t").stdout.count("dispute resolved") == 1
