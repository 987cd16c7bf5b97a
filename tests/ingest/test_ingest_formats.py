"""Parsing ADK session JSON and JSONL transcripts; authorship; rendering; bad input."""

from __future__ import annotations

import json

import pytest

from factledger.ledger import LedgerError
from factledger.ledger.ingest.formats import parse_adk, parse_jsonl, parse_text
from factledger.ledger.ingest.session import tail
from factledger.ledger.ingest.sources import load
from tests.ingest.helpers import SESSIONS, adk_event, adk_session, write_json, write_jsonl


def test_adk_camel_and_snake_case_parse_the_same():
    camel = adk_session([adk_event("e1", "user", "I'm vegetarian")])
    snake = {"id": "s1", "app_name": "app", "user_id": "u1", "events": camel["events"]}
    a, b = parse_adk(camel), parse_adk(snake)
    assert (a.id, a.app, a.user) == (b.id, b.app, b.user) == ("s1", "app", "u1")
    assert a.events == b.events
    assert a.events[0].said_at == "2026-08-30T09:00:00.000000Z"


def test_a_session_as_google_adk_serialises_it():
    adk = pytest.importorskip("google.adk.sessions")
    from google.adk.events import Event
    from google.genai import types

    session = adk.Session(id="s9", app_name="mealkit", user_id="priya", events=[
        Event(id="e1", author="user", invocation_id="i", timestamp=1788080000.25,
              content=types.Content(role="user", parts=[types.Part(text="I'm vegetarian")])),
        Event(id="e2", author="search_agent", invocation_id="i", timestamp=1788080001.0,
              content=types.Content(role="user", parts=[types.Part(
                  function_response=types.FunctionResponse(name="search", response={"r": "x"}))])),
        Event(id="e3", author="helper", invocation_id="i", timestamp=1788080002.0,
              content=types.Content(role="model", parts=[types.Part(text="Noted.")])),
    ])
    for dumped in (session.model_dump(mode="json", by_alias=True),
                   session.model_dump(mode="json")):
        parsed = parse_adk(dumped)
        assert (parsed.app, parsed.user) == ("mealkit", "priya")
        assert [(e.id, e.author) for e in parsed.events] == [
            ("e1", "user"), ("e2", "tool"), ("e3", "agent")]


def test_author_mapping_and_document_marker():
    s = parse_adk(adk_session([
        adk_event("u", "user", "hello"),
        adk_event("a", "meal_agent", "hi"),
        adk_event("t", "meal_agent", tool=True),
        adk_event("d", "ward_assistant", "Start metoprolol tartrate 25 mg",
                  metadata={"factledger_author": "document"}),
    ]))
    assert [e.author for e in s.events] == ["user", "agent", "tool", "document"]
    with pytest.raises(LedgerError, match="factledger_author"):
        parse_adk(adk_session([adk_event("x", "agent", "hi", metadata={"factledger_author": "user"})]))


def test_rendering_skips_partial_and_textless_events_and_hides_tool_results():
    s = parse_adk(adk_session([
        adk_event("e1", "user", "I'm  vegetarian,\n and we're in Pune"),
        adk_event("e2", "agent", "typing...", partial=True),
        adk_event("e3", "agent"),                       # a function call: no text
        adk_event("e4", "agent", tool=True),
        adk_event("e5", "agent", "Noted."),
    ]))
    delta = tail(s, None)
    assert delta.render().splitlines() == [
        "[e1] user: I'm vegetarian, and we're in Pune",
        "[e4] tool: tool result omitted",
        "[e5] agent: Noted.",
    ]
    assert delta.read == 4 and delta.watermark.id == "e5"


def test_jsonl_transcript_with_header_and_authors(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", [
        {"session": "deploy-a", "app": "deploybot", "user": "team"},
        {"id": "a1", "author": "user", "timestamp": "2026-06-01T09:00:00Z", "text": "hi"},
        {"id": "a2", "author": "deploy_assistant", "timestamp": 1780304405, "text": "hello"},
        {"id": "a3", "author": "tool", "timestamp": 1780304406, "text": "runbook"},
        {"id": "a4", "author": "document", "timestamp": 1780304407, "text": "order"},
    ])
    (session,), errors = load([str(path)])
    assert not errors
    assert (session.id, session.app, session.user) == ("deploy-a", "deploybot", "team")
    assert [e.author for e in session.events] == ["user", "agent", "tool", "document"]


