"""A statement dated in the future is refused: observe, ingestion, batches, the ADK service.

Before the check, `--said-at 2099-01-01` (or a session event's timestamp) was accepted, became
current, rejected every true update as `older_than_current`, and recall said "(stated 2099-01-01)".
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger, LedgerError
from tests.conftest import cand
from tests.ingest.helpers import adk_event, adk_session, event_count, write_json

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
NOW = "2026-11-01T00:00:00Z"                   # the conftest clock


def test_observe_in_the_future_is_refused_and_nothing_is_written(ledger):
    with pytest.raises(LedgerError, match=r"said_at 2099-01-01T00:00:00\.000000Z is in the future"):
        ledger.observe(cand(said_at="2099-01-01"))
    assert event_count(ledger) == 0
    later = ledger.observe(cand(value="vegan", said_at="2026-10-01"))
    assert later.decision == "insert"                     # a true statement is not blocked


def test_the_default_tolerance_is_one_day(ledger):
    assert ledger.observe(cand(said_at="2026-11-01T23:59:59Z")).decision == "insert"
    assert ledger.observe(cand(value="x", session="s2", said_at="2026-11-02T00:00:00Z")).decision
    with pytest.raises(LedgerError, match="plus 1 day"):
        ledger.observe(cand(value="y", session="s3", said_at="2026-11-02T00:00:00.000001Z"))


@pytest.mark.parametrize("tolerance,accepted,refused", [
    (0, "2026-11-01T00:00:00Z", "2026-11-01T00:00:01Z"),
    ("6h", "2026-11-01T06:00:00Z", "2026-11-01T06:00:01Z"),
    (timedelta(days=3), "2026-11-04", "2026-11-04T00:00:01Z"),
    ("100y", "2099-01-01", "2126-12-01"),
])
def test_the_tolerance_is_configurable(tmp_path, clock, tolerance, accepted, refused):
    with Ledger(tmp_path / "t.db", clock=clock, future_tolerance=tolerance, create=True) as ledger:
        assert ledger.observe(cand(said_at=accepted)).decision == "insert"
        with pytest.raises(LedgerError, match="in the future"):
            ledger.observe(cand(value="later", session="s9", said_at=refused))


@pytest.mark.parametrize("bad", ["-1d", "soon", "1e400", timedelta(days=-1), float("nan")])
def test_a_bad_tolerance_is_bad_input(tmp_path, bad):
    with pytest.raises(LedgerError):
        Ledger(tmp_path / "t.db", future_tolerance=bad, create=True)


def test_a_batch_with_one_future_candidate_writes_nothing(ledger):
    with pytest.raises(LedgerError, match="2099"):
        ledger.observe_many([cand(value="a"), cand(value="b", said_at="2099-01-01"), cand(value="c")])
    assert event_count(ledger) == 0


def future_session(session_id="bad", at="2099-01-01T00:00:00Z"):
    return adk_session([adk_event("e1", "user", "I'm vegetarian", at="2026-08-30T09:00:00Z"),
                        adk_event("e2", "user", "we live in Pune", at=at)], session_id=session_id)


def test_ingestion_fails_a_session_with_a_future_event_and_writes_nothing(ledger):
    with pytest.raises(LedgerError, match=r"session bad: event e2 timestamp 2099-01-01.*in the future"):
        ledger.ingest_session(future_session(), extractor="patterns")
    assert event_count(ledger) == 0
    assert ledger.lookup.session_state("app", "u1", "bad") is None


def test_ingest_cli_names_the_failed_session_and_ingests_the_others(tmp_path, monkeypatch):
    monkeypatch.setenv("FACTLEDGER_NOW", NOW)
    folder = tmp_path / "sessions"
    folder.mkdir()
    write_json(folder / "bad.json", future_session())
    write_json(folder / "good.json", adk_session([adk_event("g1", "user", "I'm vegan")], session_id="good"))
    db = tmp_path / "c.db"
    result = CliRunner().invoke(cli, ["--db", str(db), "ingest", str(folder), "--create", "--json"])
    assert result.exit_code == 1, result.output
    summary = json.loads(result.stdout)
    assert (summary["ingested"], summary["failed"]) == (1, 1)
    failure = summary["failures"][0]
    assert failure["session"] == "bad" and "2099-01-01" in failure["error"], failure
    assert "Error: " in result.stderr and "2099-01-01" in result.stderr
    with Ledger(db) as ledger:
        sessions = {row["session"] for row in ledger.sessions("app", "u1")}
        assert sessions == {"good"}
        assert all(e["body"].get("session") != "bad" for e in ledger.log() if e["body"])


def cli_observe(db, said_at, *extra, env=None):
    return subprocess.run(
        [FACTLEDGER, "--db", str(db), *extra, "observe", "--app", "a", "--user", "u", "--predicate",
         "diet", "--value", "vegan", "--quote", "I'm vegan", "--session", "s1", "--event-id", "e1",
         "--said-at", said_at, "--create"],
        capture_output=True, text=True, env=dict(os.environ, FACTLEDGER_NOW=NOW, **(env or {})))


def test_observe_cli_exits_1_naming_the_time(tmp_path):
    db = tmp_path / "o.db"
    done = cli_observe(db, "2099-01-01")
    assert done.returncode == 1 and done.stderr.startswith("Error: ")
    assert "2099-01-01T00:00:00.000000Z" in done.stderr and "Traceback" not in done.stderr
    assert not db.exists()              # the refused write's --create leaves no ledger behind


def test_observe_cli_tolerance_by_option_and_environment(tmp_path):
    assert cli_observe(tmp_path / "1.db", "2026-11-03", "--future-tolerance", "3d").returncode == 0
    assert cli_observe(tmp_path / "2.db", "2026-11-03",
                       env={"FACTLEDGER_FUTURE_TOLERANCE": "3d"}).returncode == 0
    assert cli_observe(tmp_path / "3.db", "2026-11-01T00:00:01Z",
                       env={"FACTLEDGER_FUTURE_TOLERANCE": "0"}).returncode == 1
    bad = cli_observe(tmp_path / "4.db", "2026-10-01", "--future-tolerance", "forever")
    assert bad.returncode == 1 and bad.stderr.startswith("Error: ") and "future-tolerance" in bad.stderr


def test_adk_add_memory_from_the_future_is_refused(ledger):
    pytest.importorskip("google.adk")
    from google.adk.memory.memory_entry import MemoryEntry
    from google.genai import types

    from factledger.adk import LedgerMemoryService

    entry = MemoryEntry(id="m1", author="user", timestamp="2099-01-01T00:00:00Z",
                        content=types.Content(role="user", parts=[types.Part(text="I'm vegan")]),
                        custom_metadata={"predicate": "diet", "value": "vegan"})
    with pytest.raises(LedgerError, match="in the future"):
        asyncio.run(LedgerMemoryService(ledger).add_memory(app_name="app", user_id="u1", memories=[entry]))
    assert event_count(ledger) == 0


def test_adk_add_session_with_a_future_event_is_refused(ledger):
    pytest.importorskip("google.adk")
    from google.adk.sessions import Session

    from factledger.adk import LedgerMemoryService

    session = Session.model_validate(future_session("adk-future"))
    with pytest.raises(LedgerError, match="adk-future.*in the future"):
        asyncio.run(LedgerMemoryService(ledger).add_session_to_memory(session))
    assert event_count(ledger) == 0
