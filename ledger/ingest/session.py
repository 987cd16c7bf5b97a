"""A session as ingestion sees it, whatever format it came in: ordered events with an author.

Both input formats (ADK JSON, JSONL transcripts) are parsed into this one shape, so the
watermark, the rendering, the validator and every extractor are written once.  The author here
is already the ledger's vocabulary (`user`, `agent`, `tool`, `document`): authority is decided
by the format parser from what the input says, never by an extractor.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TOOL_PLACEHOLDER = "tool result omitted"


@dataclass(frozen=True)
class SessionEvent:
    id: str
    author: str                  # user | agent | tool | document
    said_at: str                 # ISO 8601 UTC, from the event's own timestamp
    text: str = ""               # the event's text parts, joined; "" when it has none
    partial: bool = False
    tool_result: bool = False    # carried a function response (rendered as a placeholder)
    name: str = ""               # the author as the input wrote it (an agent's name ...)

    @property
    def renderable(self) -> bool:
        """Step 1 of ingestion: partial events and events with nothing to say are skipped."""
        return not self.partial and (bool(self.text.strip()) or self.tool_result)

    def render(self) -> str:
        """Step 2: `[event-id] author: text`; a tool response never reaches the extractor."""
        text = TOOL_PLACEHOLDER if self.tool_result and not self.text.strip() else self.text
        return f"[{self.id}] {self.author}: {' '.join(text.split())}"


@dataclass(frozen=True)
class Session:
    id: str
    app: str | None
    user: str | None
    events: tuple[SessionEvent, ...]
    source: str = "<memory>"     # file path, "<stdin>" or "<memory>": named in every error
    fmt: str = "adk"

    def event(self, event_id: str) -> SessionEvent | None:
        return self._by_id.get(event_id)

    @property
    def _by_id(self) -> dict[str, SessionEvent]:
        cache = self.__dict__.get("_index")
        if cache is None:
            cache = {e.id: e for e in self.events}
            object.__setattr__(self, "_index", cache)
        return cache

    @property
    def started_at(self) -> str:
        return self.events[0].said_at if self.events else ""


@dataclass(frozen=True)
class Delta:
    """The part of a session not yet ingested: what one extraction call sees."""

    session: Session
    events: tuple[SessionEvent, ...]           # renderable events after the watermark
    read: int                                  # non-partial events after the watermark
    watermark: SessionEvent | None             # the new watermark (last non-partial event)
    previous: str | None = None                # the watermark it starts from
    earlier_ids: frozenset[str] = field(default_factory=frozenset)   # events at or before it
    read_ids: tuple[str, ...] = ()             # when set, recorded as the ingestion's `event_ids`

    def render(self) -> str:
        return "\n".join(e.render() for e in self.events)

    def __bool__(self) -> bool:
        return self.watermark is not None


def tail(session: Session, watermark: str | None, watermark_at: str | None = None) -> Delta:
    """Events after the watermark.

    The watermark is an event id.  If that event is still in the session, everything after it
    is new; if it is gone (a compacted or rewritten session), events with a later timestamp are
    new.  Partial events never move the watermark: ADK persists the final event separately.
    """
    events = session.events
    start = 0
    if watermark is not None:
        ids = [e.id for e in events]
        if watermark in ids:
            start = ids.index(watermark) + 1
        else:
            start = next((i for i, e in enumerate(events)
                          if watermark_at is None or e.said_at > watermark_at), len(events))
    fresh = [e for e in events[start:] if not e.partial]
    return Delta(session=session, events=tuple(e for e in fresh if e.renderable),
                 read=len(fresh), watermark=fresh[-1] if fresh else None, previous=watermark,
                 earlier_ids=frozenset(e.id for e in events[:start]))
