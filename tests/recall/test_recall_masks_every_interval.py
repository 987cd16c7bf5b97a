"""Recall masks a value above the clearance in every quote it serves, also when that value's fact
is no longer open (a health value once said is still a health value)."""

from __future__ import annotations

import orjson

from factledger.ledger import Ledger
from tests.conftest import MovableClock, cand

QUOTE = "I'm vegan, and I am allergic to peanuts"


def test_a_retracted_health_value_is_masked_in_the_quote_recall_serves(tmp_path):
    clock = MovableClock("2026-09-01T00:00:00Z")
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        ledger.observe(cand(predicate="diet", value="vegan", quote=QUOTE, event="e1"))
        ledger.observe(cand(predicate="allergy", value="peanuts", quote=QUOTE, event="e1"))
        ledger.observe(cand(predicate="allergy", value="peanuts", negated=True, session="s2", event="e2",
                            said_at="2026-08-31T10:00:00Z", quote="I am not allergic to peanuts anymore"))
        result = ledger.recall("app", "u1", "what do I eat?", clearance="personal", explain=True)
        full = ledger.recall("app", "u1", "what do I eat?", clearance="health", explain=True)
    served = [f for f in result.selected if f["predicate"] == "diet"]
    assert served and "[withheld]" in served[0]["quote"]
    shown = orjson.dumps([result.text, result.selected, result.candidates]).decode()
    assert "peanuts" not in shown
    assert "peanuts" in orjson.dumps(full.selected).decode()
