"""Parsers for the two input forms: ADK session JSON and plain JSONL transcripts.

Both are strict about what the ledger relies on (ids, unique event ids, numeric timestamps) and
lenient about everything else ADK carries (actions, usage metadata ...), so a session dumped by
any google-adk version parses.  Every error names the source, and the line for JSONL, because the
person fixing it has a file open.

Authorship is decided here, once:
- ADK: author "user" -> user; an event carrying a functionResponse part -> tool; any other
  author (an agent's name) -> agent.  An application may mark an event as a document (a
  discharge order, a contract) with `customMetadata: {"factledger_author": "document"}` (or
  "tool"); the model cannot set this, only the application that builds the session.
- JSONL: `author` is `user`, `agent`, `tool` or `document`; any other name is an agent's name.
"""

from __future__ import annotations

import math

import orjson

from factledger.ledger.errors import LedgerError
from factledger.ledger.ingest.jsonl import json_lines
from factledger.ledger.ingest.session import Session, SessionEvent
from factledger.ledger.vocabulary.booleans import NotABoolean, strict_bool
from factledger.ledger.vocabulary.clock import from_epoch, normalise_time
from factledger.ledger.vocabulary.ids import normalise_id
from factledger.ledger.vocabulary.words import AUTHORS

METADATA_AUTHORS = ("document", "tool")
METADATA_KEY = "factledger_author"


def _ident(value, what: str, where: str) -> str:
    if not isinstance(value, str):
        raise LedgerError(f"{where}: {what} must be a string")
    try:
        return normalise_id(value, what)
    except ValueError as exc:
        raise LedgerError(f"{where}: {exc}") from None


def _optional_ident(value, what: str, where: str) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return _ident(value, what, where)


