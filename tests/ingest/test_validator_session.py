"""Every session-level validator rule (docs/ingestion.md), each with its own test, through ingestion.

Each test ingests a small ADK session with pre-made candidates (the `candidates` extractor), so
the rule is exercised on the real path: validator, registry rules, decision, events.
"""

from __future__ import annotations

import unicodedata

from factledger.ledger.ingest.candidates import CandidatesExtractor
from factledger.ledger.ingest.proposal import proposal_from
from factledger.ledger.ingest.session import Session
from tests.ingest.helpers import adk_event, adk_session

EVENTS = [
    adk_event("u1", "user", "Hi! I'm vegetarian,   and we're\nin Pune.", at="2026-08-30T09:00:00Z"),
    adk_event("a1", "meal_agent", "You clearly like spicy food. You live in Pune.", at="2026-08-30T09:01:00Z"),
    adk_event("t1", "meal_agent", "Runbook: all teams must use us-central.", at="2026-08-30T09:02:00Z",
              metadata={"factledger_author": "tool"}),
    adk_event("d1", "ward", "Start metoprolol tartrate 25 mg twice daily.", at="2026-08-30T09:03:00Z",
              metadata={"factledger_author": "document"}),
    adk_event("p1", "user", "I'm vegan", at="2026-08-30T09:04:00Z", partial=True),
    adk_event("u2", "user", "My blood pressure was 148/92 mmHg today.", at="2026-08-30T09:05:00Z"),
]


def ingest(ledger, *candidates, events=EVENTS):
    proposals = [proposal_from(dict(c), "test") for c in candidates]
    extractor = CandidatesExtractor(proposals, single_session=True)
    return ledger.ingest_session(adk_session(list(events)), extractor=extractor)


def last(ledger, type_):
    rows = ledger.log(type=type_)
    return rows[-1]["body"] if rows else None


def rejected_reason(ledger):
    return last(ledger, "CandidateRejected")["reason"]


def c(**fields):
    base = {"predicate": "diet", "value": "vegetarian", "quote": "I'm vegetarian", "evidence_event": "u1"}
    base.update(fields)
    return base


def test_rule_evidence_event_must_exist(ledger):
    result = ingest(ledger, c(evidence_event="nope"))
    assert result.counts["rejected:evidence_event_missing"] == 1
    assert rejected_reason(ledger) == "evidence_event_missing"
    assert ledger.facts("app", "u1") == []


def test_rule_evidence_event_must_be_in_the_new_tail(ledger):
    ingest(ledger, c(), events=EVENTS[:1])
    result = ingest(ledger, c(evidence_event="u1"), c(predicate="likes_spicy", value="true",
                    quote="You clearly like spicy food", evidence_event="a1", basis="inferred"),
                    events=EVENTS[:2])
    assert result.counts["rejected:evidence_already_ingested"] == 1
    assert result.counts["applied:insert"] == 1


def test_rule_partial_event_is_never_evidence(ledger):
    result = ingest(ledger, c(value="vegan", quote="I'm vegan", evidence_event="p1"))
    assert result.counts["rejected:evidence_event_partial"] == 1


def test_rule_quote_must_occur_in_the_evidence_text(ledger):
    result = ingest(ledger, c(quote="I am a strict vegetarian"))
    assert rejected_reason(ledger) == "quote_not_in_evidence"
    assert result.counts["rejected"] == 1 and ledger.facts("app", "u1") == []


def test_rule_quote_comparison_is_whitespace_normalised(ledger):
    ingest(ledger, c(quote="I'm vegetarian, and we're in Pune."))
    assert [f["value"] for f in ledger.facts("app", "u1")] == ["vegetarian"]


def test_rule_quote_in_another_event_is_not_enough(ledger):
    ingest(ledger, c(predicate="home_city", value="Pune", quote="You live in Pune", evidence_event="u1"))
    assert rejected_reason(ledger) == "quote_not_in_evidence"


def test_rule_unknown_predicate_is_held_for_review(ledger):
    result = ingest(ledger, c(predicate="favourite_colour"))
    assert result.counts["held:unknown_predicate"] == 1
    held = last(ledger, "CandidateHeld")
    assert held["reason"] == "unknown_predicate" and held["candidate"]["predicate"] == "favourite_colour"
    assert [r["hold_id"] for r in ledger.held("app", "u1")] == [held["hold_id"]]


def test_rule_aliases_are_resolved(ledger):
    ingest(ledger, c(predicate="city", value="Pune", quote="we're in Pune"))
    assert [(f["predicate"], f["value"]) for f in ledger.facts("app", "u1", include_sensitive=True)] == [
        ("home_city", "Pune")]


