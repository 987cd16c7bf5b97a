"""Text that is not valid Unicode is refused with `Error: ...` on every ingestion path (issue 47
item 6).

A lone surrogate (Python's stand-in for bytes that are not UTF-8, or a `\\ud800` escape) has no
encoding: in an ADK event's text it failed deep in the append with a bare `TypeError`, in a
google-adk `MemoryEntry` with a `UnicodeEncodeError`, in a recall query inside the encoder. Each
path below now refuses it as a `LedgerError` naming the field, and nothing is written. The MCP
tools are tests/mcp/test_mcp_hostile.py; the CLI's arguments are refused by `LedgerGroup`.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from factledger.ledger import Ledger, LedgerError, make_candidate
from factledger.ledger.ingest.formats import parse_jsonl
from tests.conftest import cand

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
BAD = "Pune\ud800"


def adk_session(text="I live in Pune", author="user") -> dict:
    return {"id": "s1", "appName": "app", "userId": "u1", "events": [{
        "id": "e1", "author": author, "timestamp": 1788080400.0, "content": {"parts": [{"text": text}]}}]}


@pytest.mark.parametrize("session", [adk_session(text=f"I live in {BAD}"), adk_session(author="us\udc80er"),
                                     {**adk_session(), "id": "s\ud800"}, {**adk_session(), "userId": BAD}],
                         ids=["text", "author", "session id", "user id"])
def test_an_adk_session_with_a_lone_surrogate_is_refused(tmp_path, session):
    with Ledger(tmp_path / "l.db", create=True) as ledger:
        with pytest.raises(LedgerError, match="lone surrogate"):
            ledger.ingest_session(session, extractor="patterns")
        assert ledger.head()[0] == 0


def test_a_jsonl_transcript_with_a_lone_surrogate_is_refused():
    text = ('{"session": "s3", "app": "app", "user": "u1"}\n'
            '{"id": "e1", "author": "user", "timestamp": "2026-08-01T00:00:00Z", "text": "I live in ' + BAD + '"}\n')
    with pytest.raises(LedgerError, match="surrogate"):
        parse_jsonl(text)


def test_a_candidate_with_a_lone_surrogate_is_refused(tmp_path):
    with Ledger(tmp_path / "l.db", create=True) as ledger:
        for field in ("value", "quote", "session"):
            with pytest.raises(LedgerError, match="lone surrogate|not valid Unicode|control or format"):
                ledger.observe(cand(**{field: BAD}))
        with pytest.raises(LedgerError, match="not valid Unicode"):
            make_candidate(app="app", user="u1", predicate="home_city", value=BAD, quote=f"I live in {BAD}",
                           session="s", evidence_event="e", said_at="2026-08-01T00:00:00Z")
        with pytest.raises(LedgerError, match="not valid Unicode"):
            ledger.recall("app", "u1", f"where do I live{BAD}")
        assert ledger.head()[0] == 0


def test_the_google_adk_service_refuses_a_lone_surrogate_on_every_write_and_search(tmp_path):
    pytest.importorskip("google.adk")
    from google.adk.events import Event
    from google.adk.memory.memory_entry import MemoryEntry
    from google.adk.sessions import Session
    from google.genai import types

    from factledger.adk import LedgerMemoryService

    with Ledger(tmp_path / "l.db", create=True) as ledger:
        service = LedgerMemoryService(ledger)
        event = Event(id="e1", author="user", timestamp=1788080400.0,
                      content=types.Content(role="user", parts=[types.Part(text=f"I live in {BAD}")]))
        entry = MemoryEntry(content=types.Content(role="user", parts=[types.Part(text=f"home_city: {BAD}")]))
        calls = [service.add_session_to_memory(Session(id="s5", app_name="app", user_id="u1", events=[event])),
                 service.add_events_to_memory(app_name="app", user_id="u1", events=[event]),
                 service.add_memory(app_name="app", user_id="u1", memories=[entry]),
                 service.search_memory(app_name="app", user_id="u1", query=f"where{BAD}")]
        for call in calls:
            with pytest.raises(LedgerError):
                asyncio.run(call)
        assert ledger.head()[0] == 0


def test_files_with_bytes_that_are_not_utf8_or_lone_surrogate_escapes_are_refused(tmp_path):
    """Sessions files, candidates files and an export to import: `Error: ...`, exit 1."""
    db = tmp_path / "l.db"
    subprocess.run([FACTLEDGER, "--db", str(db), "init"], check=True, capture_output=True)
    escaped = tmp_path / "escaped.json"
    escaped.write_text('{"id": "s1", "appName": "app", "userId": "u1", "events": [{"id": "e1", "author": "user", '
                       '"timestamp": 1788080400.0, "content": {"parts": [{"text": "I live in Pune\\ud800"}]}}]}')
    raw = tmp_path / "raw.json"
    raw.write_bytes(escaped.read_bytes().replace(b"\\ud800", b"\xed\xa0\x80"))
    candidates = tmp_path / "c.jsonl"
    candidates.write_text('{"predicate": "home_city", "value": "Pune\\ud800", "quote": "I live in Pune\\ud800", '
                          '"evidence_event": "e1"}\n')
    export = tmp_path / "x.jsonl"
    export.write_text('{"format": "factledger-log/1", "complete": true, "head": null}\n'
                      '{"seq": 1, "body": "\\ud800"}\n')
    for args in (["ingest", str(escaped), "--extractor", "patterns"], ["ingest", str(raw), "--extractor", "patterns"],
                 ["ingest", str(escaped), "--candidates", str(candidates)],
                 ["--db", str(tmp_path / "new.db"), "import", str(export)]):
        if args[0] != "--db":
            args = ["--db", str(db), *args]
        done = subprocess.run([FACTLEDGER, *args], capture_output=True, text=True)
        assert done.returncode == 1, (args, done.stderr)
        assert done.stderr.strip().splitlines()[-1].startswith("Error: "), (args, done.stderr)
        assert "Traceback" not in done.stderr
    head = subprocess.run([FACTLEDGER, "--db", str(db), "head"], capture_output=True, text=True).stdout
    assert head.startswith("0:")
    assert not (tmp_path / "new.db").exists()
