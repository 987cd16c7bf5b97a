"""Small builders for google-adk sessions and events, shared by the ADK contract tests."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from google.adk.events import Event
from google.adk.sessions import Session
from google.genai import types

NOW = "2026-11-29T10:00:00Z"          # the ledger's fixed clock: an erasure is recorded at NOW
BEFORE = datetime(2026, 11, 1, tzinfo=UTC).timestamp()
AFTER = datetime(2026, 11, 29, 12, 0, tzinfo=UTC).timestamp()


def event(event_id: str, text: str, at: float, author: str = "user") -> Event:
    role = "user" if author == "user" else "model"
    return Event(id=event_id, author=author, timestamp=at,
                 content=types.Content(role=role, parts=[types.Part(text=text)]))


def session(session_id: str, events: list[Event], user: str = "priya", app: str = "mealkit") -> Session:
    return Session(id=session_id, app_name=app, user_id=user, events=events,
                   last_update_time=max((e.timestamp for e in events), default=BEFORE))


def run(coro):
    return asyncio.run(coro)


def search(memory, query: str = "where do I live and what do I eat?", user: str = "priya",
           app: str = "mealkit"):
    return run(memory.search_memory(app_name=app, user_id=user, query=query)).memories


def values(memory, user: str = "priya", app: str = "mealkit", query: str = "where do I live") -> dict:
    """predicate -> value of what the service serves the user (metadata, as the model reads it)."""
    return {m.custom_metadata["predicate"]: m.custom_metadata["value"]
            for m in search(memory, query, user, app)}


def event_count(ledger) -> int:
    return ledger._conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
