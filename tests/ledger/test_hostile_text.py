"""Hostile text that must come out as safe text: names, subjects, booleans, errors, why, review.

Each test here failed before the fix it names: a trailing newline passing a name check, a
`SYSTEM:` subject printed bare, `"false"` read as true, escape sequences and CR/LF reaching the
terminal through errors, `why` and `review`, and JSONL split inside a string at U+2028.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import LedgerError
from factledger.ledger.ingest.batch import ingest_paths
from factledger.ledger.ingest.proposal import read_candidates
from factledger.ledger.recall.render import render
from factledger.ledger.registry.predicates import parse_registry
from factledger.ledger.vocabulary.booleans import NotABoolean, strict_bool
from factledger.ledger.vocabulary.terminal import escape, line_safe
from tests.ingest.helpers import write_jsonl

ESC = "\x1b"
HEADER = {"session": "s1", "app": "a", "user": "u"}


def run(db, *args, input=None):
    if args and args[0] in ("ingest", "observe"):
        args = (*args, "--create")             # these cases start from a fresh file
    return CliRunner().invoke(cli, ["--db", str(db), *args], input=input, catch_exceptions=False)


def event(event_id="e1", text="I'm vegetarian and we're in Pune.", author="user"):
    return {"id": event_id, "author": author, "timestamp": "2026-09-30T10:00:00Z", "text": text}


def registry(body: str):
    return parse_registry(body.encode(), "<test>")


def test_escape_writes_terminal_controls_as_ascii_would():
    for ch in "\r\n\x1b\x07\x85\u2028\u2029\u202e\u200f\u2066\ufeff":
        assert escape(f"a{ch}b") == f"a{ascii(ch)[1:-1]}b"
    assert escape("José 東京 naïve") == "José 東京 naïve"          # other scripts read as they are
    assert line_safe(escape("".join(map(chr, range(0x110000)))).replace("\n", ""))


# --- case 5: whole-string name checks ---------------------------------------------------------

@pytest.mark.parametrize("name", ["diet\\n", "diet\\r", "diet\\u2028", "diet\\u0085"])
def test_a_predicate_name_with_a_trailing_line_break_is_refused(name):
    with pytest.raises(LedgerError, match="field name"):
        registry(f'[predicates."{name}"]\ncardinality = "one"\n')


def test_a_subject_with_a_trailing_newline_never_matches():
    from factledger.ledger.domain.candidate import SUBJECT_RE

    assert SUBJECT_RE.fullmatch("user.daughter") and not SUBJECT_RE.fullmatch("user\n")


# --- case 6: a subject that reads like a role marker -------------------------------------------

@pytest.mark.parametrize("subject", ["SYSTEM:", "system:", "assistant:", "account:4411", "User"])
def test_subjects_other_than_user_are_quoted_in_the_block(subject):
    fact = dict(fact_id="f1", user="u1", subject=subject, predicate="diet", value="vegan",
                basis="stated", said_at="2026-09-30T10:00:00Z", confirmed_at=None, session="s1",
                author="user", disputes=[])
    line = render([fact]).splitlines()[2]
    assert line.startswith(f"- {json.dumps(subject)} diet = vegan")
    fact["subject"] = "user.daughter"
    assert render([fact]).splitlines()[2].startswith("- user.daughter diet = vegan")


# --- case 4: strict booleans -------------------------------------------------------------------

def test_strict_bool_refuses_strings_and_numbers():
    assert strict_bool(True) is True and strict_bool(False) is False
    assert strict_bool(None, "negated", default=False) is False
    for bad in ("false", "true", "False", 0, 1, "", [], {}):
        with pytest.raises(NotABoolean, match="negated must be true or false"):
            strict_bool(bad, "negated")
    assert isinstance(NotABoolean("x"), ValueError) and isinstance(NotABoolean("x"), LedgerError)


@pytest.mark.parametrize("flag", ['"false"', '"true"', "0", "1"])
def test_a_candidates_line_with_a_string_negated_is_refused(tmp_path, flag):
    path = tmp_path / "c.jsonl"
    path.write_text('{"predicate": "diet", "value": "vegetarian", "quote": "I\'m vegetarian", '
                    f'"evidence_event": "e1", "negated": {flag}}}\n')
    with pytest.raises(LedgerError, match="line 1: negated"):
        read_candidates(str(path))


def test_a_registry_pattern_with_negated_false_as_a_string_is_refused():
    with pytest.raises(LedgerError, match="negated must be true or false"):
        registry('[predicates.diet]\ncardinality = "one"\n'
                 'patterns = [{ regex = "I am (?P<value>vegan)", negated = "false" }]\n')


def test_an_adk_event_with_a_string_partial_is_refused(tmp_path):
    from factledger.ledger.ingest.formats import parse_adk

    with pytest.raises(LedgerError, match="partial must be true or false"):
        parse_adk({"id": "s1", "events": [{"id": "e1", "author": "user", "timestamp": 1.0,
                                            "partial": "false"}]})


# --- case 7: escapes in every error -----------------------------------------------------------

def test_a_file_name_with_an_escape_sequence_is_escaped_in_the_error(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / f"x{ESC}[2J{ESC}]0;pwned\x07.jsonl").write_text("{not json\n")
    result = run(tmp_path / "l.db", "ingest", str(folder), "--app", "a", "--user", "u", "-t")
    assert result.exit_code == 1
    assert ESC not in result.output and "\x07" not in result.output
    assert "\\x1b[2J" in result.stderr and result.stderr.startswith("Error: ")
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_json_key_with_an_escape_sequence_is_escaped_in_the_error(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"predicate": "diet", "value": "v", "quote": "q", "evidence_event": "e1", '
                    '"\\u001b[31mred\\r\\nError: fake": 1}\n')
    session = write_jsonl(tmp_path / "s.jsonl", [HEADER, event()])
    result = run(tmp_path / "l.db", "ingest", str(session), "--candidates", str(path))
    assert result.exit_code == 1
    assert ESC not in result.stderr and "\r" not in result.stderr
    assert len(result.stderr.splitlines()) == 1 and "\\x1b[31mred\\r\\n" in result.stderr


def test_a_models_key_with_an_escape_sequence_is_not_stored_raw(ledger, tmp_path):
    from tests.ingest.test_anthropic_extractor import Replay, message

    session = write_jsonl(tmp_path / "s.jsonl", [HEADER, event()])
    bad = {"digest": "d", "candidates": [{"subject": "user", "predicate": "diet", "value": "v",
                                          "quote": "q", "evidence_event": "e1",
                                          f"{ESC}[2J\nkey": 1}]}
    replay = Replay(message(bad))
    summary = ingest_paths(ledger._work, [str(session)], None, None, replay.extractor(max_retries=0))
    (failed,) = ledger.log(type="IngestFailed")
    assert summary.failed and ESC not in failed["body"]["error"] and "\n" not in failed["body"]["error"]
    assert "\\x1b[2J\\nkey" in failed["body"]["error"]


# --- case 8: why and review escape quotes -----------------------------------------------------

FAKE = "I'm vegan\r said 2026-01-01 by doctor in session s9, event e9:\n  \"trust me\"\x1b[1A"


def test_why_escapes_a_quote_that_would_fake_a_provenance_line(tmp_path):
    db = tmp_path / "l.db"
    done = run(db, "observe", "--app", "a", "--user", "u", "--predicate", "diet", "--value", "vegan",
               "--quote", FAKE.replace("\x1b[1A", ""), "--session", "s1", "--event-id", "e1",
               "--said-at", "2026-09-30T10:00:00Z", "--json")
    fact_id = json.loads(done.stdout)["fact_id"]
    out = run(db, "why", fact_id, "-t").stdout
    lines = out.splitlines()
    assert "\r" not in out and sum(line.startswith("said ") for line in lines) == 1
    assert lines[3] == '  "I\'m vegan\\r said 2026-01-01 by doctor in session s9, event e9:\\n  "trust me""'


def test_review_escapes_carriage_returns(tmp_path):
    db = tmp_path / "l.db"
    run(db, "observe", "--app", "a", "--user", "u", "--predicate", "not_in_registry", "--value",
        "fake row", "--quote", "held\rfake row", "--session", "s1", "--event-id", "e1",
        "--said-at", "2026-09-30T10:00:00Z")
    out = run(db, "review", "-t").stdout
    assert "\r" not in out and "held\\rfake" in out
    rows = [line for line in out.splitlines() if not line.startswith(" ")]   # a wrapped cell's lines are indented
    assert len(rows) == 3 and not any(line.startswith("fake") for line in rows)


# --- case 10: JSONL split on "\n" only --------------------------------------------------------

@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c"])
def test_jsonl_with_unicode_line_separators_inside_strings_parses(tmp_path, separator):
    # json.dumps(ensure_ascii=False) writes these characters raw inside the string
    rows = [HEADER, event(text=f"I'm vegetarian.{separator}We're in Pune.")]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    db = tmp_path / "l.db"
    result = run(db, "ingest", str(path), "--json")
    assert result.exit_code == 0, result.output
    candidates = tmp_path / "c.jsonl"
    candidates.write_text(json.dumps({"predicate": "diet", "value": "vegetarian",
                                      "quote": f"I'm vegetarian.{separator}", "evidence_event": "e1"},
                                     ensure_ascii=False) + "\n", encoding="utf-8")
    (proposal,) = read_candidates(str(candidates))
    assert proposal.quote.startswith("I'm vegetarian.")


# --- also seen: JSON and tables carry bidi overrides escaped; --budget; conflicting proposals ---

RLO = "\u202e"


def test_recall_json_explain_and_facts_tables_escape_bidi_overrides(tmp_path):
    db = tmp_path / "l.db"
    value = f"Pune{RLO}gnp.exe"
    run(db, "observe", "--app", "a", "--user", "u", "--predicate", "home_city", "--value", value,
        "--quote", f"we're in {value}", "--session", "s1", "--event-id", "e1",
        "--said-at", "2026-09-30T10:00:00Z")
    outputs = [run(db, "recall", "Pune", "--app", "a", "--user", "u", "--clearance", "all", *flags).stdout
               for flags in ((), ("--json",), ("--explain",), ("--explain", "--json"), ("-t",))]
    outputs.append(run(db, "facts", "--app", "a", "--user", "u", "-t").stdout)
    outputs.append(run(db, "facts", "--app", "a", "--user", "u", "--json").stdout)
    outputs.append(run(db, "log", "--nl").stdout)
    for out in outputs:
        assert RLO not in out and "\\u202e" in out, out
    assert json.loads(outputs[1])[0]["value"] == value           # the JSON still reads back exactly


def test_budget_counts_a_long_word_as_more_than_one():
    from factledger.ledger.recall.render import words

    assert words("- diet = pescatarian (stated 2026-09-30)") == 6
    assert words("x" * 500) == 32


def test_conflicting_values_from_one_event_are_both_rejected_and_order_follows_the_transcript(ledger, tmp_path):
    from tests.ingest.test_anthropic_extractor import Replay, message

    session = write_jsonl(tmp_path / "s.jsonl", [
        HEADER, event("e1", "I'm vegan. No wait, I'm vegetarian."),
        dict(event("e2", "Actually I'm pescatarian now."), timestamp="2026-09-30T11:00:00Z")])
    replay = Replay(message({"digest": "d", "candidates": [
        {"subject": "user", "predicate": "diet", "value": "pescatarian", "quote": "I'm pescatarian",
         "evidence_event": "e2"},
        {"subject": "user", "predicate": "diet", "value": "vegan", "quote": "I'm vegan", "evidence_event": "e1"},
        {"subject": "user", "predicate": "diet", "value": "vegetarian", "quote": "I'm vegetarian",
         "evidence_event": "e1"}]}))
    summary = ingest_paths(ledger._work, [str(session)], None, None, replay.extractor(max_retries=0)).as_dict()
    assert summary["rejected"] == {"conflicting_proposals": 2}
    assert [f["value"] for f in ledger.facts("a", "u")] == ["pescatarian"]
