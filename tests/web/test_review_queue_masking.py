"""The review queue (which a `--public` visitor may open) masks, in held and disputed quotes, the
values the viewer is not cleared for, as the user page does."""

from __future__ import annotations

import orjson

from factledger.ledger import Ledger
from factledger.web.actors import Actor
from factledger.web.reading import review_items
from tests.conftest import cand


def test_a_dispute_quote_holds_no_health_value_for_a_normal_viewer(tmp_path):
    with Ledger(tmp_path / "l.db", create=True) as ledger:
        ledger.observe(cand(predicate="allergy", value="peanuts", quote="I am allergic to peanuts",
                            session="s1", event="e1"))
        ledger.observe(cand(predicate="household_size", value="2", quote="there are 2 of us",
                            session="s2", event="e2", said_at="2026-09-02T00:00:00Z"))
        ledger.observe(cand(predicate="household_size", value="4", quote="orders for 4, given the peanuts thing",
                            session="s3", event="e3", said_at="2026-09-03T00:00:00Z", author="agent"))
        normal = review_items(ledger, Actor("anonymous", "normal", "viewer"))
        health = review_items(ledger, Actor("dpo", "health", "reviewer"))
    assert normal["disputes"], "the dispute is normal: a normal viewer sees it"
    shown = orjson.dumps(normal).decode()
    assert "peanuts" not in shown and "[withheld]" in shown
    assert "peanuts" in orjson.dumps(health).decode()
