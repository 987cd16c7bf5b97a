"""The access ledger through the library: a recall is a serve, recorded before the text returns,
listed by `served`, re-rendered identical by `served_show`, counted per fact."""

from __future__ import annotations

import pytest

from factledger.ledger.errors import LedgerError
from factledger.ledger.service import Ledger
from tests.conftest import cand


def _seed(ledger):
    ledger.observe(cand(value="vegetarian"))
    ledger.observe(cand(predicate="allergy", value="peanuts", event="e2", quote="I am allergic to peanuts"))
    ledger.observe(cand(predicate="home_city", value="Bengaluru", event="e3", quote="I live in Bengaluru"))


def test_a_recall_is_recorded_with_its_caller_and_facts(ledger):
    _seed(ledger)
    result = ledger.recall("app", "u1", "what do I eat", served_to="support-bot", clearance="health")
    assert result.served_seq is not None
    rows = ledger.served("app", "u1")
    assert len(rows) == 1
    row = rows[0]
    assert row["seq"] == result.served_seq
    assert row["caller"] == "support-bot" and row["surface"] == "library" and row["clearance"] == "health"
    assert row["fact_ids"] == [f["fact_id"] for f in result.selected]
    event = ledger.log(type="FactsServed")[0]
    body = event["body"]
    assert all(f["seqs"] for f in body["facts"])               # the events that established each value
    assert body.get("query") is None and len(body["query_sha256"]) == 64
    assert "vegetarian" not in str(body) and "peanuts" not in str(body)


def test_the_same_query_hashes_the_same_and_none_is_anonymous(ledger):
    _seed(ledger)
    ledger.recall("app", "u1", "diet")
    ledger.recall("app", "u1", "diet", served_to="b")
    ledger.recall("app", "u1", "city", served_to="b")
    rows = ledger.served("app", "u1")
    assert [r["caller"] for r in rows] == ["anonymous", "b", "b"]
    assert rows[0]["query_sha256"] == rows[1]["query_sha256"] != rows[2]["query_sha256"]
    assert [r["seq"] for r in ledger.served("app", "u1", by="b")] == [rows[1]["seq"], rows[2]["seq"]]


def test_keep_queries_opt_in(ledger, monkeypatch):
    _seed(ledger)
    monkeypatch.setenv("FACTLEDGER_KEEP_QUERIES", "1")
    ledger.recall("app", "u1", "diet")
    assert ledger.log(type="FactsServed")[0]["body"]["query"] == "diet"


def test_served_show_is_identical_and_counts(ledger, clock):
    _seed(ledger)
    first = ledger.recall("app", "u1", "", preload=True, served_to="bot", clearance="health")
    clock.tick(60)
    ledger.observe(cand(value="vegan", event="e9", session="s2", said_at="2026-09-30T10:00:00Z"))
    clock.tick(60)
    second = ledger.recall("app", "u1", "", preload=True, served_to="bot", clearance="health")
    assert first.text != second.text
    for result in (first, second):
        shown = ledger.serves.served_show(result.served_seq)
        assert shown["identical"] is True, shown.get("difference")
        assert shown["text"] == result.text
    counts = ledger.serves.served_counts("app", "u1")
    allergy = next(f["fact_id"] for f in first.selected if f["predicate"] == "allergy")
    assert counts[allergy] == 2
    assert [r["seq"] for r in ledger.served("app", "u1", fact=allergy)] == [first.served_seq, second.served_seq]


def test_a_read_only_open_records_nothing_unless_asked_then_fails(tmp_path, clock):
    path = tmp_path / "l.db"
    with Ledger(path, clock=clock, create=True) as ledger:
        _seed(ledger)
        head = ledger.head()
    with Ledger(path, clock=clock, read_only=True) as reader:
        assert reader.recall("app", "u1", "diet").served_seq is None
        assert reader.head() == head
        with pytest.raises(LedgerError, match="read-only"):
            reader.recall("app", "u1", "diet", served_to="bot")


def test_access_report_puts_health_first(ledger):
    _seed(ledger)
    ledger.recall("app", "u1", "", preload=True, served_to="nurse-bot", clearance="health")
    ledger.recall("app", "u1", "", preload=True, served_to="chat-bot")
    report = ledger.access_report("app", "u1")
    assert report["classes"][0]["class"] == "health" and report["classes"][0]["caller"] == "nurse-bot"
    assert [d["key"] for d in report["classes"][0]["disclosures"]] == ["user / allergy"]
    assert "chat-bot" in report["callers"]
    assert all(g["caller"] != "chat-bot" for g in report["classes"] if g["class"] == "health")
