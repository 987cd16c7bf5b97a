"""Dedup by meaning, guarded: another wording of a `many` value reinforces it; a near miss
(another number, unit, negation, name or contrast word) stays its own fact; never across keys;
`one` keys merge by form alone."""

from __future__ import annotations

import json
from pathlib import Path

from factledger.ledger.semantic import dedup
from factledger.ledger.semantic import embedder as encoders
from tests.conftest import cand

PAIRS = Path(__file__).resolve().parents[2] / "bench" / "semantic_data" / "dedup_pairs.jsonl"


def test_no_near_miss_pair_merges(meaning):
    model = encoders.get()
    pairs = [json.loads(line) for line in PAIRS.read_text().splitlines() if line.strip()]
    near_misses = [p for p in pairs if not p["merge"]]
    assert len(near_misses) >= 25
    merged = [p for p in near_misses if dedup.merges("user", p["predicate"], p["a"], p["b"], model)[0]]
    assert merged == []
    same = [p for p in pairs if p["merge"]]
    assert sum(dedup.merges("user", p["predicate"], p["a"], p["b"], model)[0] for p in same) >= len(same) // 2


def test_guards_name_the_difference():
    assert dedup.guards("ibuprofen 25 mg", "ibuprofen 50 mg") == "number"
    assert dedup.guards("run 5 km", "run 5 miles") == "unit"
    assert dedup.guards("spicy food", "not spicy food") == "negation"
    assert dedup.guards("can travel", "can't travel") == "negation"
    assert dedup.guards("visiting Berlin", "visiting Paris") == "named_entity"
    assert dedup.guards("eu-west", "eu-central") == "contrast"
    assert dedup.guards("hiking in the mountains", "mountain hiking") is None
    assert dedup.same_form("Sao Paulo", "São Paulo") and dedup.same_form("new-york", "New York")
    assert not dedup.same_form("Berlin", "Paris")


def test_a_rewording_of_a_many_value_reinforces_it(ledger, meaning):
    first = ledger.observe(cand(predicate="allergy", value="peanuts", session="s1"))
    again = ledger.observe(cand(predicate="allergy", value="peanut", session="s2", event="e2"))
    assert again.decision == "reinforce" and again.rule == "same_meaning" and again.fact_id == first.fact_id
    other = ledger.observe(cand(predicate="allergy", value="walnuts", session="s3", event="e3"))
    assert other.decision == "insert"
    ledger.observe(cand(predicate="favorite_cuisine", value="Italian food", session="s4", event="e4"))
    near = ledger.observe(cand(predicate="favorite_cuisine", value="French food", session="s5", event="e5"))
    assert near.decision == "insert"
    values = sorted(f["value"] for f in ledger.facts("app", "u1", include_sensitive=True))
    assert "peanut" not in values and {"peanuts", "walnuts"} <= set(values)
    assert ledger.replay_differences() == []


def test_never_across_keys_and_one_keys_by_form_only(ledger, meaning):
    ledger.observe(cand(predicate="allergy", value="peanuts", session="s1"))
    other_key = ledger.observe(cand(predicate="disliked_ingredient", value="peanut", session="s2", event="e2"))
    assert other_key.decision == "insert"                         # another key: never merged
    ledger.observe(cand(predicate="home_city", value="São Paulo", session="s3", event="e3"))
    form = ledger.observe(cand(predicate="home_city", value="Sao Paulo", session="s4", event="e4"))
    assert form.decision == "reinforce" and form.rule == "same_form"
    moved = ledger.observe(cand(predicate="home_city", value="Rio de Janeiro", session="s5", event="e5"))
    assert moved.decision == "supersede"                          # a `one` key never merges by meaning


def test_without_meaning_a_rewording_is_its_own_fact(ledger, monkeypatch):
    monkeypatch.setenv("FACTLEDGER_EMBEDDER", "off")
    ledger.observe(cand(predicate="allergy", value="peanuts", session="s1"))
    again = ledger.observe(cand(predicate="allergy", value="peanut", session="s2", event="e2"))
    assert again.decision == "insert"
