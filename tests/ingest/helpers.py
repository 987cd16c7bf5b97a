"""Builders for ingestion tests: ADK-shaped session dicts and JSONL transcripts."""

from __future__ import annotations

import json
from pathlib import Path

from factledger.ledger.vocabulary.clock import parse_time

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SESSIONS = EXAMPLES / "sessions"
CANDIDATES = EXAMPLES / "candidates"


def epoch(iso: str) -> float:
    return parse_time(iso).timestamp()


def adk_event(event_id, author, text=None, at="2026-08-30T09:00:00Z", *, tool=False,
              partial=None, metadata=None):
    parts = []
    if text is not None:
        parts.append({"text": text})
    if tool:
        parts.append({"functionResponse": {"name": "search", "response": {"result": "x"}}})
    event = {"id": event_id, "author": author, "timestamp": epoch(at),
             "content": {"role": "user" if author == "user" else "model", "parts": parts}}
    if partial is not None:
        event["partial"] = partial
    if metadata is not None:
        event["customMetadata"] = metadata
    return event


def adk_session(events, session_id="s1", app="app", user="u1"):
    out = {"id": session_id, "events": events}
    if app is not None:
        out["appName"] = app
    if user is not None:
        out["userId"] = user
    return out


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data))
    return path


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def event_count(ledger) -> int:
    return ledger._conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]


def types(ledger) -> list[str]:
    return [r[0] for r in ledger._conn.execute("SELECT type FROM events ORDER BY seq")]
