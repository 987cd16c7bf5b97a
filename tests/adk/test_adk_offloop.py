"""The service's async methods leave the event loop free while the ledger works or a model answers.

Each test is structural, not timed: an extractor that cannot finish until another task on the
same loop has run (or until another ingestion has reached its extractor too) deadlocks, and the
wait inside it fails the test, when the work runs on the loop or under the ledger's lock.
The measured stall (before and after) is bench/adk_stall.py's, in docs/adk.md.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

pytest.importorskip("google.adk")

from factledger.adk import LedgerMemoryService  # noqa: E402
from factledger.ledger import Ledger  # noqa: E402
from factledger.ledger.ingest.patterns import PatternsExtractor  # noqa: E402
from factledger.ledger.vocabulary.clock import fixed_clock  # noqa: E402
from tests.adk.helpers import BEFORE, NOW, event, session  # noqa: E402

PATIENCE = 20.0           # seconds a gate waits before it declares the loop (or the lock) blocked


class GatedExtractor:
    """The offline extractor, which first waits until the test opens its gate."""

    name, model = "patterns", None

    def __init__(self, parties: int = 1):
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.barrier = threading.Barrier(parties, timeout=PATIENCE)
        self.inner = PatternsExtractor()

    def extract(self, delta, context):
        self.entered.set()
        self.barrier.wait()                  # every party inside extraction at once
        if not self.gate.wait(PATIENCE):
            raise AssertionError("the gate never opened: the event loop was blocked")
        return self.inner.extract(delta, context)


class SlowExtractor:
    """A 0.3 s model call: a blocking sleep, then the offline extractor."""

    name, model = "patterns", None

    def __init__(self):
        self.running = False
        self.inner = PatternsExtractor()

    def extract(self, delta, context):
        self.running = True
        try:
            time.sleep(0.3)
        finally:
            self.running = False
        return self.inner.extract(delta, context)


@pytest.fixture
def ledger(tmp_path):
    with Ledger(tmp_path / "loop.db", clock=fixed_clock(NOW), create=True) as opened:
        yield opened


def pune(user: str = "priya", sid: str = "s1"):
    return session(sid, [event(f"{sid}-e1", "I live in Pune", BEFORE)], user=user)


def test_another_task_runs_and_searches_while_an_extraction_waits(ledger):
    gated = GatedExtractor()
    memory = LedgerMemoryService(ledger, extractor=gated)

    async def scenario():
        adding = asyncio.create_task(memory.add_session_to_memory(pune()))
        while not gated.entered.is_set():          # this task runs while the extraction has begun
            await asyncio.sleep(0.001)
        found = await memory.search_memory(app_name="mealkit", user_id="arjun", query="city")
        assert not adding.done()                   # the search finished inside the extraction
        gated.gate.set()
        await adding
        return found

    assert asyncio.run(scenario()).memories == []
    assert [f["value"] for f in ledger.facts("mealkit", "priya")] == ["Pune"]


def test_two_ingestions_extract_at_the_same_time(ledger):
    gated = GatedExtractor(parties=2)
    memory = LedgerMemoryService(ledger, extractor=gated)
    gated.gate.set()

    async def scenario():
        await asyncio.gather(memory.add_session_to_memory(pune("priya", "s1")),
                             memory.add_session_to_memory(pune("arjun", "s2")))

    asyncio.run(scenario())                         # the barrier needs both inside extraction
    assert [f["value"] for f in ledger.facts("mealkit", "arjun")] == ["Pune"]
    assert [f["value"] for f in ledger.facts("mealkit", "priya")] == ["Pune"]


def test_a_slow_extraction_does_not_stall_another_task(ledger):
    slow = SlowExtractor()
    memory = LedgerMemoryService(ledger, extractor=slow)
    ticks_during = 0

    async def ticker(stop: asyncio.Event):
        nonlocal ticks_during
        while not stop.is_set():
            await asyncio.sleep(0.005)
            ticks_during += slow.running

    async def scenario():
        stop = asyncio.Event()
        task = asyncio.create_task(ticker(stop))
        await memory.add_session_to_memory(pune())
        stop.set()
        await task

    asyncio.run(scenario())
    assert ticks_during > 0                         # on the loop, the ticker never sees it running


class ForgettingExtractor:
    """Erases the user while the session is being extracted (as another thread could)."""

    name, model = "patterns", None

    def __init__(self, ledger):
        self.ledger, self.inner, self.armed = ledger, PatternsExtractor(), False

    def extract(self, delta, context):
        if self.armed:
            self.armed = False
            self.ledger.forget("mealkit", "priya", reason="erased while extracting")
        return self.inner.extract(delta, context)


def test_an_erasure_during_extraction_keeps_what_was_being_extracted_out(ledger):
    extractor = ForgettingExtractor(ledger)
    memory = LedgerMemoryService(ledger, extractor=extractor)
    asyncio.run(memory.add_session_to_memory(pune(sid="s1")))
    extractor.armed = True
    asyncio.run(memory.add_session_to_memory(session("s2", [event("s2-e1", "I'm vegan", BEFORE + 5)])))
    assert ledger.facts("mealkit", "priya") == []


def test_concurrent_writers_and_readers_from_tasks_and_threads_stay_consistent(ledger):
    memory = LedgerMemoryService(ledger, extractor="patterns")
    users = [f"u{i}" for i in range(8)]

    async def one_user(user: str):
        turns = [event(f"{user}-e1", "I live in Pune", BEFORE), event(f"{user}-e2", "I'm vegan", BEFORE + 1)]
        await asyncio.gather(
            memory.add_session_to_memory(session("s", turns, user=user)),
            memory.add_events_to_memory(app_name="mealkit", user_id=user, events=turns[1:], session_id="s"),
            *(memory.search_memory(app_name="mealkit", user_id=user, query="city") for _ in range(5)))
        await memory.add_session_to_memory(session("s", turns, user=user))

    async def several(chunk):
        await asyncio.wait_for(asyncio.gather(*(one_user(u) for u in chunk)), PATIENCE * 3)

    def in_thread(chunk):
        asyncio.run(several(chunk))

    errors = []
    threads = [threading.Thread(target=lambda c=c: _collect(errors, in_thread, c))
               for c in (users[:4], users[4:])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for user in users:
        assert sorted(f["value"] for f in ledger.facts("mealkit", user)) == ["Pune", "vegan"]
        assert ledger._conn.execute("SELECT COUNT(*) FROM events WHERE user = ? AND type = 'FactObserved'",
                                   (user,)).fetchone()[0] == 2


def _collect(errors: list, fn, *args) -> None:
    try:
        fn(*args)
    except BaseException as exc:       # a thread's failure, reported by the test
        errors.append(exc)
