"""`Ledger.lookup.user_sessions`: every session a user's events name, however it came in (issue 29).

The web view's user page erases sessions from this list, so a session written by `observe` (no
ingestion, no row in `sessions`) or one whose only statement was rejected must be on it too.
"""

from __future__ import annotations

import json
from pathlib import Path

from factledger.ledger import Ledger
from tests.conftest import cand

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sessions" / "meal-kit"


def test_observed_held_rejected_and_ingested_sessions_are_all_listed(tmp_path):
    with Ledger(tmp_path / "l.db", create=True) as ledger:
        ledger.ingest_session(json.loads((EXAMPLES / "1-vegetarian-in-pune.json").read_text()), extractor="patterns")
        ledger.observe(cand(app="mealkit", user="priya", predicate="pet", value="cat", quote="we have a cat",
                            session="chat-1", event="c1"))
        ledger.observe(cand(app="mealkit", user="priya", predicate="shoe_size", value="39", quote="size 39",
                            session="chat-2", event="c2"))                       # held
        ledger.observe(cand(app="mealkit", user="priya", predicate="diet", value="vegan", quote="I'm vegan",
                            session="chat-3", event="c3", author="agent"))    # inferred
        ledger.observe(cand(app="other", user="priya", predicate="pet", value="dog", session="elsewhere"))
        rows = {row["session"]: row for row in ledger.lookup.user_sessions("mealkit", "priya")}
    assert set(rows) == {"meal-1", "chat-1", "chat-2", "chat-3"}
    assert rows["meal-1"]["source"] == "ingested" and rows["meal-1"]["ingestion"]["ingestions"] == 1
    assert rows["chat-1"]["source"] == "observed" and rows["chat-1"]["ingestion"] is None
    assert all(row["events"] >= 1 and row["first_seq"] <= row["last_seq"] for row in rows.values())
    assert list(rows) == sorted(rows, key=lambda s: rows[s]["first_seq"])