def _epoch(value, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise LedgerError(f"{where}: timestamp {value!r} is not a number (epoch seconds)")
    try:
        return from_epoch(value)
    except LedgerError as exc:
        raise LedgerError(f"{where}: {exc}") from None


def _flag(value, what: str, where: str) -> bool:
    try:
        return strict_bool(value, what, default=False)
    except NotABoolean as exc:
        raise LedgerError(f"{where}: {exc}") from None


def _unicode(text: str, what: str, where: str) -> str:
    """Text the ledger can store: a lone surrogate (Python's stand-in for bytes that are not
    UTF-8) has no encoding, and would fail deep in the append with a bare TypeError (issue 47)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise LedgerError(f"{where}: {what} is not valid Unicode text (lone surrogate)") from None
    return text


def _pick(data: dict, *names):
    for name in names:
        if name in data:
            return data[name]
    return None


# --- ADK ------------------------------------------------------------------------------------

def parse_adk(data, source: str = "<memory>") -> Session:
    """A session as google-adk serialises it (camelCase aliases or snake_case field names)."""
    if not isinstance(data, dict):
        raise LedgerError(f"{source}: an ADK session must be a JSON object")
    session_id = _pick(data, "id")
    if session_id is None or (isinstance(session_id, str) and not session_id.strip()):
        raise LedgerError(f"{source}: the session has no id")
    session_id = _ident(session_id, "session id", source)
    app = _optional_ident(_pick(data, "appName", "app_name"), "appName", source)
    user = _optional_ident(_pick(data, "userId", "user_id"), "userId", source)
    raw_events = data.get("events") or []
    if not isinstance(raw_events, list):
        raise LedgerError(f"{source}: events must be a list")
    events, seen = [], set()
    for index, raw in enumerate(raw_events):
        where = f"{source}: events[{index}]"
        if not isinstance(raw, dict):
            raise LedgerError(f"{where}: an event must be a JSON object")
        if raw.get("id") is None or (isinstance(raw.get("id"), str) and not raw["id"].strip()):
            raise LedgerError(f"{where}: the event has no id")
        event_id = _ident(raw["id"], "event id", where)
        where = f"{source}: events[{index}] (id {event_id})"
        if event_id in seen:
            raise LedgerError(f"{where}: duplicate event id")
        seen.add(event_id)
        if "timestamp" not in raw:
            raise LedgerError(f"{where}: the event has no timestamp")
        said_at = _epoch(raw["timestamp"], where)
        name = raw.get("author")
        if not isinstance(name, str) or not name.strip():
            raise LedgerError(f"{where}: the event has no author")
        _unicode(name, "author", where)
        text, tool_result = _adk_content(raw.get("content"), where)
        metadata = _pick(raw, "customMetadata", "custom_metadata") or {}
        marked = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
        if marked is not None and marked not in METADATA_AUTHORS:
            raise LedgerError(f"{where}: customMetadata.{METADATA_KEY} must be one of "
                              f"{', '.join(METADATA_AUTHORS)}")
        if marked:
            author = marked
        elif tool_result:
            author = "tool"
        elif name.strip() == "user":
            author = "user"
        else:
            author = "agent"
        events.append(SessionEvent(id=event_id, author=author, said_at=said_at, text=text,
                                   partial=_flag(raw.get("partial"), "partial", where), tool_result=tool_result,
                                   name=name.strip()))
    return Session(id=session_id, app=app, user=user, events=tuple(events), source=source, fmt="adk")


def _adk_content(content, where: str) -> tuple[str, bool]:
    """Text of the visible text parts (model thoughts are not said to anyone), and tool use."""
    if content is None:
        return "", False
    if not isinstance(content, dict):
        raise LedgerError(f"{where}: content must be an object")
    parts = content.get("parts") or []
    if not isinstance(parts, list):
        raise LedgerError(f"{where}: content.parts must be a list")
    texts, tool = [], False
    for part in parts:
        if not isinstance(part, dict):
            raise LedgerError(f"{where}: content.parts must hold objects")
        if _pick(part, "functionResponse", "function_response") is not None:
            tool = True
        text = part.get("text")
        if text is None or part.get("thought") is True:
            continue
        if not isinstance(text, str):
            raise LedgerError(f"{where}: a part's text must be a string")
        texts.append(_unicode(text, "a part's text", where))
    return "\n".join(t for t in texts if t.strip()), tool


# --- JSONL ----------------------------------------------------------------------------------

def parse_jsonl(text: str, source: str = "<memory>", default_id: str | None = None) -> Session:
    """A plain transcript: an optional header line, then one event a line (docs/ingestion.md, "Session formats")."""
    header: dict = {}
    events, seen = [], set()
    first = True
    for _number, where, obj in json_lines(text, source):
        if not isinstance(obj, dict):
            raise LedgerError(f"{where}: each line must be a JSON object")
        if first and "author" not in obj and "session" in obj:
            header = obj
            first = False
            continue
        first = False
        if obj.get("id") is None or (isinstance(obj.get("id"), str) and not obj["id"].strip()):
            raise LedgerError(f"{where}: the event has no id")
        event_id = _ident(obj["id"], "event id", where)
        if event_id in seen:
            raise LedgerError(f"{where}: duplicate event id {event_id!r}")
        seen.add(event_id)
        stamp = obj.get("timestamp")
        if isinstance(stamp, str):
            try:
                said_at = normalise_time(stamp)
            except LedgerError as exc:
                raise LedgerError(f"{where}: {exc}") from None
        elif stamp is None:
            raise LedgerError(f"{where}: the event has no timestamp")
        else:
            said_at = _epoch(stamp, where)
        name = obj.get("author")
        if not isinstance(name, str) or not name.strip():
            raise LedgerError(f"{where}: the event has no author")
        body = obj.get("text", "")
        if body is None:
            body = ""
        if not isinstance(body, str):
            raise LedgerError(f"{where}: text must be a string")
        _unicode(name, "author", where)
        _unicode(body, "text", where)
        partial = obj.get("partial", False)
        tool_result = obj.get("tool_result", False)
        if not isinstance(partial, bool) or not isinstance(tool_result, bool):
            raise LedgerError(f"{where}: partial and tool_result must be true or false")
        name = name.strip()
        author = name if name in AUTHORS else "agent"
        events.append(SessionEvent(id=event_id, author=author, said_at=said_at, text=body,
                                   partial=partial, tool_result=tool_result, name=name))
    session_id = header.get("session", default_id)
    if session_id is None or (isinstance(session_id, str) and not session_id.strip()):
        raise LedgerError(f"{source}: the session has no id (add a header line "
                          '{"session": "ID", "app": "A", "user": "U"})')
    return Session(
        id=_ident(session_id, "session id", source),
        app=_optional_ident(header.get("app"), "app", source),
        user=_optional_ident(header.get("user"), "user", source),
        events=tuple(events), source=source, fmt="jsonl")


_UNPARSED = object()


def parse_text(text: str, source: str, default_id: str | None = None, fmt: str | None = None) -> list[Session]:
    """Sessions in a file's text: ADK JSON (an object, or a list of them) or a JSONL transcript.

    With no `fmt`, a text whose first non-blank character opens a JSON document that parses
    whole is JSON; anything else is JSONL.
    """
    data = _UNPARSED
    if fmt is None:
        stripped = text.lstrip()
        fmt = "jsonl"
        if stripped.startswith("["):
            fmt = "json"
        elif stripped.startswith("{"):
            try:
                data = orjson.loads(stripped)      # kept: the text is parsed once
                fmt = "json"
            except orjson.JSONDecodeError:
                fmt = "jsonl"
    if fmt == "jsonl":
        return [parse_jsonl(text, source, default_id)]
    if data is _UNPARSED:
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise LedgerError(f"{source}: not valid JSON ({exc})") from None
    if isinstance(data, list):
        return [parse_adk(item, f"{source}[{i}]") for i, item in enumerate(data)]
    return [parse_adk(data, source)]
