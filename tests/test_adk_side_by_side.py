"""The README's side-by-side: the same three meal-kit sessions through google-adk's own
InMemoryMemoryService and through factledger, asked "where do I live and what do I eat?"."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("google.adk")

from google.adk.memory import InMemoryMemoryService  # noqa: E402

from factledger.ledger import Ledger  # noqa: E402
from factledger.ledger.adk import LedgerMemoryService  # noqa: E402
from factledger.ledger.timeutil import fixed_clock  # noqa: E402

from .test_adk_memory import NOW, QUESTION, ask, meal_kit_sessions  # noqa: E402


def served(memory) -> list[str]:
    """What a memory service returns for the question, one line per memory."""
    found = asyncio.run(memory.search_memory(app_name="mealkit", user_id="priya", query=QUESTION))
    return [f"{m.author}: " + " ".join(p.text for p in m.content.parts if p.text)
            for m in found.memories]


def side_by_side(tmp_path) -> tuple[list[str], list[str]]:
    adk = InMemoryMemoryService()
    with Ledger(tmp_path / "side.db", clock=fixed_clock(NOW)) as ledger:
        ours = LedgerMemoryService(ledger, extractor="patterns")
        for session in meal_kit_sessions():
            asyncio.run(adk.add_session_to_memory(session))
            asyncio.run(ours.add_session_to_memory(session))
        return served(adk), served(ours)


def test_side_by_side(tmp_path, capsys):
    theirs, ours = side_by_side(tmp_path)
    with capsys.disabled():
        print("\n--- google-adk InMemoryMemoryService ---", *theirs, sep="\n")
        print("--- factledger LedgerMemoryService ---", *ours, sep="\n")
    raw = "\n".join(theirs)
    assert "Pune" in raw and "vegetarian" in raw           # stale turns come back verbatim
    assert len(ours) == 2
    text = "\n".join(ours)
    assert "home_city = Bengaluru" in text and "diet = pescatarian" in text
    assert "Pune" not in text and "vegetarian" not in text


def test_the_model_prompt_with_google_adks_own_service_carries_stale_facts():
    adk = InMemoryMemoryService()
    for session in meal_kit_sessions():
        asyncio.run(adk.add_session_to_memory(session))
    seen = ask(adk)
    assert "Pune" in seen and "vegetarian" in seen