def test_jsonl_without_header_takes_the_file_name_as_session_id(tmp_path):
    path = write_jsonl(tmp_path / "chat-7.jsonl", [
        {"id": "a1", "author": "user", "timestamp": 1780304400, "text": "hi"}])
    (session,), _ = load([str(path)])
    assert session.id == "chat-7" and session.user is None


def test_stdin_sniffs_json_or_jsonl():
    adk = json.dumps(adk_session([adk_event("e1", "user", "hi")]))
    assert parse_text(adk, "<stdin>")[0].id == "s1"
    jsonl = '{"session": "x"}\n{"id": "e1", "author": "user", "timestamp": 1, "text": "hi"}\n'
    assert parse_text(jsonl, "<stdin>")[0].id == "x"


def test_bundled_examples_parse():
    sessions, errors = load([str(SESSIONS)])
    assert not errors
    assert len(sessions) == 9
    assert [s.started_at for s in sessions] == sorted(s.started_at for s in sessions)


BAD_ADK = [
    ("not json {", "not valid JSON"),
    (json.dumps({"appName": "a", "userId": "u", "events": []}), "has no id"),
    (json.dumps(adk_session([{"author": "user", "timestamp": 1}])), r"events\[0\]: the event has no id"),
    (json.dumps(adk_session([adk_event("e1", "user", "a"), adk_event("e1", "user", "b")])),
     "duplicate event id"),
    (json.dumps(adk_session([{"id": "e1", "author": "user", "timestamp": "2026-08-30"}])),
     "is not a number"),
    (json.dumps(adk_session([{"id": "e1", "author": "user", "timestamp": True}])), "is not a number"),
    (json.dumps(adk_session([{"id": "e1", "timestamp": 1}])), "has no author"),
    (json.dumps(adk_session([{"id": "e1", "author": "u", "timestamp": 1, "content": {"parts": [{"text": 5}]}}])),
     "text must be a string"),
]


@pytest.mark.parametrize("text,message", BAD_ADK)
def test_bad_adk_input_names_the_file(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    sessions, errors = load([str(path)])
    assert sessions == [] and len(errors) == 1
    assert str(path) in errors[0].error
    assert __import__("re").search(message, errors[0].error)


BAD_JSONL = [
    ('{"session": "s"}\n{"id": "e1", "author": "user", "timestamp": 1}\nnot json\n', "line 3", "not valid JSON"),
    ('{"session": "s"}\n{"author": "user", "timestamp": 1, "text": "x"}\n', "line 2", "no id"),
    ('{"session": "s"}\n{"id": "e1", "author": "user", "timestamp": 1}\n{"id": "e1", "author": "user", "timestamp": 2}\n',
     "line 3", "duplicate event id"),
    ('{"session": "s"}\n{"id": "e1", "author": "user", "timestamp": "yesterday"}\n', "line 2", "ISO 8601"),
    ('{"session": "s"}\n{"id": "e1", "author": "user", "timestamp": [1]}\n', "line 2", "not a number"),
    ('{"session": "s"}\n[1, 2]\n', "line 2", "JSON object"),
]


@pytest.mark.parametrize("text,line,message", BAD_JSONL)
def test_bad_jsonl_input_names_file_and_line(tmp_path, text, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(LedgerError) as err:
        parse_jsonl(text, str(path))
    assert str(path) in str(err.value) and line in str(err.value) and message in str(err.value)


def test_unreadable_file_in_a_directory_is_named_and_the_rest_load(tmp_path):
    write_json(tmp_path / "a.json", adk_session([adk_event("e1", "user", "hi")], session_id="a"))
    bad = tmp_path / "b.json"
    bad.write_bytes(b"\xff\xfe not utf-8")
    sessions, errors = load([str(tmp_path)])
    assert [s.id for s in sessions] == ["a"]
    assert len(errors) == 1 and str(bad) in errors[0].error


def test_a_sniffed_json_document_is_parsed_once(monkeypatch):
    import orjson

    import factledger.ledger.ingest.formats as formats

    calls, real = [], orjson.loads
    monkeypatch.setattr(formats.orjson, "loads", lambda text: calls.append(1) or real(text))
    (session,) = parse_text(json.dumps(adk_session([adk_event("e1", "user", "hi")])), "<stdin>")
    assert session.id == "s1" and len(calls) == 1
