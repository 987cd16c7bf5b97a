"""Purge for real: after a forget, no byte of the forgotten markers is left in the db, -wal or -shm.

The markers are unique strings (a value, a quote, a session id, a user id) written through every
path that stores text: observations, an ingested ADK session, a held candidate, a rejection, the
recall index.  Each test first proves the scan finds them, then forgets and scans again.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from factledger.ledger import Ledger
from tests.conftest import MovableClock, cand

USER = "zqu-7f3a-subject"
SESSION = "zqs-91b2-session"
CITY = "Zqxvillebourg"
QUOTE_WORD = "qwzzyfrobnitz"
KEEP = "Keepmeburg"


def scan(db: Path, markers) -> dict[str, list[str]]:
    """marker -> the files (db, -wal, -shm) whose raw bytes contain it (case-insensitive)."""
    hits: dict[str, list[str]] = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        path = Path(str(db) + suffix)
        if not path.exists():
            continue
        data = path.read_bytes().lower()
        for marker in markers:
            if marker.lower().encode() in data:
                hits.setdefault(marker, []).append(path.name)
    return hits


def session(user: str, sid: str, city: str, word: str) -> dict:
    return {"id": sid, "appName": "mealkit", "userId": user, "events": [
        {"id": f"{sid}-e1", "author": "user", "timestamp": 1788080400.0,
         "content": {"parts": [{"text": f"Hello, we live in {city}. I {word} daily."}]}},
        {"id": f"{sid}-e2", "author": "agent", "timestamp": 1788080404.0,
         "content": {"parts": [{"text": f"Noted: deliveries to {city}."}]}},
    ]}


def fill(ledger: Ledger, clock: MovableClock, user: str = USER) -> None:
    ledger.ingest_session(session(user, SESSION, CITY, QUOTE_WORD), extractor="patterns")
    clock.tick()
    m = dict(app="mealkit", user=user, session=SESSION, event=f"{SESSION}-e1")
    ledger.observe(cand(predicate="allergy", value=f"{QUOTE_WORD}-pollen",
                        quote=f"I am allergic to {QUOTE_WORD}-pollen", said_at="2026-09-01", **m))
    ledger.observe(cand(predicate="zq_unknown_thing", value=f"{CITY} dog",
                        quote=f"my {CITY} dog", said_at="2026-09-01", **m))          # held
    ledger.observe(cand(predicate="home_city", value=f"{CITY}", quote=f"not {CITY}",
                        said_at="2026-09-01", negated=True, **m))                    # retraction
    ledger.observe(cand(predicate="home_city", value=f"Old{CITY}", quote=f"Old{CITY} once",
                        said_at="2026-01-01", **m))                                   # rejected: older
    clock.tick()
    ledger.observe(cand(app="mealkit", user=user, predicate="diet", value="vegan",
                        quote=f"{KEEP} vegan", session="other-session", said_at="2026-10-01"))
    clock.tick()


def test_user_erasure_leaves_no_byte(tmp_path):
    db = tmp_path / "ledger.db"
    clock = MovableClock()
    markers = [USER, SESSION, CITY, QUOTE_WORD, KEEP]
    with Ledger(db, clock=clock, create=True) as ledger:
        fill(ledger, clock)
        ledger.observe(cand(app="mealkit", user="bystander", value="vegan", session="b1"))
        ledger._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        assert set(scan(db, markers)) == set(markers)           # the scan does see them
        receipt = ledger.forget("mealkit", USER, reason="art. 17 request")
        assert receipt["purge"]["checkpoint"] == "truncated"
        assert scan(db, markers) == {}                          # with the ledger still open
        assert ledger.verify()["ok"] and ledger.replay_differences() == []
        assert ledger.facts("mealkit", "bystander")              # someone else is untouched
    assert scan(db, markers) == {}


def test_session_erasure_leaves_no_byte_of_the_session(tmp_path):
    db = tmp_path / "ledger.db"
    clock = MovableClock()
    with Ledger(db, clock=clock, create=True) as ledger:
        fill(ledger, clock)
        assert set(scan(db, [SESSION, CITY, QUOTE_WORD]))
        ledger.forget("mealkit", USER, session=SESSION, reason="session request", vacuum=True)
        assert scan(db, [SESSION, CITY, QUOTE_WORD]) == {}
        assert KEEP.lower() in (tmp_path / "ledger.db").read_bytes().lower().decode("latin-1")
        assert [f["value"] for f in ledger.facts("mealkit", USER)] == ["vegan"]
        assert ledger.verify()["ok"] and ledger.replay_differences() == []


def test_redacted_event_and_receipt_hold_no_personal_content(tmp_path):
    db = tmp_path / "ledger.db"
    clock = MovableClock()
    markers = [USER, SESSION, CITY, QUOTE_WORD]
    with Ledger(db, clock=clock, create=True) as ledger:
        fill(ledger, clock)
        receipts = [ledger.forget("mealkit", USER, session=SESSION, reason="r", dry_run=True),
                    ledger.forget("mealkit", USER, session=SESSION, reason="r")]
        clock.tick()
        receipts.append(ledger.forget("mealkit", USER, reason="r", requested_by="dpo"))
        redacted = [b for (b,) in ledger._conn.execute(
            "SELECT body FROM events WHERE type = 'Redacted'")]
        assert len(redacted) == 2
        text = "\n".join(redacted) + orjson.dumps(receipts).decode() + orjson.dumps(
            ledger.erasures()).decode()
        for marker in markers:
            assert marker.lower() not in text.lower(), marker
        for body in map(orjson.loads, redacted):
            assert body["user"] == "_erasures"


def test_vacuum_leaves_no_free_pages(tmp_path):
    db = tmp_path / "ledger.db"
    clock = MovableClock()
    with Ledger(db, clock=clock, create=True) as ledger:
        for i in range(200):
            ledger.observe(cand(user="big", predicate="pet", value=f"pet number {i} " + "x" * 200,
                                session=f"s{i}"))
        size = db.stat().st_size
        receipt = ledger.forget("app", "big", reason="r", vacuum=True)
        assert receipt["purge"]["vacuumed"]
        assert ledger._conn.execute("PRAGMA freelist_count").fetchone()[0] == 0
        assert db.stat().st_size < size
        assert ledger._conn.execute("PRAGMA secure_delete").fetchone()[0] == 1


def test_forget_drops_the_memoised_term_texts(tmp_path):
    """The text index memoises the texts it cuts (values, quotes) for the ledger; a forget empties
    that memo, so the forgotten words do not stay in this process's memory either."""
    clock = MovableClock()
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        fill(ledger, clock)
        texts = ledger._work.recall_kept.texts
        assert texts.texts and texts.words
        ledger.forget("mealkit", USER, reason="test")
        assert not texts.texts and not texts.words
