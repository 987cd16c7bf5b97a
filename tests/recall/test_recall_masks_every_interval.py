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



def test_the_values_kept_for_masking_follow_the_log(tmp_path):
    """The values recall masks are kept with its scope for the log's head: a health value said
    after one recall is masked by the next (a new head), and a second process's write too."""
    clock = MovableClock("2026-09-01T00:00:00Z")
    path = tmp_path / "l.db"

    def shown(result) -> str:
        return orjson.dumps([result.text, result.selected, result.candidates]).decode()

    with Ledger(path, clock=clock, create=True) as ledger:
        ledger.observe(cand(predicate="diet", value="vegan", quote="I'm vegan", event="e1"))
        assert "[withheld]" not in shown(ledger.recall("app", "u1", "where do I live?", clearance="personal",
                                                       explain=True))
        said = "I live in Pune, and I am allergic to peanuts"
        ledger.observe(cand(predicate="allergy", value="peanuts", quote=said, session="s2", event="e2"))
        ledger.observe(cand(predicate="home_city", value="Pune", quote=said, session="s2", event="e2"))
        second = shown(ledger.recall("app", "u1", "where do I live?", clearance="personal", explain=True))
        assert "peanuts" not in second and "[withheld]" in second
        with Ledger(path, clock=clock) as other:        # another writer: this ledger sees a new head
            told = "I'm on the pro plan, and I am allergic to sesame"
            other.observe(cand(predicate="allergy", value="sesame", quote=told, session="s3", event="e3"))
            other.observe(cand(predicate="plan", value="pro", quote=told, session="s3", event="e3"))
        third = shown(ledger.recall("app", "u1", "which plan am I on?", clearance="personal", explain=True))
        assert "sesame" not in third and "peanuts" not in third and "pro plan" in third
