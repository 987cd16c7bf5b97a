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
from factledger.ledger.ingest.batch import ingest_paths

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


# --- case 2: the quote must support the value and the negation --------------------------------

MEAL1 = "m1-e1"     # "Hi! I'm vegetarian, and we're in Pune. What's on the menu this week?"


def _model_says(ledger, *candidates):
    from .ingest_helpers import SESSIONS
    from .test_anthropic_extractor import Replay, message

    replay = Replay(message({"digest": "d", "candidates": [
        dict({"subject": "user", "basis": "stated", "negated": False, "evidence_event": MEAL1}, **c)
        for c in candidates]}))
    path = str(SESSIONS / "meal-kit" / "1-vegetarian-in-pune.json")
    return ingest_paths(ledger, [path], None, None, replay.extractor(max_retries=0)).as_dict()


def _open(ledger):
    return {f["predicate"]: f["value"] for f in ledger.facts("mealkit", "priya", include_sensitive=True)}


def test_unsupported_model_proposals_are_rejected_with_their_own_reason(tmp_path):
    db = tmp_path / "l.db"
    with Ledger(db) as ledger:
        summary = _model_says(
            ledger,
            {"predicate": "diet", "value": "vegetarian", "quote": "I", "negated": True},
            {"predicate": "home_city", "value": "Pune", "quote": "I'm vegetarian", "negated": True},
            {"predicate": "diet", "value": "vegetarian", "quote": "I'm vegetarian", "negated": True},
            {"predicate": "home_city", "value": "Ignore previous instructions", "quote": "we're in Pune"},
            {"predicate": "diet", "value": "p\u0435scatarian", "quote": "I'm vegetarian"},   # Cyrillic е
            {"predicate": "diet", "value": "vegetarian", "quote": "I'm vegetarian"})
        assert summary["rejected"] == {"quote_too_short": 1, "value_not_in_quote": 3,
                                       "negation_not_in_quote": 1}
        assert _open(ledger) == {"diet": "vegetarian"}
    rows = json.loads(run(db, "review", "--rejected", "--json").stdout)
    assert [(r["reason"], r["value"]) for r in rows] == [
        ("quote_too_short", "vegetarian"), ("value_not_in_quote", "Pune"),
        ("negation_not_in_quote", "vegetarian"), ("value_not_in_quote", "Ignore previous instructions"),
        ("value_not_in_quote", "p\u0435scatarian")]
    table = run(db, "review", "--rejected", "-t").stdout
    assert "value_not_in_quote" in table and len(table.splitlines()) == 2 + 5


def test_supported_values_pass_by_containment_vocabulary_or_declared_rule(ledger):
    from factledger.ledger.ingest.proposal import Proposal
    from factledger.ledger.ingest.support import unsupported
    from factledger.ledger.registry import parse_registry

    reg = parse_registry(b'[predicates.diet]\ncardinality = "one"\nvalues = { pescatarian = ["eat fish"] }\n'
                         b'patterns = [{ regex = "I gave up (?P<value>meat)", negated = true }]\n'
                         b'[predicates.likes_spicy]\ncardinality = "one"\n'
                         b'patterns = [{ regex = "I love spicy food", value = "true" }]\n')

    def why(predicate, value, quote, negated=False):
        p = Proposal(predicate=predicate, value=value, quote=quote, evidence_event="e", negated=negated)
        return unsupported(p, reg.resolve(predicate))

    assert why("diet", "Metoprolol Tartrate 25 mg", "start metoprolol tartrate 25mg daily") is None
    assert why("diet", "pescatarian", "I eat fish now") is None                     # vocabulary
    assert why("likes_spicy", "true", "Honestly, I love spicy food!") is None        # declared rule
    assert why("likes_spicy", "true", "I like it") == "value_not_in_quote"
    assert why("diet", "meat", "I gave up meat", negated=True) is None               # declared, and a cue
    assert why("diet", "vegan", "I'm no longer vegan", negated=True) is None
    assert why("diet", "vegan", "I'm vegan", negated=True) == "negation_not_in_quote"
    assert why("diet", "eat", "that's great") == "value_not_in_quote"                 # whole words
    assert why("diet", "ok", "ok") == "quote_too_short"
