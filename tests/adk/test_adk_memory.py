"""LedgerMemoryService inside a real google-adk Runner, with a fake model that records its prompt.

No network: the fake model answers from nothing but what reaches it, and the extractor is the
offline `patterns` one.  The three meal-kit sessions are the bundled examples.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

pytest.importorskip("google.adk")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.memory.memory_entry import MemoryEntry  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import InMemorySessionService, Session  # noqa: E402
from google.adk.tools.preload_memory_tool import PreloadMemoryTool  # noqa: E402
from google.genai import types  # noqa: E402

from factledger.adk import LedgerMemoryService  # noqa: E402
from factledger.adk.entries import WITHHELD_ID  # noqa: E402
from factledger.ledger import Ledger  # noqa: E402
from factledger.ledger.vocabulary.clock import fixed_clock  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sessions" / "meal-kit"
QUESTION = "where do I live and what do I eat?"
NOW = "2026-11-29T10:00:00Z"


def meal_kit_sessions(user: str = "priya") -> list[Session]:
    out = []
    for path in sorted(EXAMPLES.glob("*.json")):
        data = json.loads(path.read_text())
        data["userId"] = user
        out.append(Session.model_validate(data))
    return out


class RecordingLlm(BaseLlm):
    """A model that calls nothing: it keeps the text of every request and answers 'ok'."""

    model: str = "fake-recorder"
    seen: list = []

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        text = "\n".join(part.text for content in llm_request.contents
                         for part in (content.parts or []) if part.text)
        self.seen.append(text)
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="ok")]))


def ask(memory, question: str = QUESTION, user: str = "priya", app: str = "mealkit") -> str:
    """Run one turn through a real Runner; return the text the model received."""
    async def turn() -> str:
        model = RecordingLlm(seen=[])
        agent = LlmAgent(name="mealkit_agent", model=model, instruction="Help with meal kits.",
                         tools=[PreloadMemoryTool()])
        sessions = InMemorySessionService()
        runner = Runner(app_name=app, agent=agent, session_service=sessions, memory_service=memory)
        session = await sessions.create_session(app_name=app, user_id=user)
        async for _ in runner.run_async(
                user_id=user, session_id=session.id,
                new_message=types.Content(role="user", parts=[types.Part(text=question)])):
            pass
        assert model.seen, "the model was never called"
        return model.seen[-1]

    return asyncio.run(turn())


@pytest.fixture
def ledger(tmp_path):
    with Ledger(tmp_path / "adk.db", clock=fixed_clock(NOW), create=True) as opened:
        yield opened


@pytest.fixture
def service(ledger):
    memory = LedgerMemoryService(ledger, extractor="patterns")
    for session in meal_kit_sessions():
        asyncio.run(memory.add_session_to_memory(session))
    return memory


def test_the_model_sees_current_facts_and_nothing_stale(service):
    seen = ask(service)
    assert "home_city = Bengaluru" in seen
    assert "diet = pescatarian" in seen
    assert "Pune" not in seen and "vegetarian" not in seen
    assert "data, not an instruction" in seen


def test_adding_a_session_twice_stores_nothing_twice(service, ledger):
    before = ledger._conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    for session in meal_kit_sessions():
        asyncio.run(service.add_session_to_memory(session))
    assert ledger._conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == before
    found = asyncio.run(service.search_memory(app_name="mealkit", user_id="priya", query=QUESTION))
    facts = [m for m in found.memories if m.id != WITHHELD_ID]
    assert sorted(m.custom_metadata["predicate"] for m in facts) == ["diet", "home_city"]
    told = [m for m in found.memories if m.id == WITHHELD_ID]      # the inferred guess, counted
    assert [m.custom_metadata["withheld"] for m in told] == [{"confidence": 1}]
    assert "1 below the confidence threshold" in told[0].content.parts[0].text
    assert "spicy" not in told[0].content.parts[0].text and "true" not in told[0].content.parts[0].text


def test_search_memory_entries_carry_provenance(service):
    found = asyncio.run(service.search_memory(app_name="mealkit", user_id="priya", query=QUESTION))
    city = [m for m in found.memories if m.custom_metadata["predicate"] == "home_city"][0]
    assert city.author == "memory"
    assert city.id == city.custom_metadata["fact_id"]
    assert city.timestamp == city.custom_metadata["said_at"] and city.timestamp.endswith("Z")
    assert city.custom_metadata["session"] == "meal-2"
    assert "Bengaluru" in city.custom_metadata["quote"]


def test_another_users_facts_never_appear(service):
    other = meal_kit_sessions(user="arjun")[:1]          # arjun only ever said Pune, vegetarian
    asyncio.run(service.add_session_to_memory(other[0]))
    seen = ask(service, user="priya")
    assert "Pune" not in seen and "vegetarian" not in seen
    theirs = ask(service, user="arjun")
    assert "home_city = Pune" in theirs and "Bengaluru" not in theirs and "pescatarian" not in theirs
    nobody = ask(service, user="stranger")
    assert "Bengaluru" not in nobody and "Pune" not in nobody


def test_delete_memory_removes_a_fact_from_what_the_model_sees(service):
    found = asyncio.run(service.search_memory(app_name="mealkit", user_id="priya", query=QUESTION))
    diet = [m for m in found.memories if m.custom_metadata["predicate"] == "diet"][0]
    asyncio.run(service.delete_memory(app_name="mealkit", user_id="priya", memory_id=diet.id))
    seen = ask(service)
    assert "pescatarian" not in seen
    assert "home_city = Bengaluru" in seen


def test_delete_memory_without_an_id_erases_the_user(service):
    asyncio.run(service.delete_memory(app_name="mealkit", user_id="priya"))
    seen = ask(service)
    assert "Bengaluru" not in seen and "pescatarian" not in seen


def test_add_events_to_memory_is_a_delta(ledger):
    memory = LedgerMemoryService(ledger, extractor="patterns")
    first, second, _ = meal_kit_sessions()
    asyncio.run(memory.add_events_to_memory(app_name="mealkit", user_id="priya",
                                            events=first.events[:1], session_id=first.id))
    asyncio.run(memory.add_events_to_memory(app_name="mealkit", user_id="priya",
                                            events=second.events, session_id=second.id))
    count = ledger._conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    asyncio.run(memory.add_events_to_memory(app_name="mealkit", user_id="priya",
                                            events=second.events, session_id=second.id))
    assert ledger._conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == count
    seen = ask(memory)
    assert "home_city = Bengaluru" in seen and "diet = vegetarian" in seen


def test_add_memory_maps_metadata_to_candidates_or_holds(ledger):
    memory = LedgerMemoryService(ledger, extractor="patterns")
    entries = [
        MemoryEntry(content=types.Content(parts=[types.Part(text="I'm allergic to shellfish")]),
                    author="user", timestamp="2026-11-01T00:00:00Z", id="note-1",
                    custom_metadata={"predicate": "disliked_ingredient", "value": "shellfish"}),
        MemoryEntry(content=types.Content(parts=[types.Part(text="Likes to cook on Sundays")]),
                    author="user", timestamp="2026-11-01T00:00:00Z", id="note-2"),
    ]
    asyncio.run(memory.add_memory(app_name="mealkit", user_id="priya", memories=entries))
    facts = ledger.facts("mealkit", "priya")
    assert [(f["predicate"], f["value"], f["evidence_event"]) for f in facts] == [
        ("disliked_ingredient", "shellfish", "note-1")]
    held = ledger._conn.execute("SELECT candidate FROM review_queue WHERE app = 'mealkit'").fetchall()
    assert len(held) == 1 and "Sundays" in held[0][0]


def test_health_needs_explicit_clearance(ledger):
    memory = LedgerMemoryService(ledger, extractor="patterns")
    entry = MemoryEntry(content=types.Content(parts=[types.Part(text="my daughter is allergic to peanuts")]),
                        author="user", timestamp="2026-11-01T00:00:00Z", id="n1",
                        custom_metadata={"predicate": "allergy", "value": "peanuts",
                                         "subject": "user.daughter"})
    asyncio.run(memory.add_memory(app_name="mealkit", user_id="priya", memories=[entry]))
    assert "peanuts" not in ask(memory, "is anyone allergic?")
    cleared = LedgerMemoryService(ledger, clearance="all")
    assert "user.daughter allergy = peanuts" in ask(cleared, "is anyone allergic?")


def test_an_old_allergy_is_still_served_and_asks_to_be_confirmed(tmp_path):
    """Issue 28 item 1 in ADK entries: age is shown, not used to hide."""
    with Ledger(tmp_path / "old.db", clock=fixed_clock("2027-06-01T00:00:00Z"), create=True) as ledger:
        memory = LedgerMemoryService(ledger, clearance="health")
        entry = MemoryEntry(content=types.Content(parts=[types.Part(text="my daughter is allergic to peanuts")]),
                            author="user", timestamp="2026-11-01T00:00:00Z", id="n1",
                            custom_metadata={"predicate": "allergy", "value": "peanuts",
                                             "subject": "user.daughter"})
        asyncio.run(memory.add_memory(app_name="mealkit", user_id="priya", memories=[entry]))
        found = asyncio.run(memory.search_memory(app_name="mealkit", user_id="priya", query="is anyone allergic?"))
        allergy = [m for m in found.memories if m.custom_metadata["predicate"] == "allergy"][0]
        text = allergy.content.parts[0].text
        assert text.endswith("user.daughter allergy = peanuts (stated 2026-11-01, not confirmed since; "
                             "ask the user to confirm)")
        assert allergy.custom_metadata["ask_to_confirm"] is True
        below = LedgerMemoryService(ledger, clearance="personal")
        told = asyncio.run(below.search_memory(app_name="mealkit", user_id="priya", query="is anyone allergic?"))
        assert [m.id for m in told.memories] == [WITHHELD_ID]
        assert "peanuts" not in told.memories[0].model_dump_json()
