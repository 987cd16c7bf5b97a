"""An event's recency weight is its kind's (`[kinds.event] recency_weight`, 0.05), not the call's
default 0.3: an event is never superseded, so its age says when it happened, not that it may be
stale.  Found on LoCoMo (docs/semantic.md, "LoCoMo"): at 0.3 a conversation's first-month events
lost to its last month's whatever the question asked."""

from __future__ import annotations

import pytest

from factledger.ledger import LedgerError, make_candidate
from factledger.ledger.registry.kinds import EVENT_RECENCY_WEIGHT
from factledger.ledger.registry.predicates import parse_registry
from tests.conftest import cand

QUERY = "when did I go hiking in the Alps with my sister"


def _event(value: str, said_at: str, session: str):
    return make_candidate(app="app", user="u1", kind="event", predicate="trip.taken", value=value,
                          quote=value, session=session, evidence_event=f"{session}-e", said_at=said_at)


@pytest.fixture
def trips(ledger, clock):
    clock.set("2026-11-01T00:00:00Z")
    ledger.observe_many([
        _event("I went hiking in the Alps with my sister", "2026-01-10T00:00:00Z", "s1"),
        _event("I went hiking with my sister again", "2026-10-30T00:00:00Z", "s2"),
        cand(predicate="favorite_cuisine", value="thai", quote="I love thai food", session="s3",
             said_at="2026-01-10T00:00:00Z"),
        cand(predicate="favorite_cuisine", value="korean", quote="I love korean food", session="s4",
             said_at="2026-10-30T00:00:00Z")])
    return ledger


def test_an_older_more_relevant_event_outranks_a_recent_one(trips):
    served = trips.recall("app", "u1", QUERY, mode="lexical")
    assert [f["value"] for f in served.selected][:2] == ["I went hiking in the Alps with my sister",
                                                        "I went hiking with my sister again"]
    old, new = served.selected[0], served.selected[1]
    w = EVENT_RECENCY_WEIGHT
    assert old["score"] == pytest.approx((1 - w) * old["relevance"] + w * old["recency"], abs=1e-4)
    # at the call's default weight the recent one would have won: the kind's weight decided it
    assert (0.7 * old["relevance"] + 0.3 * old["recency"]) < (0.7 * new["relevance"] + 0.3 * new["recency"])


def test_a_weight_the_caller_names_applies_to_every_kind(trips):
    served = trips.recall("app", "u1", QUERY, mode="lexical", recency_weight=0.3)
    assert served.selected[0]["value"] == "I went hiking with my sister again"


def test_facts_of_other_kinds_keep_the_calls_weight(trips):
    served = trips.recall("app", "u1", "thai food", mode="lexical", recency_weight=0.9)
    assert served.selected[0]["value"] == "korean"           # recency wins at 0.9, as before
    default = trips.recall("app", "u1", "food", mode="lexical")
    korean, thai = default.selected[0], default.selected[1]
    assert (korean["value"], thai["value"]) == ("korean", "thai")
    assert korean["score"] == pytest.approx(0.7 * korean["relevance"] + 0.3 * korean["recency"], abs=1e-4)


def test_a_registry_sets_a_kinds_recency_weight_from_0_to_1():
    base = b'[predicates.diet]\ncardinality = "one"\n'
    registry = parse_registry(base + b'[kinds.event]\nrecency_weight = 0.2\n')
    assert registry.kinds["event"].recency_weight == 0.2
    assert registry.kinds["event"].dated                     # the built-in kind's other rules stay
    assert parse_registry(base).kinds["event"].recency_weight == EVENT_RECENCY_WEIGHT
    assert parse_registry(base).kinds["fact"].recency_weight is None
    for bad in (b"2", b"-0.1", b"true", b'"high"'):
        with pytest.raises(LedgerError, match="recency_weight"):
            parse_registry(base + b"[kinds.event]\nrecency_weight = " + bad + b"\n")
