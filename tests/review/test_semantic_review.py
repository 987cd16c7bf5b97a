"""Review help: closest registry predicates for a held candidate; cross-key contradictions
(declared in the registry, or inferred by meaning) flagged in the review queue."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from factledger.ledger.errors import LedgerError
from factledger.ledger.registry.predicates import parse_registry
from tests.conftest import cand

CLI = str(Path(sys.executable).parent / "factledger")


def test_a_held_candidate_gets_the_closest_predicates(ledger, meaning):
    held = ledger.observe(cand(predicate="residence_town", value="Pune", quote="we live in Pune"))
    assert held.decision == "hold"
    ledger.observe(cand(predicate="food_intolerance", value="lactose", quote="lactose: milk makes me ill",
                        session="s2", event="e2"))
    rows = {r["predicate"]: r["suggestions"] for r in ledger.held("app", "u1")}
    assert rows["residence_town"][0] == "home_city"
    assert "allergy" in rows["food_intolerance"]
    assert all(len(s) <= 3 for s in rows.values())


def test_suggestions_without_meaning_share_a_word(ledger, monkeypatch):
    monkeypatch.setenv("FACTLEDGER_EMBEDDER", "off")
    ledger.observe(cand(predicate="city_of_home", value="Pune", quote="Pune"))
    assert ledger.held("app", "u1")[0]["suggestions"][0] == "home_city"


def fill_regions(ledger):
    common = dict(app="ops", user="team")
    ledger.observe(cand(predicate="deploy.region", value="eu-west", quote="we deploy to eu-west", **common))
    ledger.observe(cand(predicate="deploy.avoided_region", value="us-east", quote="never use us-east",
                        session="s2", event="e2", **common))
    ledger.observe(cand(predicate="deploy.region", value="us-east", quote="we moved everything to us-east",
                        session="s3", event="e3", said_at="2026-09-01T00:00:00Z", **common))


def test_the_deployment_contradiction_is_flagged(ledger, meaning):
    fill_regions(ledger)
    found = ledger.contradictions("ops", "team")
    assert len(found) == 1
    pair = found[0]
    assert (pair["predicate"], pair["value"], pair["other_predicate"], pair["other_value"]) == (
        "deploy.region", "us-east", "deploy.avoided_region", "us-east")
    assert isinstance(pair["semantic_hint"], float) and pair["declared"] is True
    assert ledger.contradictions("ops", "someone-else") == []


def test_cli_lists_contradictions_and_suggestions(tmp_path, meaning):
    db = str(tmp_path / "l.db")
    from factledger.ledger import Ledger

    with Ledger(db, create=True) as ledger:
        fill_regions(ledger)
        ledger.observe(cand(app="ops", user="team", predicate="residence_town", value="Pune",
                            quote="we live in Pune", session="s9", event="e9"))
    out = subprocess.run([CLI, "--db", db, "review", "--contradictions", "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["other_predicate"] for r in rows] == ["deploy.avoided_region"]
    out = subprocess.run([CLI, "--db", db, "review", "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[0]["suggestions"].startswith("home_city")


def test_registry_contradicts_is_checked():
    raw = b'[predicates.a]\ncardinality = "one"\ncontradicts = ["b"]\n[predicates.b]\ncardinality = "many"\n'
    assert parse_registry(raw).predicates["a"].contradicts == ("b",)
    with pytest.raises(LedgerError, match="contradicts"):
        parse_registry(b'[predicates.a]\ncardinality = "one"\ncontradicts = "b"\n')


SNACKS = (b'[predicates.snack]\ncardinality = "many"\ndescription = "A snack the user likes to eat"\n'
          b'[predicates.avoided_snack]\ncardinality = "many"\ndescription = "A snack the user must not eat"\n'
          b'[predicates.drink]\ncardinality = "many"\ndescription = "A drink the user likes"\n')


@pytest.mark.parametrize("with_meaning", [True, False])
def test_an_undeclared_contradiction_is_inferred(tmp_path, monkeypatch, with_meaning):
    from factledger.ledger import Ledger
    from factledger.ledger.review import opposites

    monkeypatch.setenv("FACTLEDGER_EMBEDDER", "" if with_meaning else "off")
    registry = parse_registry(SNACKS)
    pairs = opposites.inferred(registry)
    assert list(pairs) == [("avoided_snack", "snack")]                    # drink is not paired
    assert (pairs[("avoided_snack", "snack")] >= opposites.HINT_THRESHOLD) if with_meaning else (
        pairs[("avoided_snack", "snack")] is None)
    with Ledger(tmp_path / "l.db", registry=registry, create=True) as ledger:
        ledger.observe(cand(predicate="snack", value="peanuts", quote="I snack on peanuts"))
        ledger.observe(cand(predicate="avoided_snack", value="Peanuts", quote="no peanuts for me",
                            session="s2", event="e2"))
        ledger.observe(cand(predicate="avoided_snack", value="crisps", quote="no crisps", session="s3", event="e3"))
        ledger.observe(cand(predicate="drink", value="peanuts", quote="odd, but yes, peanuts", session="s4", event="e4"))
        found = ledger.contradictions("app", "u1")
    assert [(f["predicate"], f["value"], f["other_predicate"], f["declared"]) for f in found] == [
        ("avoided_snack", "Peanuts", "snack", False)]
    assert "inferred" in found[0]["reason"]
    assert isinstance(found[0]["semantic_hint"], float) == with_meaning


def test_a_declared_pair_is_not_inferred_twice(meaning):
    from factledger.ledger.registry.predicates import load_registry
    from factledger.ledger.review import opposites

    assert opposites.inferred(load_registry(None)) == {}     # avoided_region is declared already


def test_a_suggestion_fits_the_value_shape_of_the_predicate(ledger, monkeypatch):
    """`shoe_size = 39` shares a number's shape with household_size but not its rules' reading:
    it is never offered as household_size; a count said as the household's rules say it is."""
    from factledger.ledger.review.suggest import fits

    household = ledger.registry.resolve("household_size")
    assert not fits(household, "39", "my shoe size is 39")
    assert fits(household, "4", "there are 4 of us")
    cuisine = ledger.registry.resolve("favorite_cuisine")
    assert not fits(cuisine, "teal", "my favourite colour is teal") and fits(cuisine, "thai", "thai please")
    monkeypatch.setenv("FACTLEDGER_EMBEDDER", "off")
    ledger.observe(cand(predicate="shoe_size", value="39", quote="my shoe size is 39"))
    assert "household_size" not in ledger.held("app", "u1")[0]["suggestions"]
