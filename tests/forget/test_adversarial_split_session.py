"""A forget files as forgotten whole only the sessions its scope named (issue 32, class 2).

A value learnt late that was said between two statements of one fact splits it (`FactSplit`);
the split names the session of the fact's first statement after it, another session.  Forgetting
the session that caused the split scrubs the split (re-decision makes the fact whole again), and
filed that *other* session as "forgotten whole" too: the receipt counted two sessions, and the
untouched session could no longer be ingested (a grown session was refused; the ADK service
silently skipped its new turns).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

pytest.importorskip("google.adk")

from factledger.adk import LedgerMemoryService  # noqa: E402
from factledger.ledger import Ledger  # noqa: E402
from factledger.ledger.vocabulary.clock import fixed_clock  # noqa: E402
from tests.adk.helpers import NOW, event, run, session, values  # noqa: E402


def day(n: int, hour: int = 9) -> float:
    return datetime(2026, 11, n, hour, tzinfo=UTC).timestamp()


LATE = [("s5", "I live in Lyon", 5), ("s20", "I live in Lyon", 20), ("s10", "I live in Goa", 10)]


def split(memory, ledger) -> None:
    for sid, text, n in LATE:                         # Goa, said on day 10, is learnt last
        run(memory.add_session_to_memory(session(sid, [event(f"{sid}-e1", text, day(n))])))
    splits = ledger.log(type="FactSplit")
    assert [e["body"]["session"] for e in splits] == ["s20"]      # the split names another session


@pytest.fixture
def ledger(tmp_path):
    with Ledger(tmp_path / "split.db", clock=fixed_clock(NOW), create=True) as opened:
        yield opened


def test_forgetting_the_session_that_split_a_fact_forgets_that_session_only(ledger):
    memory = LedgerMemoryService(ledger)
    split(memory, ledger)
    receipt = ledger.forget("mealkit", "priya", session="s10", reason="asked")
    assert receipt["counts"]["sessions"] == 1
    assert not ledger.erased.is_forgotten_session("mealkit", "priya", "s20")
    assert ledger.erased.is_forgotten_session("mealkit", "priya", "s10")
    assert values(memory) == {"home_city": "Lyon"}


def test_the_session_the_split_named_still_ingests_its_tail(ledger):
    memory = LedgerMemoryService(ledger)
    split(memory, ledger)
    ledger.forget("mealkit", "priya", session="s10", reason="asked")
    grown = session("s20", [event("s20-e1", "I live in Lyon", day(20)),
                            event("s20-e2", "I'm vegan", day(20, 10))])
    run(memory.add_session_to_memory(grown))                      # the ADK service reads its new turn
    assert values(memory, query="what do I eat") == {"home_city": "Lyon", "diet": "vegan"}


def test_the_session_the_split_named_is_not_refused_by_ingestion(ledger):
    memory = LedgerMemoryService(ledger)
    split(memory, ledger)
    ledger.forget("mealkit", "priya", session="s10", reason="asked")
    grown = {"id": "s20", "appName": "mealkit", "userId": "priya", "events": [
        {"id": "s20-e1", "author": "user", "timestamp": day(20),
         "content": {"parts": [{"text": "I live in Lyon"}]}},
        {"id": "s20-e2", "author": "user", "timestamp": day(20, 10),
         "content": {"parts": [{"text": "I'm vegan"}]}}]}
    ledger.ingest_session(grown, extractor="patterns")            # a grown session: its tail
    assert [f["value"] for f in ledger.facts("mealkit", "priya", predicate="diet")] == ["vegan"]