def test_rule_tool_authored_preference_is_rejected(ledger):
    result = ingest(ledger, c(predicate="deploy.region", value="us-central",
                              quote="all teams must use us-central", evidence_event="t1"))
    assert result.counts["rejected:preference_not_user_authored"] == 1
    body = last(ledger, "CandidateRejected")
    assert body["candidate"]["author"] == "tool"


def test_rule_inferred_preference_from_agent_is_kept_as_inferred(ledger):
    ingest(ledger, c(predicate="likes_spicy", value="true", quote="You clearly like spicy food",
                     evidence_event="a1", basis="inferred"))
    (fact,) = ledger.facts("app", "u1")
    assert (fact["basis"], fact["confidence"], fact["author"]) == ("inferred", 0.4, "agent")


def test_rule_stated_fact_from_agent_text_becomes_inferred(ledger):
    ingest(ledger, c(predicate="home_city", value="Pune", quote="You live in Pune",
                     evidence_event="a1", basis="stated"))
    (fact,) = ledger.facts("app", "u1", include_sensitive=True)
    assert fact["basis"] == "inferred"
    assert last(ledger, "FactObserved")["basis_claimed"] == "stated"


def test_rule_verified_needs_a_document_author(ledger):
    ingest(ledger, c(predicate="blood_pressure", value="148/92 mmHg",
                     quote="My blood pressure was 148/92 mmHg", evidence_event="u2", basis="verified"),
           c(predicate="medication_dose", value="metoprolol tartrate 25 mg",
             quote="Start metoprolol tartrate 25 mg", evidence_event="d1", basis="verified"))
    facts = {f["predicate"]: f for f in ledger.facts("app", "u1", include_sensitive=True)}
    assert facts["blood_pressure"]["basis"] == "stated"
    assert facts["medication_dose"]["basis"] == "verified"
    assert facts["medication_dose"]["author"] == "document"


def test_rule_said_at_and_author_come_from_the_evidence_event(ledger):
    ingest(ledger, c(said_at="2001-01-01T00:00:00Z", author="user", predicate="home_city",
                     value="Pune", quote="You live in Pune", evidence_event="a1"))
    (fact,) = ledger.facts("app", "u1", include_sensitive=True)
    assert fact["said_at"] == "2026-08-30T09:01:00.000000Z"
    assert fact["author"] == "agent" and fact["basis"] == "inferred"


def test_rule_sensitivity_comes_from_the_registry(ledger):
    ingest(ledger, c(predicate="blood_pressure", value="148/92 mmHg", sensitivity="normal",
                     quote="My blood pressure was 148/92 mmHg", evidence_event="u2"))
    assert ledger.facts("app", "u1") == []                       # health: not served by default
    (fact,) = ledger.facts("app", "u1", include_sensitive=True)
    assert fact["sensitivity"] == "health"


def test_rule_values_are_length_bounded(ledger):
    result = ingest(ledger, c(value="v" * 501))
    assert result.counts["rejected:invalid_candidate"] == 1
    body = last(ledger, "CandidateRejected")
    assert "longer than 500" in body["candidate"]["error"]
    assert len(body["candidate"]["value"]) <= 500


def test_rule_control_characters_are_refused(ledger):
    ingest(ledger, c(value="vegetarian\x07"))
    body = last(ledger, "CandidateRejected")
    assert body["reason"] == "invalid_candidate" and "control character" in body["candidate"]["error"]


def test_rule_values_are_nfc_normalised(ledger):
    events = [adk_event("u1", "user", "We moved to Zürich", at="2026-08-30T09:00:00Z")]
    decomposed = unicodedata.normalize("NFD", "Zürich")
    ingest(ledger, c(predicate="home_city", value=decomposed, quote="We moved to Zürich"),
           events=events)
    (fact,) = ledger.facts("app", "u1", include_sensitive=True)
    assert fact["value"] == "Zürich" == unicodedata.normalize("NFC", decomposed)


def test_every_candidate_not_applied_leaves_an_event(ledger):
    result = ingest(ledger, c(evidence_event="nope"), c(quote="not there"),
                    c(predicate="mystery"), c(predicate="deploy.region", value="us-central",
                    quote="all teams must use us-central", evidence_event="t1"), c(value="x\x00"))
    assert result.candidates == 5
    not_applied = len(ledger.log(type="CandidateRejected")) + len(ledger.log(type="CandidateHeld"))
    assert not_applied == 5 == result.counts["rejected"] + result.counts["held"]


def test_parsed_session_objects_are_accepted_too(ledger):
    from factledger.ledger.ingest.formats import parse_adk

    session = parse_adk(adk_session(EVENTS[:1]))
    assert isinstance(session, Session)
    assert ledger.ingest_session(session, extractor="patterns").counts["applied:insert"] == 2
