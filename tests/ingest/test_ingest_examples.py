"""The three bundled conversations give the expected final facts, with `patterns` and `candidates`."""

from __future__ import annotations

import pytest

from factledger.ledger.ingest.batch import ingest_paths
from tests.conftest import values
from tests.ingest.helpers import CANDIDATES, SESSIONS

EXPECTED = {
    "meal-kit": ("mealkit", "priya", {
        ("user", "diet"): [("pescatarian", "current", "stated")],
        ("user", "home_city"): [("Bengaluru", "current", "stated")],
        ("user", "likes_spicy"): [("true", "current", "inferred")],
    }),
    "deployment": ("deploybot", "team-atlas", {
        ("user", "deploy.region"): [("us-east", "current", "stated")],
        # the documented conflict: a region the team said it avoids is now its region
        ("user", "deploy.avoided_region"): [("us-east", "current", "stated")],
    }),
    "clinical": ("clinic", "arun", {
        ("user", "medication_dose"): [("metoprolol tartrate 50 mg", "current", "verified")],
        ("user", "blood_pressure"): [("148/92 mmHg", "current", "stated"),
                                     ("148/92 mmHg", "current", "stated")],
    }),
}


@pytest.mark.parametrize("extractor", ["patterns", "candidates"])
@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_example_final_facts(ledger, example, extractor):
    app, user, expected = EXPECTED[example]
    candidates = str(CANDIDATES / f"{example}.jsonl") if extractor == "candidates" else None
    summary = ingest_paths(ledger._work, [str(SESSIONS / example)], app, user, extractor,
                           candidates=candidates)
    assert not summary.failed and summary.unmatched_candidates == 0
    assert values(ledger, app, user) == expected
    assert ledger.replay_differences() == []


@pytest.mark.parametrize("extractor", ["patterns", "candidates"])
def test_runbook_preference_is_rejected_and_says_why(ledger, extractor):
    candidates = str(CANDIDATES / "deployment.jsonl") if extractor == "candidates" else None
    summary = ingest_paths(ledger._work, [str(SESSIONS / "deployment")], None, None, extractor,
                           candidates=candidates).as_dict()
    assert summary["rejected"] == {"preference_not_user_authored": 1}
    (body,) = [e["body"] for e in ledger.log(type="CandidateRejected")]
    assert body["candidate"]["value"] == "us-central" and body["candidate"]["author"] == "tool"


def test_meal_kit_likes_spicy_is_inferred_at_0_4(ledger):
    ingest_paths(ledger._work, [str(SESSIONS / "meal-kit")], None, None, "patterns")
    (fact,) = ledger.facts("mealkit", "priya", predicate="likes_spicy")
    assert (fact["basis"], fact["confidence"], fact["author"]) == ("inferred", 0.4, "agent")


def test_clinical_readings_keep_their_dates_and_the_discharge_dose_is_history(ledger):
    ingest_paths(ledger._work, [str(SESSIONS / "clinical")], None, None, "patterns")
    readings = ledger.facts("clinic", "arun", predicate="blood_pressure", include_sensitive=True)
    assert sorted(r["effective_date"] for r in readings) == ["2026-07-10", "2026-07-17"]
    old = [h for h in ledger.history("clinic", "arun", predicate="medication_dose")
           if h["value"] == "metoprolol tartrate 25 mg"]
    assert old[-1]["state"] == "superseded" and old[-1]["author"] == "document"


def test_sessions_given_out_of_order_are_ingested_oldest_first(ledger):
    files = sorted((SESSIONS / "meal-kit").glob("*.json"), reverse=True)
    ingest_paths(ledger._work, [str(f) for f in files], None, None, "patterns")
    assert values(ledger, "mealkit", "priya") == EXPECTED["meal-kit"][2]
