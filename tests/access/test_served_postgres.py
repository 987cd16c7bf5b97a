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
        assert ledger.serves.served_show(result.served_seq)["identical"] is True
        assert ledger.verify()["ok"]
        receipt = ledger.forget("app", "u1", reason="request")
        assert receipt["counts"]["serve_records"] == 1
        assert [r["caller"] for r in ledger.served("app", "u1")] == ["support-bot"]
        assert ledger.verify()["ok"]
    with Ledger(location, clock=clock, read_only=True) as reader:
        with pytest.raises(LedgerError, match="read-only"):
            reader.recall("app", "u1", "allergy", served_to="bot")


def test_a_domain_forget_and_serve_retention_on_postgres(postgres, clock):
    """What tests/access/test_served_forget.py and test_served_retention.py check on SQLite, once
    here: a `_domain` fact's serve records in users' partitions lose their hash; expired records go."""
    location = postgres.location("access_domain_retention")
    with Ledger(location, clock=clock, create=True) as ledger:
        clock.set("2026-09-01T00:00:00Z")
        ledger.observe_many([
            cand(app="ops", user="_domain", predicate="deploy.region", value="north-77",
                 quote="we deploy to north-77", session="d"),
            cand(app="ops", user="alice", predicate="preferred_language", value="Python",
                 quote="I write Python", session="a")])
        old = ledger.recall("ops", "alice", "", preload=True, served_to="bot")
        fact = next(f["fact_id"] for f in ledger.facts("ops", "_domain"))
        receipt = ledger.forget("ops", "_domain", fact=fact, reason="request")
        assert receipt["counts"]["serve_records"] == 1
        [copy] = ledger.served("ops", "alice")
        assert copy["restates"] == old.served_seq and copy["text_sha256"] is None and fact in copy["fact_ids"]
        assert ledger.verify()["ok"]
        clock.set("2026-11-01T00:00:00Z")
        new = ledger.recall("ops", "alice", "", preload=True, served_to="bot")
        expired = ledger.retain(apply=True, serves_older_than=30)
        assert expired["counts"]["serve_records_expired"] == 1
        assert [r["seq"] for r in ledger.served("ops", "alice")] == [new.served_seq]
        assert ledger.verify()["ok"]


def test_predicate_retention_on_postgres(postgres, clock):
    """`retain` chooses its partitions with one pass over the log for every policy (a VALUES list
    joined to the events): on PostgreSQL too, an old support ticket's partition is chosen and the
    fact goes, a recent one's stays."""
    location = postgres.location("access_predicate_retention")
    with Ledger(location, clock=clock, create=True) as ledger:
        clock.set("2026-11-01T00:00:00Z")
        ledger.observe(cand(user="old", predicate="support_ticket", value="T-1", session="s1",
                            said_at="2026-05-01T00:00:00Z"))
        ledger.observe(cand(user="new", predicate="support_ticket", value="T-2", session="s2",
                            said_at="2026-10-20T00:00:00Z"))
        assert ledger.retain()["partitions"] == 1
        ledger.retain(apply=True)
        assert [f["value"] for f in ledger.facts("app", "old")] == []
        assert [f["value"] for f in ledger.facts("app", "new")] == ["T-2"]
        assert ledger.verify()["ok"]
