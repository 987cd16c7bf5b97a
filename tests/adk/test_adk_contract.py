"""`LedgerMemoryService` held to google-adk's `BaseMemoryService` contract, with stated facts.

What is new is decided by event id; a forgotten user's later turns are ingested and the erased ones
never again; reserved partition names cannot be reached from a caller's ids; an id the service
returned can always be deleted by the same caller; ids are normalised once; typed errors.
"""

from __future__ import annotations

import pytest

pytest.importorskip("google.adk")

from factledger.adk import (  # noqa: E402
    CorruptLedger,
    InvalidId,
    LedgerMemoryService,
    MemoryNotFound,
    SharedMemory,
)
from factledger.ledger import Ledger, make_candidate  # noqa: E402
from factledger.ledger.errors import LedgerError  # noqa: E402
from factledger.ledger.vocabulary.clock import fixed_clock  # noqa: E402
from tests.adk.helpers import AFTER, BEFORE, NOW, event, event_count, run, search, session, values  # noqa: E402


@pytest.fixture
def ledger(tmp_path):
    with Ledger(tmp_path / "adk.db", clock=fixed_clock(NOW), create=True) as opened:
        yield opened


@pytest.fixture
def memory(ledger):
    return LedgerMemoryService(ledger, extractor="patterns")


def add_events(memory, events, session_id="s1", user="priya"):
    run(memory.add_events_to_memory(app_name="mealkit", user_id=user, events=events,
                                    session_id=session_id))


# --- event ids, not timestamps, decide what is new --------------------------------------------

@pytest.mark.parametrize("session_id", ["s1", None])
def test_a_resent_event_id_is_not_read_again_whatever_its_timestamp(memory, ledger, session_id):
    add_events(memory, [event("e1", "I live in Pune", BEFORE)], session_id)
    add_events(memory, [event("e2", "thanks, that's all", BEFORE + 60)], session_id)
    before = event_count(ledger)
    add_events(memory, [event("e1", "we just moved to Lisbon", BEFORE + 3600)], session_id)
    assert event_count(ledger) == before
    assert values(memory) == {"home_city": "Pune"}


def test_a_deleted_fact_does_not_come_back_through_a_resent_event(memory, ledger):
    add_events(memory, [event("e1", "I live in Pune", BEFORE)])
    add_events(memory, [event("e2", "thanks", BEFORE + 60)])
    (city,) = search(memory)
    run(memory.delete_memory(app_name="mealkit", user_id="priya", memory_id=city.id))
    add_events(memory, [event("e1", "I live in Pune", BEFORE + 7200)])
    run(memory.add_session_to_memory(session("s1", [event("e1", "I live in Pune", AFTER)])))
    assert search(memory) == []


def test_a_session_added_again_reads_only_events_with_new_ids(memory, ledger):
    first = [event("e1", "I'm vegetarian", BEFORE), event("a1", "Noted.", BEFORE + 1, "agent")]
    run(memory.add_session_to_memory(session("s1", first)))
    # A rewritten history (first event gone, a re-stamped copy of a1) and one new turn.
    later = [event("a1", "Noted.", AFTER), event("e2", "I live in Pune", BEFORE + 120)]
    run(memory.add_session_to_memory(session("s1", later)))
    assert values(memory) == {"diet": "vegetarian", "home_city": "Pune"}
    ingested = ledger.lookup.session_state("mealkit", "priya", "s1")
    assert ingested["ingestions"] == 2 and ingested["events_read"] == 3


# --- after a "forget me", the live session keeps working ------------------------------------

def test_after_delete_memory_the_live_session_ingests_only_later_turns(memory, ledger):
    turns = [event("e1", "I live in Pune", BEFORE), event("a1", "Noted.", BEFORE + 1, "agent"),
             event("e2", "I'm vegetarian", BEFORE + 2)]
    run(memory.add_session_to_memory(session("live", turns)))
    run(memory.delete_memory(app_name="mealkit", user_id="priya"))
    assert search(memory) == []
    turns.append(event("e3", "please forget everything about me", BEFORE + 3))   # said before it
    run(memory.add_session_to_memory(session("live", turns)))      # no exception reaches the agent
    assert search(memory) == []
    turns.append(event("e4", "we just moved to Lisbon", AFTER))
    run(memory.add_session_to_memory(session("live", turns)))
    assert values(memory) == {"home_city": "Lisbon"}
    run(memory.add_session_to_memory(session("live", turns)))      # again: nothing new
    # An erased event re-sent with a later timestamp stays erased.
    add_events(memory, [event("e2", "I'm vegetarian", AFTER + 60)], "live")
    add_events(memory, [event("e1", "I live in Pune", AFTER + 60)], "live")
    assert values(memory) == {"home_city": "Lisbon"}


