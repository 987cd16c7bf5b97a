"""Forgetting covers the access ledger: after a forget, the serve records of the forgotten facts
keep their fact ids and counts but no text hash, query hash or query, and no byte of the
forgotten data is in the file; the receipt counts the serve records it touched."""

from __future__ import annotations

from pathlib import Path

from factledger.ledger.service import Ledger
from tests.conftest import cand

USER = "zqa-5e1d-subject"
VALUE = "Zqxallergenium"
QUOTE = "I am allergic to Zqxallergenium"


def scan(db: Path, markers) -> dict[str, list[str]]:
    """marker -> the files (db, -wal, -shm) whose raw bytes contain it (case-insensitive)."""
    hits: dict[str, list[str]] = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        path = Path(str(db) + suffix)
        if path.exists():
            data = path.read_bytes().lower()
            hits.update({m: hits.get(m, []) + [path.name] for m in markers if m.lower().encode() in data})
    return hits


def _fill(ledger):
    ledger.observe(cand(user=USER, predicate="allergy", value=VALUE, quote=QUOTE))
    ledger.observe(cand(user=USER, value="vegetarian", event="e2"))


def test_forget_user_keeps_counts_and_no_byte(tmp_path, clock, monkeypatch):
    monkeypatch.setenv("FACTLEDGER_KEEP_QUERIES", "1")        # the query in clear names the value
    db = tmp_path / "l.db"
    with Ledger(db, clock=clock, create=True) as ledger:
        _fill(ledger)
        first = ledger.recall("app", USER, f"{VALUE} allergy", served_to="support-bot", clearance="health")
        ledger.recall("app", USER, "", preload=True, served_to="nurse", clearance="health")
        assert first.selected and scan(db, [VALUE])          # the scan finds it before
        ids = [r["fact_ids"] for r in ledger.served("app", USER)]
        receipt = ledger.forget("app", USER, reason="request", requested_by="dpo")
        assert receipt["counts"]["serve_records"] == 2
        assert ledger.verify()["ok"]
        after = ledger.served("app", USER)
        assert [r["fact_ids"] for r in after] == ids
        assert [r["caller"] for r in after] == ["support-bot", "nurse"]
        assert all(r["text_sha256"] is None and r["query_sha256"] is None for r in after)
        assert all(r["user"].startswith("erased:") for r in after)
    assert scan(db, [VALUE, QUOTE, USER]) == {}


def test_forget_fact_masks_only_the_serves_of_it(ledger):
    _fill(ledger)
    allergy = ledger.recall("app", USER, "", preload=True, served_to="a", clearance="health")
    only_diet = ledger.recall("app", USER, "", preload=True, served_to="b")       # allergy withheld
    fact = next(f["fact_id"] for f in allergy.selected if f["predicate"] == "allergy")
    assert fact not in ledger.served("app", USER)[1]["fact_ids"]
    receipt = ledger.forget("app", USER, fact=fact, reason="request", requested_by="dpo")
    assert receipt["counts"]["serve_records"] == 1
    assert ledger.verify()["ok"]
    rows = ledger.served("app", USER)
    assert [r["caller"] for r in rows] == ["b", "a"]             # the copy is recorded after the forget
    assert rows[0]["seq"] == only_diet.served_seq and rows[0]["text_sha256"] is not None
    assert rows[1]["restates"] == allergy.served_seq and rows[1]["text_sha256"] is None
    assert fact in rows[1]["fact_ids"]
    assert ledger.serves.served_counts("app", USER)[fact] == 1
    assert ledger.serves.served_show(only_diet.served_seq)["identical"] is True
    shown = ledger.serves.served_show(rows[1]["seq"])
    assert shown["identical"] is False and "erased" in shown["difference"]


DOMAIN_VALUE = "zqxregion-north-77"


def test_forgetting_a_domain_fact_scrubs_every_users_serve_of_it(tmp_path, clock):
    """A `_domain` fact is served in every partition that reads the domain: forgetting it takes
    the text hash (a test of a guess at the value) from each of those records, in whichever
    partition, and keeps their ids and counts; a serve that did not hand it out keeps its hash."""
    db = tmp_path / "l.db"
    with Ledger(db, clock=clock, create=True) as ledger:
        ledger.observe_many([
            cand(app="ops", user="_domain", predicate="deploy.region", value=DOMAIN_VALUE,
                 quote=f"we deploy to {DOMAIN_VALUE}", session="d"),
            cand(app="ops", user="alice", predicate="preferred_language", value="Python",
                 quote="I write Python", session="a"),
            cand(app="ops", user="bob", predicate="preferred_language", value="Rust",
                 quote="I write Rust", session="b")])
        for user in ("alice", "bob"):
            assert DOMAIN_VALUE in ledger.recall("ops", user, "", preload=True, served_to="bot").text
        alone = ledger.recall("ops", "alice", "", preload=True, served_to="solo", domain=False)
        fact = next(f["fact_id"] for f in ledger.facts("ops", "_domain"))
        before = {u: ledger.served("ops", u) for u in ("alice", "bob")}
        assert all(fact in rows[0]["fact_ids"] and rows[0]["text_sha256"] for rows in before.values())
        receipt = ledger.forget("ops", "_domain", fact=fact, reason="request", requested_by="dpo")
        assert receipt["counts"]["serve_records"] == 2
        assert ledger.verify()["ok"]
        after = {u: ledger.served("ops", u) for u in ("alice", "bob")}
        for user in ("alice", "bob"):
            copy = next(r for r in after[user] if r["restates"] == before[user][0]["seq"])
            assert copy["text_sha256"] is None and copy["query_sha256"] is None
            assert copy["fact_ids"] == before[user][0]["fact_ids"] and copy["caller"] == "bot"
            assert before[user][0]["seq"] not in [r["seq"] for r in after[user]]
            assert ledger.serves.served_counts("ops", user)[fact] == 1
        kept = next(r for r in after["alice"] if r["seq"] == alone.served_seq)
        assert kept["text_sha256"] == before["alice"][1]["text_sha256"]
        assert ledger.serves.served_show(alone.served_seq)["identical"] is True
        hashes = [r["text_sha256"] for u in ("alice", "bob") for r in before[u][:1]]
        again = ledger.forget("ops", "_domain", fact=fact, reason="request", requested_by="dpo")
        assert again["noop"]
    assert scan(db, [DOMAIN_VALUE, *hashes]) == {}
