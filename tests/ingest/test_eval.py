"""The evaluation harness over the bundled probe set."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import LedgerError
from factledger.ledger.ingest.evaluate import load_probes, run_probes, supported
from tests.ingest.helpers import CANDIDATES, EXAMPLES

PROBES = str(EXAMPLES / "probes.jsonl")


def test_probe_set_has_at_least_30_probes_over_the_examples():
    probes = load_probes(PROBES)
    assert len(probes) >= 30
    assert {p["app"] for p in probes} == {"mealkit", "deploybot", "clinic"}
    assert any("expect_absent" in p for p in probes)


def test_patterns_extractor_figures():
    report = run_probes(PROBES, extractor="patterns")
    assert report["probes"] >= 30
    assert report["recall"] == 1.0 and report["wrong_served"] == 0.0
    assert report["false_memory_rate"] == 0.0 and report["served_by"] == "recall"
    assert report["sessions"] == 9 and report["entries_per_session"] == pytest.approx(12 / 9, abs=0.001)


def test_candidates_extractor_figures():
    files = [str(CANDIDATES / f"{n}.jsonl") for n in ("meal-kit", "deployment", "clinical")]
    report = run_probes(PROBES, extractor="candidates", candidates=files)
    assert report["recall"] == 1.0 and report["wrong_served"] == 0.0


def test_a_bad_extraction_shows_up_as_misses_and_is_never_stored(tmp_path):
    probes = tmp_path / "p.jsonl"
    session = EXAMPLES / "sessions" / "meal-kit" / "1-vegetarian-in-pune.json"
    probes.write_text(json.dumps({"app": "mealkit", "user": "priya", "sessions": [str(session)],
                                  "question": "What diet?", "expect": "vegetarian"}) + "\n")
    lying = tmp_path / "c.jsonl"
    lying.write_text(json.dumps({"predicate": "diet", "value": "vegan", "quote": "I'm vegetarian",
                                 "evidence_event": "m1-e1"}) + "\n")
    report = run_probes(str(probes), extractor="candidates", candidates=str(lying))
    assert report["recall"] == 0.0
    # The validator now refuses a value its quote does not state, so the lie is never stored:
    # a miss, and no false memory.
    assert report["false_memory_rate"] == 0.0 and report["stored_facts"] == 0


def test_supported():
    assert supported("148/92 mmHg", "My blood pressure was 148/92mmHg today", "blood_pressure")
    assert supported("true", "You clearly like spicy food", "likes_spicy")
    assert not supported("Mumbai", "we're in Pune", "home_city")


def test_bad_probe_file_names_the_line(tmp_path):
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"app": "a", "user": "u", "sessions": ["x"], "question": "q", "expect": "v"}\n{nope\n')
    with pytest.raises(LedgerError, match="line 2"):
        load_probes(str(bad))


def test_eval_command_table_and_json(tmp_path):
    runner = CliRunner()
    table = runner.invoke(cli, ["--db", str(tmp_path / "x.db"), "eval", PROBES, "-t"])
    assert table.exit_code == 0 and "recall              1.0" in table.stdout
    data = json.loads(runner.invoke(cli, ["--db", str(tmp_path / "x.db"), "eval", PROBES, "--json"]).stdout)
    assert data["extractor"] == "patterns" and len(data["rows"]) == data["probes"]


def test_an_answer_must_be_the_value_or_whole_words_of_it():
    from factledger.ledger.ingest.evaluate import answers

    assert answers("50 mg", "metoprolol tartrate 50 mg")
    assert answers("148/92", "148/92mmHg") and answers("148/92 mmHg", "148/92mmHg")
    assert answers("Pune", "pune")
    assert not answers("25 mg", "125 mg") and not answers("25 mg", "metoprolol tartrate 125 mg")
    assert not answers("us-east", "us-east-2") and not answers("true", "untrue")


def test_a_longer_number_is_neither_a_hit_nor_a_leak(tmp_path):
    """Served "125 mg": a probe expecting "25 mg" misses, one forbidding "25 mg" does not leak."""
    session = tmp_path / "dose.jsonl"
    session.write_text(
        json.dumps({"session": "dose", "app": "clinic", "user": "arun"}) + "\n"
        + json.dumps({"id": "d1", "author": "user", "timestamp": "2026-09-01T09:00:00Z",
                      "text": "I take metoprolol tartrate 125 mg daily."}) + "\n")
    found = tmp_path / "c.jsonl"
    found.write_text(json.dumps({"predicate": "medication_dose", "value": "metoprolol tartrate 125 mg",
                                 "quote": "I take metoprolol tartrate 125 mg daily.",
                                 "evidence_event": "d1"}) + "\n")
    probes = tmp_path / "p.jsonl"
    base = {"app": "clinic", "user": "arun", "sessions": [str(session)],
            "question": "What medication dose is the patient on?"}
    probes.write_text(json.dumps(dict(base, expect="25 mg")) + "\n"
                      + json.dumps(dict(base, expect_absent="25 mg")) + "\n"
                      + json.dumps(dict(base, expect="125 mg")) + "\n")
    report = run_probes(str(probes), extractor="candidates", candidates=str(found))
    assert [r["served"] for r in report["rows"]][0] == ["metoprolol tartrate 125 mg"]
    assert [r["ok"] for r in report["rows"]] == [False, True, True]
    assert report["recall"] == 0.5 and report["wrong_served"] == 0.0


def test_eval_reads_each_session_file_once(monkeypatch):
    import factledger.ledger.ingest.sources as sources

    reads: list[str] = []
    real = sources.read_source
    monkeypatch.setattr(sources, "read_source", lambda name, *a: reads.append(name) or real(name, *a))
    report = run_probes(PROBES, extractor="patterns")
    groups = {(p["app"], p["user"], tuple(p["sessions"])) for p in load_probes(PROBES)}
    assert report["recall"] == 1.0
    assert len(reads) == sum(len(files) for _, _, files in groups)
