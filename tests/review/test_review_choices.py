"""A reviewer's accept applies the target predicate's rules and asks before it reclassifies (issue 29).

The value of a held candidate accepted under a predicate with a closed vocabulary must be one of
its words (a synonym or plural gives the canonical word; "teal" is no cuisine); a target of
another sensitivity than the candidate's is refused until its class is confirmed by name; and
every confirmation names the predicate, the value, whose it is and the seqs written.  Refusals
write nothing.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger, LedgerError
from factledger.ledger.errors import SensitivityUnconfirmed
from factledger.ledger.registry.predicates import load_registry
from factledger.ledger.review.queue import held_sensitivity, in_vocabulary
from tests.conftest import cand

REGISTRY = load_registry(None)


def hold(ledger: Ledger, predicate: str, value: str, event: str = "e9") -> str:
    outcome = ledger.observe(cand(predicate=predicate, value=value, quote=f"well, {value}", session="s2",
                                  event=event, said_at="2026-09-01T00:00:00Z"))
    assert outcome.decision == "hold", outcome
    return next(h["hold_id"] for h in ledger.held() if h["value"] == value)


def test_a_closed_vocabulary_gives_its_canonical_word_and_refuses_any_other():
    cuisine = REGISTRY.resolve("favorite_cuisine")
    assert in_vocabulary(cuisine, "Thai") == "thai"
    assert in_vocabulary(cuisine, "barbecue") == "bbq"                      # a synonym
    assert in_vocabulary(REGISTRY.resolve("pet"), "dogs") == "dog"           # a plural
    with pytest.raises(LedgerError, match="'teal' is not in favorite_cuisine's vocabulary"):
        in_vocabulary(cuisine, "teal")
    assert in_vocabulary(REGISTRY.resolve("home_city"), "Lisbon") == "Lisbon"   # no closed list


def test_an_unknown_predicate_is_unclassified_until_placed():
    assert held_sensitivity(REGISTRY, {"predicate": "shoe_size"}) == "normal"
    assert held_sensitivity(REGISTRY, {"predicate": "city"}) == "personal"         # an alias of home_city


def test_accepting_teal_as_a_cuisine_is_refused_and_writes_nothing(tmp_path):
    with Ledger(tmp_path / "l.db", create=True) as ledger:
        item = hold(ledger, "fav_food", "teal")
        head = ledger.head()
        with pytest.raises(LedgerError) as refused:
            ledger.review_accept(item, "favorite_cuisine", by="ana", reason="a food")
        assert "'teal' is not in favorite_cuisine's vocabulary" in str(refused.value)
        assert "reject it" in str(refused.value)
        assert ledger.head() == head and [h["hold_id"] for h in ledger.held()] == [item]
        synonym = hold(ledger, "fav_food", "barbecue", event="e10")
        outcome = ledger.review_accept(synonym, "favorite_cuisine", by="ana", reason="a food")
        (fact,) = ledger.facts("app", "u1", predicate="favorite_cuisine")
        assert fact["value"] == "bbq" and outcome.fact_id == fact["fact_id"]
        assert "favorite_cuisine = bbq for app/u1" in outcome.summary


def test_a_target_of_another_sensitivity_needs_its_class_confirmed(tmp_path):
    with Ledger(tmp_path / "l.db", create=True) as ledger:
        item = hold(ledger, "shoe_size", "39")
        head = ledger.head()
        with pytest.raises(SensitivityUnconfirmed) as refused:
            ledger.review_accept(item, "blood_pressure", by="ana", reason="closest")
        assert "makes it health data" in str(refused.value) and "shoe_size is not in the registry" in str(refused.value)
        assert (refused.value.predicate, refused.value.sensitivity, refused.value.was) == ("blood_pressure", "health", "normal")
        with pytest.raises(SensitivityUnconfirmed):                          # the wrong class is no confirmation
            ledger.review_accept(item, "blood_pressure", by="ana", reason="closest", confirm_sensitivity="personal")
        assert ledger.head() == head
        outcome = ledger.review_accept(item, "blood_pressure", by="ana", reason="closest",
                                       confirm_sensitivity="health")
        assert outcome.decision == "insert"
        assert outcome.summary.startswith(f"accepted blood_pressure = 39 for app/u1 (held as shoe_size, hold {item})")
        assert outcome.summary.endswith(f"seq {outcome.seqs[0]}")
        same = hold(ledger, "shoe_colour", "vegan", event="e10")            # normal to normal: no question
        assert ledger.review_accept(same, "diet", by="ana", reason="a diet").decision == "insert"


def invoke(db, *args: str):
    return CliRunner(env={"FACTLEDGER_NOW": "2026-11-01T00:00:00Z"}).invoke(cli, ["--db", str(db), *args])


def test_the_cli_names_the_class_to_confirm_and_every_confirmation_names_the_value(tmp_path):
    db = tmp_path / "l.db"
    with Ledger(db, create=True) as ledger:
        shoe, teal = hold(ledger, "shoe_size", "39"), hold(ledger, "fav_food", "teal", event="e10")
        ledger.observe(cand(predicate="household_size", value="2", quote="there are 2 of us", session="s3",
                            event="e11", said_at="2026-09-02T00:00:00Z"))
        ledger.observe(cand(predicate="household_size", value="4", quote="orders for 4", session="s4",
                            event="e12", said_at="2026-09-03T00:00:00Z", author="agent"))
        challenger = next(f for f in ledger.facts("app", "u1") if f["status"] == "disputed")
    refused = invoke(db, "review", "accept", shoe, "--as", "blood_pressure", "--by", "ana")
    assert refused.exit_code == 1 and refused.stderr.startswith("Error: ")
    assert "--confirm-sensitivity health" in refused.stderr
    vocabulary = invoke(db, "review", "accept", teal, "--as", "cuisine", "--by", "ana")
    assert vocabulary.exit_code == 1 and "'teal' is not in favorite_cuisine's vocabulary" in vocabulary.stderr

    accepted = invoke(db, "review", "accept", shoe, "--as", "blood_pressure", "--confirm-sensitivity", "health",
                      "--by", "ana", "-t")
    assert accepted.exit_code == 0, accepted.output
    assert "accepted blood_pressure = 39 for app/u1" in accepted.stdout and "seq " in accepted.stdout
    rejected = invoke(db, "review", "reject", teal, "--reason", "a colour", "--by", "ana", "-t")
    assert rejected.exit_code == 0, rejected.output
    assert f"rejected fav_food = teal for app/u1 (hold {teal}): CandidateRejected at seq" in rejected.stdout
    resolved = invoke(db, "resolve", challenger["fact_id"], "--reject", "--by", "ana", "--reason", "gifts", "--json")
    summary = json.loads(resolved.stdout)["summary"]
    assert summary.startswith(f"rejected household_size = 4 for app/u1 (fact {challenger['fact_id']}): "
                              "2 is the current value; DisputeResolved at seq")
