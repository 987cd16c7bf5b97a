"""Watermarks: re-ingestion appends nothing, a grown session ingests only its tail, a failure
mid-session writes nothing, and the sessions projection folds like every other."""

from __future__ import annotations

import pytest

from factledger.ledger import Ledger, LedgerError
from factledger.ledger.ingest.extractor import Extraction
from factledger.ledger.ingest.patterns import PatternsExtractor
from factledger.projections.runner import Projector
from factledger.projections.sessions import SessionsProjection
from tests.ingest.helpers import adk_event, adk_session, event_count, types

FIRST = [adk_event("e1", "user", "I'm vegetarian, and we're in Pune.", at="2026-08-30T09:00:00Z"),
         adk_event("e2", "meal_agent", "Noted!", at="2026-08-30T09:00:05Z")]
MORE = [adk_event("e3", "user", "We moved to Bengaluru.", at="2026-09-30T09:00:00Z"),
        adk_event("e4", "meal_agent", "Welcome!", at="2026-09-30T09:00:05Z")]


def test_reingesting_appends_nothing(ledger):
    first = ledger.ingest_session(adk_session(FIRST), extractor="patterns")
    assert first.status == "ingested" and first.counts["applied:insert"] == 2
    before = event_count(ledger)
    again = ledger.ingest_session(adk_session(FIRST), extractor="patterns")
    assert again.status == "unchanged" and event_count(ledger) == before


def test_a_grown_session_ingests_only_its_tail(ledger):
    ledger.ingest_session(adk_session(FIRST), extractor="patterns")
    seen = []

    class Spy(PatternsExtractor):
        def extract(self, delta, context):
            seen.append([e.id for e in delta.events])
            return super().extract(delta, context)

    result = ledger.ingest_session(adk_session(FIRST + MORE), extractor=Spy())
    assert seen == [["e3", "e4"]]
    assert result.events_read == 2 and result.counts["applied:supersede"] == 1
    (row,) = ledger.sessions("app", "u1")
    assert (row["watermark"], row["ingestions"], row["events_read"], row["applied"]) == ("e4", 2, 4, 3)
    assert [f["value"] for f in ledger.facts("app", "u1", include_sensitive=True)
            if f["predicate"] == "home_city"] == ["Bengaluru"]


def test_trailing_partial_event_does_not_move_the_watermark(ledger):
    partial = adk_event("e3", "user", "We moved to Beng", at="2026-09-30T09:00:00Z", partial=True)
    ledger.ingest_session(adk_session(FIRST + [partial]), extractor="patterns")
    assert ledger.lookup.session_state("app", "u1", "s1")["watermark"] == "e2"
    result = ledger.ingest_session(adk_session(FIRST + MORE), extractor="patterns")
    assert result.counts["applied:supersede"] == 1


def test_watermark_event_gone_falls_back_to_its_timestamp(ledger):
    ledger.ingest_session(adk_session(FIRST), extractor="patterns")
    compacted = [adk_event("summary", "meal_agent", "(summary)", at="2026-08-30T09:00:01Z")] + MORE
    seen = []

    class Spy(PatternsExtractor):
        def extract(self, delta, context):
            seen.append([e.id for e in delta.events])
            return super().extract(delta, context)

    ledger.ingest_session(adk_session(compacted), extractor=Spy())
    assert seen == [["e3", "e4"]]


def test_a_crash_mid_session_writes_nothing_and_the_retry_ingests_it(ledger):
    class Boom(PatternsExtractor):
        def extract(self, delta, context):
            extraction = super().extract(delta, context)
            extraction.proposals.append(None)          # breaks halfway through the appends
            return extraction

    with pytest.raises(AttributeError):
        ledger.ingest_session(adk_session(FIRST), extractor=Boom())
    assert event_count(ledger) == 0 and ledger.lookup.session_state("app", "u1", "s1") is None
    assert ledger.ingest_session(adk_session(FIRST), extractor="patterns").status == "ingested"


def test_one_session_is_one_transaction(ledger):
    ledger.ingest_session(adk_session(FIRST), extractor="patterns")
    stamps = {r[0] for r in ledger._conn.execute("SELECT recorded_at FROM events")}
    assert len(stamps) == 1
    assert types(ledger) == ["FactObserved", "FactObserved", "SessionIngested"]


def test_empty_extraction_still_moves_the_watermark(ledger):
    class Nothing:
        name, model = "nothing", None

        def extract(self, delta, context):
            return Extraction()

    result = ledger.ingest_session(adk_session(FIRST), extractor=Nothing())
    assert result.status == "ingested" and types(ledger) == ["SessionIngested"]


def test_partition_must_agree_with_the_session(ledger):
    with pytest.raises(LedgerError, match="belongs to user 'u1', not 'someone'"):
        ledger.ingest_session(adk_session(FIRST), user="someone", extractor="patterns")
    with pytest.raises(LedgerError, match="names no user"):
        ledger.ingest_session(adk_session(FIRST, user=None), extractor="patterns")
    assert event_count(ledger) == 0
    ledger.ingest_session(adk_session(FIRST, user=None), user="u9", extractor="patterns")
    assert ledger.sessions("app", "u9")[0]["session"] == "s1"


def test_sessions_projection_rebuilds_equal_to_live_and_clears_per_partition(tmp_path, clock):
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        ledger.ingest_session(adk_session(FIRST), extractor="patterns")
        ledger.ingest_session(adk_session(FIRST, user="u2"), extractor="patterns")
        assert ledger.replay_differences() == []
        projection = SessionsProjection()
        assert all("app" in ddl and "user" in ddl for ddl in projection.schema.split("CREATE TABLE")[1:])
        with ledger.transaction():
            Projector().rebuild(ledger._conn, app="app", user="u1")
        assert ledger.replay_differences() == []
        assert len(ledger.sessions("app", "u1")) == 1 and len(ledger.sessions("app", "u2")) == 1


def test_concurrent_writer_moving_the_watermark_is_noticed(tmp_path, clock):
    """Another process ingests the same session between our extraction and our transaction."""
    path = tmp_path / "l.db"
    with Ledger(path, clock=clock, create=True) as ours, Ledger(path, clock=clock, create=True) as theirs:
        class Racing(PatternsExtractor):
            raced = False

            def extract(self, delta, context):
                if not Racing.raced:
                    Racing.raced = True
                    theirs.ingest_session(adk_session(FIRST), extractor="patterns")
                return super().extract(delta, context)

        result = ours.ingest_session(adk_session(FIRST), extractor=Racing())
        assert result.status == "unchanged"
        assert types(ours).count("FactObserved") == 2


def test_the_extractor_context_reads_open_facts_only_when_asked(ledger, monkeypatch):
    monkeypatch.setattr(ledger, "facts", lambda *a, **k: pytest.fail("ledger.facts was called"))
    statements: list[str] = []
    ledger._conn.set_trace_callback(statements.append)
    ledger.ingest_session(adk_session(FIRST), extractor="patterns")
    ledger._conn.set_trace_callback(None)
    assert not [s for s in statements if "SELECT subject, predicate, value FROM facts_current" in s]
    seen = []

    class Asking(PatternsExtractor):
        def extract(self, delta, context):
            seen.append(context.current)
            return super().extract(delta, context)

    ledger.ingest_session(adk_session(FIRST + MORE), extractor=Asking())
    assert seen == [({"subject": "user", "predicate": "diet", "value": "vegetarian"},
                     {"subject": "user", "predicate": "home_city", "value": "Pune"})]
