"""Hostile inputs to ingestion: routing, the validator's tie to the quote, files and walks.

Each test failed before its fix: a candidate routed into another user's record, a value or a
retraction the quote does not support, `/dev/zero` and FIFOs, unrecognised files skipped in
silence, and a quadratic patterns extractor.
"""

from __future__ import annotations

import json

from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger

from .ingest_helpers import write_jsonl


def run(db, *args, input=None):
    return CliRunner().invoke(cli, ["--db", str(db), *args], input=input, catch_exceptions=False)


def event(event_id="e1", text="I'm vegetarian and we're in Pune.", author="user"):
    return {"id": event_id, "author": author, "timestamp": "2026-09-30T10:00:00Z", "text": text}

# --- case 1: a candidate that matches several sessions is refused and named -------------------

def _two_users(tmp_path):
    alice = write_jsonl(tmp_path / "alice.jsonl", [
        {"session": "s-alice", "app": "clinic", "user": "alice"},
        event("e1", "I'm allergic to penicillin, and I'm vegetarian.")])
    bob = write_jsonl(tmp_path / "bob.jsonl", [
        {"session": "s-bob", "app": "clinic", "user": "bob"},
        event("e1", "I'm allergic to penicillin, and I'm vegan.")])
    return alice, bob


def test_a_candidate_citing_an_event_id_two_users_share_is_refused(tmp_path):
    alice, bob = _two_users(tmp_path)
    cands = write_jsonl(tmp_path / "c.jsonl", [
        {"predicate": "allergy", "value": "penicillin", "quote": "allergic to penicillin",
         "evidence_event": "e1"},
        {"predicate": "diet", "value": "vegan", "quote": "I'm vegan", "evidence_event": "e1",
         "session": "s-bob"}])
    db = tmp_path / "l.db"
    result = run(db, "ingest", str(alice), str(bob), "--candidates", str(cands), "--json")
    assert result.exit_code == 1
    summary = json.loads(result.stdout)
    (refused,) = summary["ambiguous_candidates"]
    assert refused["candidate"] == f"{cands} line 1" and refused["evidence_event"] == "e1"
    assert [m.split(" (")[1] for m in refused["matches"]] == [
        "app clinic, user alice, session s-alice)", "app clinic, user bob, session s-bob)"]
    assert "line 1" in result.stderr and "event e1 matches 2 sessions" in result.stderr
    with Ledger(db) as ledger:
        assert ledger.facts("clinic", "alice", include_sensitive=True) == []
        assert [f["value"] for f in ledger.facts("clinic", "bob", include_sensitive=True)] == ["vegan"]
    assert summary["candidates"] == 1 and summary["unmatched_candidates"] == 0
    table = run(db, "ingest", str(alice), str(bob), "--candidates", str(cands), "-t")
    assert "REFUSED" in table.stdout and "give it a session field" in table.stdout


def test_a_session_id_two_partitions_share_is_ambiguous_too(tmp_path):
    one = write_jsonl(tmp_path / "one.jsonl", [{"session": "s1", "app": "a", "user": "alice"}, event()])
    two = write_jsonl(tmp_path / "two.jsonl", [{"session": "s1", "app": "a", "user": "bob"}, event()])
    cands = write_jsonl(tmp_path / "c.jsonl", [
        {"predicate": "diet", "value": "vegetarian", "quote": "I'm vegetarian",
         "evidence_event": "e1", "session": "s1"}])
    result = run(tmp_path / "l.db", "ingest", str(one), str(two), "--candidates", str(cands), "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["applied"] == {}
    assert "session s1 matches 2 sessions" in result.stderr
