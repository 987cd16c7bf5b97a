"""google-adk's own InMemoryMemoryService and factledger's LedgerMemoryService, side by side.

First docs/adk.md's comparison (the same three meal-kit sessions, asked "where do I live and what
do I eat?"), then a conformance suite: the same scenarios through both services, asserting the
contract points of google-adk's `BaseMemoryService` they share (isolation by app and user,
idempotent adds, deltas, deletes, tasks and threads at once), and `DIFFERENCES`, the one list of
where a fact memory differs on purpose, each asserted for both.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

pytest.importorskip("google.adk")

from google.adk.memory import InMemoryMemoryService  # noqa: E402

from factledger.adk import LedgerMemoryService, MemoryNotFound, SharedMemory  # noqa: E402
from factledger.ledger import Ledger  # noqa: E402
from factledger.ledger.vocabulary.clock import fixed_clock  # noqa: E402
from tests.adk.helpers import BEFORE, event, session  # noqa: E402
from tests.adk.test_adk_contract import shared_fact  # noqa: E402
from tests.adk.test_adk_memory import NOW, QUESTION, ask, meal_kit_sessions  # noqa: E402


def served(memory) -> list[str]:
    """What a memory service returns for the question, one line per memory."""
    found = asyncio.run(memory.search_memory(app_name="mealkit", user_id="priya", query=QUESTION))
    return [f"{m.author}: " + " ".join(p.text for p in m.content.parts if p.text)
            for m in found.memories]


def side_by_side(tmp_path) -> tuple[list[str], list[str]]:
    adk = InMemoryMemoryService()
    with Ledger(tmp_path / "side.db", clock=fixed_clock(NOW), create=True) as ledger:
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
    assert len(ours) == 3 and ours[2].startswith("memory: Withheld: 1 stored fact")   # the guess, counted
    text = "\n".join(ours)
    assert "home_city = Bengaluru" in text and "diet = pescatarian" in text
    assert "Pune" not in text and "vegetarian" not in text and "spicy" not in text


def test_the_model_prompt_with_google_adks_own_service_carries_stale_facts():
    adk = InMemoryMemoryService()
    for meal in meal_kit_sessions():
        asyncio.run(adk.add_session_to_memory(meal))
    seen = ask(adk)
    assert "Pune" in seen and "vegetarian" in seen


# --- conformance: the same scenarios through both services ---------------------------------
#
# Where a fact memory deliberately differs from google-adk's own (each asserted below, and
# described in docs/adk.md):
DIFFERENCES = {
    "facts, not turns": "an entry is a current fact (author `memory`, id a fact id, text a fact "
                        "line); a superseded statement is never served, however well it matches",
    "preload": "an empty or unrelated query still serves the user's best facts (preload=True)",
    "whole-user delete": "delete_memory without an id erases the user; google-adk's does nothing",
    "unknown id": "delete_memory of an id it never returned to this caller raises MemoryNotFound "
                  "(a ValueError); google-adk's ignores it",
    "shared facts": "app-wide facts (the `_domain` partition) are served to every user of the app; "
                    "a user's delete of one raises SharedMemory (a ValueError) and deletes nothing",
}


@pytest.fixture(params=["google-adk", "factledger"])
def service(request, tmp_path):
    if request.param == "google-adk":
        yield InMemoryMemoryService()
        return
    with Ledger(tmp_path / "conform.db", clock=fixed_clock(NOW), create=True) as ledger:
        yield LedgerMemoryService(ledger, extractor="patterns")


def texts(memory, query="where do I live Pune Lisbon", user="priya", app="mealkit") -> list[str]:
    found = asyncio.run(memory.search_memory(app_name=app, user_id=user, query=query)).memories
    return [" ".join(p.text for p in m.content.parts if p.text) for m in found]


def mentions(memory, word: str, **where) -> int:
    return sum(word in text for text in texts(memory, **where))


def test_memory_is_isolated_by_app_and_user(service):
    asyncio.run(service.add_session_to_memory(session("s1", [event("e1", "I live in Pune", BEFORE)])))
    assert mentions(service, "Pune") == 1
    assert texts(service, user="arjun") == []
    assert texts(service, app="other-app") == []


def test_adding_a_session_again_adds_nothing(service):
    live = session("s1", [event("e1", "I live in Pune", BEFORE)])
    asyncio.run(service.add_session_to_memory(live))
    asyncio.run(service.add_session_to_memory(live))
    assert mentions(service, "Pune") == 1


def test_event_deltas_add_up_and_a_resent_id_is_not_read_again(service):
    add = service.add_events_to_memory
    asyncio.run(add(app_name="mealkit", user_id="priya", session_id="s1",
                    events=[event("e1", "I live in Pune", BEFORE)]))
    asyncio.run(add(app_name="mealkit", user_id="priya", session_id="s1",
                    events=[event("e2", "I'm vegan", BEFORE + 60)]))
    asyncio.run(add(app_name="mealkit", user_id="priya", session_id="s1",
                    events=[event("e1", "we just moved to Lisbon", BEFORE + 3600)]))
    assert mentions(service, "Pune") == 1 and mentions(service, "Lisbon") == 0
    assert mentions(service, "vegan", query="vegan diet") == 1


def test_a_deleted_memory_stays_deleted_when_its_session_is_added_again(service):
    live = session("s1", [event("e1", "I live in Pune", BEFORE)])
    asyncio.run(service.add_session_to_memory(live))
    (found,) = asyncio.run(service.search_memory(app_name="mealkit", user_id="priya",
                                                 query="where do I live Pune")).memories
    asyncio.run(service.delete_memory(app_name="mealkit", user_id="priya", memory_id=found.id))
    assert mentions(service, "Pune") == 0
    asyncio.run(service.add_session_to_memory(live))
    assert mentions(service, "Pune") == 0


def test_tasks_and_threads_add_and_search_at_once(service):
    users = [f"u{i}" for i in range(6)]

    async def one(user: str):
        turns = [event(f"{user}-e1", "I live in Pune", BEFORE), event(f"{user}-e2", "I'm vegan", BEFORE + 1)]
        await asyncio.gather(service.add_session_to_memory(session("s", turns, user=user)),
                             *(service.search_memory(app_name="mealkit", user_id=user, query="Pune")
                               for _ in range(10)))

    async def many(chunk):
        await asyncio.gather(*(one(u) for u in chunk))

    threads = [threading.Thread(target=asyncio.run, args=(many(chunk),)) for chunk in (users[:3], users[3:])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for user in users:
        assert mentions(service, "Pune", user=user) == 1


# --- where the two differ, on purpose ------------------------------------------------------

def test_difference_facts_not_turns():
    theirs, ours = InMemoryMemoryService(), None
    moved = session("s1", [event("e1", "I live in Pune", BEFORE), event("e2", "we just moved to Lisbon", BEFORE + 60)])
    asyncio.run(theirs.add_session_to_memory(moved))
    assert mentions(theirs, "Pune") == 1                       # the stale turn matches and is served
    with Ledger(":memory:", clock=fixed_clock(NOW)) as ledger:
        ours = LedgerMemoryService(ledger)
        asyncio.run(ours.add_session_to_memory(moved))
        assert mentions(ours, "Pune") == 0 and mentions(ours, "Lisbon") == 1
        (entry,) = asyncio.run(ours.search_memory(app_name="mealkit", user_id="priya", query="Pune")).memories
        assert entry.author == "memory" and entry.id == entry.custom_metadata["fact_id"]


def test_difference_preload_and_whole_user_delete_and_unknown_ids():
    theirs = InMemoryMemoryService()
    live = session("s1", [event("e1", "I live in Pune", BEFORE)])
    asyncio.run(theirs.add_session_to_memory(live))
    assert texts(theirs, query="") == []
    asyncio.run(theirs.delete_memory(app_name="mealkit", user_id="priya"))
    asyncio.run(theirs.delete_memory(app_name="mealkit", user_id="priya", memory_id="nope"))
    assert mentions(theirs, "Pune") == 1                       # no id: nothing deleted
    with Ledger(":memory:", clock=fixed_clock(NOW)) as ledger:
        ours = LedgerMemoryService(ledger)
        asyncio.run(ours.add_session_to_memory(live))
        assert mentions(ours, "Pune", query="") == 1           # preload: served on an empty query
        with pytest.raises(MemoryNotFound):
            asyncio.run(ours.delete_memory(app_name="mealkit", user_id="priya", memory_id="nope"))
        asyncio.run(ours.delete_memory(app_name="mealkit", user_id="priya"))
        assert mentions(ours, "Pune") == 0                     # no id: the whole user


def test_difference_shared_facts_are_served_to_every_user_and_not_a_users_to_delete():
    with Ledger(":memory:", clock=fixed_clock(NOW)) as ledger:
        ours = LedgerMemoryService(ledger)
        fact_id = shared_fact(ledger, "Mumbai")
        assert mentions(ours, "Mumbai", user="priya") == mentions(ours, "Mumbai", user="arjun") == 1
        with pytest.raises(SharedMemory):
            asyncio.run(ours.delete_memory(app_name="mealkit", user_id="priya", memory_id=fact_id))
        assert mentions(ours, "Mumbai", user="priya") == 1