def test_a_session_forgotten_through_the_library_goes_on_with_its_later_turns(memory, ledger):
    turns = [event("e1", "I live in Pune", BEFORE)]
    run(memory.add_session_to_memory(session("s9", turns)))
    ledger.forget("mealkit", "priya", session="s9", reason="test")
    turns.append(event("e2", "I'm vegan", AFTER))
    run(memory.add_session_to_memory(session("s9", turns)))
    assert values(memory) == {"diet": "vegan"}


def test_a_second_erasure_erases_what_came_after_the_first(memory):
    turns = [event("e1", "I live in Pune", BEFORE)]
    run(memory.add_session_to_memory(session("live", turns)))
    run(memory.delete_memory(app_name="mealkit", user_id="priya"))
    turns.append(event("e2", "I'm vegan", AFTER))
    run(memory.add_session_to_memory(session("live", turns)))
    assert values(memory) == {"diet": "vegan"}
    run(memory.delete_memory(app_name="mealkit", user_id="priya"))
    run(memory.add_session_to_memory(session("live", turns)))
    assert search(memory) == []


def test_the_erasure_names_no_event_or_session_in_clear(memory, ledger):
    run(memory.add_session_to_memory(session("chat-42", [event("evt-secret-1", "I live in Pune", BEFORE)])))
    run(memory.delete_memory(app_name="mealkit", user_id="priya"))
    (body,) = [row[0] for row in ledger._conn.execute("SELECT body FROM events WHERE type = 'Redacted'")]
    assert '"event_hashes"' in body
    assert "evt-secret-1" not in body and "chat-42" not in body and "priya" not in body


def test_a_session_ingested_by_the_library_continues_by_id_in_the_service(memory, ledger):
    turns = [event("e1", "I live in Pune", BEFORE), event("e2", "thanks", BEFORE + 1)]
    data = session("s1", turns).model_dump(mode="json", by_alias=True, exclude_none=True)
    ledger.ingest_session(data, extractor="patterns")          # no event ids recorded: a watermark
    count = event_count(ledger)
    run(memory.add_session_to_memory(session("s1", turns)))
    assert event_count(ledger) == count
    turns.append(event("e3", "I'm vegan", BEFORE + 2))
    run(memory.add_session_to_memory(session("s1", turns)))
    assert values(memory) == {"home_city": "Pune", "diet": "vegan"}


# --- reserved names cannot be reached from a caller's ids ------------------------------------

@pytest.mark.parametrize("reserved", ["_domain", "_erasures", "_checkpoints", "erased:0123456789abcdef", "~_domain"])
def test_a_user_named_like_a_reserved_partition_is_an_ordinary_user(memory, ledger, reserved):
    run(memory.add_session_to_memory(session("s1", [event("e1", "I live in Pune", BEFORE)],
                                             user=reserved)))
    assert values(memory, user=reserved) == {"home_city": "Pune"}
    assert values(memory, user="bob") == {}                  # not shared with the app's users
    assert ledger.facts("mealkit", "_domain") == []
    assert ledger.facts("mealkit", "~" + reserved)          # filed under the escaped name
    run(memory.delete_memory(app_name="mealkit", user_id=reserved))
    assert values(memory, user=reserved) == {}


def test_an_app_named_like_a_reserved_app_is_an_ordinary_app(memory, ledger):
    run(memory.add_session_to_memory(session("s1", [event("e1", "I live in Pune", BEFORE)], app="_all")))
    assert values(memory, app="_all") == {"home_city": "Pune"}
    assert ledger.facts("~_all", "priya")


# --- an id the service returned can always be deleted by the same caller ---------------------

def shared_fact(ledger, value="Mumbai"):
    """An app-wide fact in the `_domain` partition, served to every user of the app."""
    return ledger.observe(make_candidate(
        app="mealkit", user="_domain", predicate="home_city", value=value, quote=f"ships from {value}",
        session="ops", evidence_event="ops-1", said_at="2026-11-01T00:00:00Z", author="document",
        basis="verified")).fact_id


def test_an_app_wide_fact_in_a_users_results_is_refused_and_stays(memory, ledger):
    fact_id = shared_fact(ledger)
    served = {m.id for m in search(memory)}
    assert fact_id in served
    with pytest.raises(SharedMemory, match="app-wide"):
        run(memory.delete_memory(app_name="mealkit", user_id="priya", memory_id=fact_id))
    assert fact_id in {m.id for m in search(memory, user="bob")}    # not the user's to erase
    assert ledger.facts("mealkit", "_domain")


def test_every_own_id_search_returned_deletes_without_error(memory, ledger):
    shared = shared_fact(ledger)
    run(memory.add_session_to_memory(session("s1", [event("e1", "I live in Pune", BEFORE),
                                                    event("e2", "I'm vegan", BEFORE + 1)])))
    returned = [m.id for m in search(memory) if m.id != shared]
    assert len(returned) == 2
    for memory_id in returned:
        run(memory.delete_memory(app_name="mealkit", user_id="priya", memory_id=memory_id))
        run(memory.delete_memory(app_name="mealkit", user_id="priya", memory_id=memory_id))  # again
    run(memory.delete_memory(app_name="mealkit", user_id="priya"))
    for memory_id in returned:                       # after the whole user: still no error
        run(memory.delete_memory(app_name="mealkit", user_id="priya", memory_id=memory_id))


