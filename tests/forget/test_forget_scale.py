"""How long forgetting one user takes in a ledger of 100,000 events (a measurement, not an assertion).

Slow: left out of the default run.  Run it with
    .venv/bin/python -m pytest -q -s -m slow tests/forget/test_forget_scale.py
or as a script (prints the figures):
    .venv/bin/python -m tests.forget.test_forget_scale [EVENTS]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import pytest

from factledger.ledger import Ledger, make_candidate
from tests.conftest import MovableClock

PREDICATES = [("home_city", ["Pune", "Bengaluru", "Mumbai", "Chennai"]),
              ("diet", ["vegetarian", "vegan", "pescatarian"]),
              ("pet", ["cat", "dog", "parrot", "fish"]),
              ("favorite_cuisine", ["thai", "korean", "mexican", "italian"]),
              ("blood_pressure", ["120/80 mmHg", "130/85 mmHg", "140/90 mmHg"])]


def build(path: Path, events: int, users: int = 1000) -> Ledger:
    clock = MovableClock("2027-01-01T00:00:00Z")     # after every said_at below (no future dates)
    ledger = Ledger(path, clock=clock, synchronous="NORMAL", create=True)
    i = 0
    while ledger.head()[0] < events:
        batch = []
        for u in range(users):
            predicate, options = PREDICATES[(i + u) % len(PREDICATES)]
            batch.append(make_candidate(
                app="scale", user=f"user-{u}", predicate=predicate, value=options[(i * 7 + u) % len(options)],
                quote=f"I said {options[(i * 7 + u) % len(options)]}", session=f"s-{u}-{i // 5}", evidence_event=f"e{i}",
                said_at=f"2026-{1 + (i // 28) % 12:02d}-{1 + i % 28:02d}T10:00:00Z"))
        ledger.observe_many(batch)
        clock.tick(60)
        i += 1
    return ledger


def measure(events: int = 100_000) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        ledger = build(Path(tmp) / "scale.db", events)
        built = time.perf_counter() - started
        total = ledger.head()[0]
        partition = ledger._conn.execute(
            "SELECT COUNT(*) FROM events WHERE app = 'scale' AND user = 'user-7'").fetchone()[0]
        started = time.perf_counter()
        receipt = ledger.forget("scale", "user-7", reason="measurement")
        user_seconds = time.perf_counter() - started
        started = time.perf_counter()
        session = ledger.forget("scale", "user-8", session="s-8-1", reason="measurement")
        session_seconds = time.perf_counter() - started
        ok = ledger.verify()["ok"]
        ledger.close()
    return {"events": total, "build_seconds": round(built, 1), "user_events": partition,
            "forget_user_seconds": round(user_seconds, 3),
            "forget_session_seconds": round(session_seconds, 3),
            "scrubbed": receipt["counts"]["events"], "session_scrubbed": session["counts"]["events"],
            "verify_ok": ok}


@pytest.mark.slow
def test_forget_one_user_at_100k_events():
    result = measure()
    print(result)
    assert result["verify_ok"] and result["scrubbed"] == result["user_events"]


if __name__ == "__main__":
    print(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000))
