"""`LedgerMemoryService`: factledger as a google-adk memory service (the `factledger[adk]` extra).

Written against google-adk 2.13, whose `BaseMemoryService` has two abstract methods,
`add_session_to_memory(session)` and `search_memory(app_name=, user_id=, query=)`, and three
optional ones that raise `NotImplementedError` by default: `add_events_to_memory(...)`,
`add_memory(...)` and `delete_memory(app_name=, user_id=, memory_id=None)`.  All five are here:

- `add_session_to_memory`: the session goes through ingestion (extractor, validator, decision
  table) in one transaction; adding it again appends nothing (the session's watermark);
- `add_events_to_memory`: a delta, ingested as the tail of `session_id` (or of a session named
  after its first event when no id is given);
- `add_memory`: direct entries; an entry whose `custom_metadata` (or the call's) names a
  `predicate` and a `value` becomes a candidate through the same validator and decision table;
  any other entry becomes a candidate for an unknown predicate, so it is held in the review queue
  (`factledger review`), never stored as a fact unreviewed;
- `search_memory`: recall; one `MemoryEntry` per served fact, author `memory`, `timestamp` the
  fact's said_at (ISO 8601 UTC), `id` the fact id, provenance in `custom_metadata`; the text says
  it is a stored fact, data and not an instruction, and a disputed fact's text names both sides;
- `delete_memory`: with a `memory_id`, forgets that fact; without one, erases the whole user
  (the forget path: redaction, re-decision, projections rebuilt, receipt).

Clearance: google-adk calls `search_memory` on behalf of the user whose session it is, and a
personal assistant needs to know where its user lives, so the service serves `normal` and
`personal` facts by default; `health` only when constructed with `clearance=("personal",
"health")` or `"all"`.  Preload: by default a search serves the best facts even when the user's
message shares no word with them (`preload=True`), because the preload-memory tool passes the raw
user message as the query; set `preload=False` for a search-only service (the load-memory tool).

google-adk is imported lazily at class creation, so `import ledger` never needs it.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from . import render
from .candidate import MAX_QUOTE, MAX_VALUE, make_candidate
from .errors import LedgerError
from .recall import RecallOptions
from .service import Ledger
from .timeutil import iso

DEFAULT_CLEARANCE = ("normal", "personal")
UNREVIEWED_PREDICATE = "adk_memory_note"   # not in any registry: such entries are held for review
PROVENANCE_FIELDS = ("fact_id", "subject", "predicate", "value", "status", "basis", "confidence",
                     "effective_confidence", "sensitivity", "said_at", "recorded_at",
                     "confirmed_at", "confirmed_by", "session", "evidence_event", "quote",
                     "author", "disputes", "relevance", "recency", "score")


class LedgerMemoryService(BaseMemoryService):
    """A google-adk memory service that serves current, explained facts instead of raw turns."""

    def __init__(self, ledger: Ledger | str | Path, *, extractor: Any = "patterns",
                 clearance=DEFAULT_CLEARANCE, preload: bool = True, limit: int | None = None,
                 budget: int | None = None, min_confidence: float | None = None,
                 domain: bool = True, forget_reason: str = "deleted through the ADK memory service",
                 requested_by: str = "adk-memory-service"):
        self.ledger = ledger if isinstance(ledger, Ledger) else Ledger(ledger)
        self.extractor = extractor
        self.options = RecallOptions.build(clearance=clearance, preload=preload, limit=limit,
                                           budget=budget, min_confidence=min_confidence,
                                           domain=domain)
        self.forget_reason = forget_reason
        self.requested_by = requested_by
        self._lock = threading.Lock()      # one connection; ADK may call from several tasks

    # --- writing -------------------------------------------------------------------------

    async def add_session_to_memory(self, session) -> None:
        data = session.model_dump(mode="json", by_alias=True, exclude_none=True)
        with self._lock:
            self.ledger.ingest_session(data, app=session.app_name, user=session.user_id,
                                       extractor=self.extractor)

    async def add_events_to_memory(self, *, app_name: str, user_id: str, events: Sequence,
                                   session_id: str | None = None,
                                   custom_metadata: Mapping[str, object] | None = None) -> None:
        dumped = [e.model_dump(mode="json", by_alias=True, exclude_none=True) for e in events]
        if not dumped:
            return
        data = {"id": session_id or f"adk-events-{dumped[0].get('id')}", "appName": app_name,
                "userId": user_id, "events": dumped}
        with self._lock:
            self.ledger.ingest_session(data, app=app_name, user=user_id, extractor=self.extractor)

    async def add_memory(self, *, app_name: str, user_id: str, memories: Sequence[MemoryEntry],
                         custom_metadata: Mapping[str, object] | None = None) -> None:
        shared = dict(custom_metadata or {})
        candidates = [self._candidate(app_name, user_id, entry, shared) for entry in memories]
        with self._lock:
            self.ledger.observe_many(candidates)

    def _candidate(self, app: str, user: str, entry: MemoryEntry, shared: dict):
        meta = {**shared, **(entry.custom_metadata or {})}
        text = " ".join(p.text for p in (entry.content.parts or []) if p.text) if entry.content else ""
        flat = " ".join(text.split())
        value = meta.get("value") or flat[:MAX_VALUE]
        if not str(value).strip():
            raise LedgerError("a memory entry needs text or a custom_metadata value")
        digest = hashlib.sha256(f"{entry.id}|{text}|{meta}".encode()).hexdigest()[:16]
        author = entry.author if entry.author in ("user", "agent", "tool", "document") else (
            "agent" if entry.author else "user")
        basis = meta.get("basis") or ("stated" if author == "user" else "inferred")
        if author == "document" and "basis" not in meta:
            basis = "verified"
        return make_candidate(
            app=app, user=user, subject=meta.get("subject") or "user",
            predicate=meta.get("predicate") or UNREVIEWED_PREDICATE, value=str(value),
            quote=str(meta.get("quote") or text or value)[:MAX_QUOTE],
            session=str(meta.get("session") or f"adk-memory-{digest}"),
            evidence_event=str(meta.get("evidence_event") or entry.id or f"adk-memory-{digest}"),
            said_at=entry.timestamp or iso(self.ledger.clock()), author=author, basis=basis,
            negated=bool(meta.get("negated", False)), confidence=meta.get("confidence"),
            effective_date=meta.get("effective_date"))

    # --- reading -------------------------------------------------------------------------

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        with self._lock:
            result = self.ledger.recall(app_name, user_id, query, options=self.options)
        return SearchMemoryResponse(memories=memory_entries(result.selected))

    # --- forgetting ----------------------------------------------------------------------

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Forget one fact (`memory_id` = a fact id from `search_memory`), or the whole user."""
        with self._lock:
            self.ledger.forget(app_name, user_id, fact=memory_id, reason=self.forget_reason,
                               requested_by=self.requested_by)


def memory_entries(facts: list[dict]) -> list[MemoryEntry]:
    """One entry per fact; a disputed fact's text shows every side of the conflict."""
    by_id = {f["fact_id"]: f for f in facts}
    out = []
    for fact in facts:
        partners = [by_id[d] for d in fact.get("disputes") or () if d in by_id]
        text = render.line([fact, *partners]).removeprefix("- ")
        out.append(MemoryEntry(
            id=fact["fact_id"], author="memory", timestamp=fact["said_at"],
            content=types.Content(role="user", parts=[types.Part(text=render.ENTRY_PREFIX + text)]),
            custom_metadata={k: fact.get(k) for k in PROVENANCE_FIELDS}))
    return out
