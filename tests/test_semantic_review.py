"""Review help: closest registry predicates for a held candidate; registry-declared cross-key
contradictions flagged in the review queue."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from factledger.ledger.errors import LedgerError
from factledger.ledger.registry import parse_registry
from tests.conftest import cand

CLI = str(Path(sys.executable).parent / "factledger")


def test_a_held_candidate_gets_the_closest_predicates(ledger, meaning):
    held = ledger.observe(cand(predicate="residence_town", value="Pune", quote="we live in Pune"))
    assert held.decision == "hold"
    ledger.observe(cand(predicate="food_intolerance", value="lactose", quote="milk makes me ill",
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
    assert isinstance(pair["semantic_hint"], float)
    assert ledger.contradictions("ops", "someone-else") == []


def test_cli_lists_contradictions_and_suggestions(tmp_path, meaning):
    db = str(tmp_path / "l.db")
    from factledger.ledger import Ledger

    with Ledger(db) as ledger:
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