def test_an_id_from_another_partition_is_not_found_and_not_revealed(memory):
    run(memory.add_session_to_memory(session("s1", [event("e1", "I live in Pune", BEFORE)], user="arjun")))
    (theirs,) = search(memory, user="arjun")
    with pytest.raises(MemoryNotFound) as foreign:
        run(memory.delete_memory(app_name="mealkit", user_id="priya", memory_id=theirs.id))
    with pytest.raises(MemoryNotFound) as unknown:
        run(memory.delete_memory(app_name="mealkit", user_id="priya", memory_id="no-such-id"))
    assert str(foreign.value).replace(theirs.id, "ID") == str(unknown.value).replace("no-such-id", "ID")
    with pytest.raises(MemoryNotFound):
        run(memory.delete_memory(app_name="other-app", user_id="arjun", memory_id=theirs.id))
    assert values(memory, user="arjun") == {"home_city": "Pune"}


# --- one normalisation of ids at the boundary ------------------------------------------------

@pytest.mark.parametrize("stored, asked", [(" bob ", "bob"), ("bob", "\tbob "),
                                           ("jose\u0301", "jos\u00e9"), ("jos\u00e9", "jose\u0301")])
def test_user_ids_round_trip_in_any_spelling_google_adk_accepts(memory, stored, asked):
    run(memory.add_session_to_memory(session(" s1 ", [event("e1", "I live in Pune", BEFORE)], user=stored)))
    add_events(memory, [event("e2", "I'm vegan", BEFORE + 1)], session_id="s1", user=asked)
    assert values(memory, user=asked) == {"home_city": "Pune", "diet": "vegan"}
    assert values(memory, user=stored) == {"home_city": "Pune", "diet": "vegan"}
    run(memory.delete_memory(app_name=" mealkit", user_id=asked))
    assert values(memory, user=stored) == {}


@pytest.mark.parametrize("bad", ["x" * 201, "_" + "x" * 200, "   ", "a\u0000b", "a\u202eb"])
def test_an_id_that_cannot_name_a_partition_is_a_clear_value_error(memory, bad):
    with pytest.raises(InvalidId) as raised:
        run(memory.search_memory(app_name="mealkit", user_id=bad, query="x"))
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, LedgerError)
    assert "user_id" in str(raised.value)
    with pytest.raises(InvalidId):
        run(memory.add_session_to_memory(session("s1", [event("e1", "I live in Pune", BEFORE)], user=bad)))
    with pytest.raises(InvalidId):
        run(memory.delete_memory(app_name="mealkit", user_id="priya", memory_id=bad))


def test_the_longest_id_is_accepted(memory):
    longest = "u" * 200
    run(memory.add_session_to_memory(session("s1", [event("e1", "I live in Pune", BEFORE)], user=longest)))
    assert values(memory, user=longest) == {"home_city": "Pune"}


# --- typed errors ------------------------------------------------------------------------------

def test_a_corrupt_file_is_refused_with_a_value_error(tmp_path):
    bad = tmp_path / "corrupt.db"
    bad.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    with pytest.raises(CorruptLedger) as raised:
        LedgerMemoryService(bad)
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, LedgerError)
    with pytest.raises(CorruptLedger):
        LedgerMemoryService(tmp_path)                 # a directory


def test_a_service_opened_from_a_path_closes_its_ledger(tmp_path):
    memory = LedgerMemoryService(tmp_path / "owned.db", create=True)
    run(memory.add_session_to_memory(session("s1", [event("e1", "I live in Pune", BEFORE)])))
    run(memory.close())
    with Ledger(tmp_path / "owned.db") as reopened:
        assert [f["value"] for f in reopened.facts("mealkit", "priya")] == ["Pune"]


def test_memory_not_found_is_a_value_error_and_a_ledger_error():
    assert issubclass(MemoryNotFound, ValueError) and issubclass(MemoryNotFound, LedgerError)


def test_events_without_an_id_are_read_once(memory, ledger):
    nameless = [event("", "I live in Pune", BEFORE), event("", "I'm vegan", BEFORE + 1)]
    run(memory.add_session_to_memory(session("s1", nameless)))
    count = event_count(ledger)
    run(memory.add_session_to_memory(session("s1", nameless)))
    add_events(memory, nameless)
    assert event_count(ledger) == count
    assert values(memory) == {"home_city": "Pune", "diet": "vegan"}


def test_an_empty_session_is_accepted(memory, ledger):
    run(memory.add_session_to_memory(session("empty", [])))
    add_events(memory, [])
    assert event_count(ledger) == 0
