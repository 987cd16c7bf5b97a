"""The access ledger on PostgreSQL: a serve is recorded, listed, shown identical, verified, and a
forget leaves its counts; a standby open (read-only) refuses to record rather than serve unrecorded."""

from __future__ import annotations

import pytest

from factledger.ledger import Ledger
from factledger.ledger.errors import LedgerError
from tests.conftest import cand


def test_serves_on_postgres(postgres, clock):
    location = postgres.location("access_serves")
    with Ledger(location, clock=clock, create=True) as ledger:
        ledger.observe(cand(predicate="allergy", value="peanuts", quote="I am allergic to peanuts"))
        result = ledger.recall("app", "u1", "allergy", served_to="support-bot", clearance="health")
        assert result.selected
        rows = ledger.served("app", "u1")
        assert [(r["caller"], r["fact_ids"]) for r in rows] == [("support-bot", [result.selected[0]["fact_id"]])]
        assert ledger.served_show(result.served_seq)["identical"] is True
        assert ledger.verify()["ok"]
        receipt = ledger.forget("app", "u1", reason="request")
        assert receipt["counts"]["serve_records"] == 1
        assert [r["caller"] for r in ledger.served("app", "u1")] == ["support-bot"]
        assert ledger.verify()["ok"]
    with Ledger(location, clock=clock, read_only=True) as reader:
        with pytest.raises(LedgerError, match="read-only"):
            reader.recall("app", "u1", "allergy", served_to="bot")
