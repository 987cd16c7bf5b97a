"""`LedgerMemoryService`: factledger as a google-adk memory service (the `factledger[adk]` extra).

Written against google-adk 2.13's `BaseMemoryService`: the two abstract methods and the three
optional ones are all here (docs/adk.md: what each does in ledger terms, and where a fact memory
differs on purpose).  Ids pass through `partition.caller_id`; new events are decided by id
(`delta.new_events`).  The work runs in a worker thread under `_lock`, and a model call runs with
the lock released, so neither the loop nor another task waits for it.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry

from factledger.adk import entries, partition
from factledger.adk.delta import new_events
from factledger.adk.errors import CorruptLedger, MemoryNotFound, SharedMemory
from factledger.ledger.errors import LedgerError, LedgerNotFound
from factledger.ledger.ingest.extractor import Context
from factledger.ledger.ingest.extractors import make_extractor
from factledger.ledger.recall.serve import DOMAIN_USER, RecallOptions
from factledger.ledger.service import DEFAULT_CLEARANCE, Ledger  # the agent-facing default (docs/recall.md)
from factledger.ledger.vocabulary.clock import iso
from factledger.ledger.vocabulary.ids import normalise_id

EVENT_FIELDS = {"id", "author", "timestamp", "content", "partial", "custom_metadata"}   # what ingestion reads


class _Unlocked:
    """The extractor, run with the service's lock released: a model call holds no one up.

    The extractor may ask for the partition's current facts; that read takes the lock again."""

    def __init__(self, inner, lock: threading.Lock):
        self.inner, self.lock = inner, lock
        self.name, self.model = inner.name, getattr(inner, "model", None)

    def extract(self, delta, context: Context):
        load = context.load_current

        def locked_load():
            with self.lock:
                return list(load())

        context = Context(context.app, context.user, context.registry,
                          load_current=locked_load if load is not None else None)
        self.lock.release()
        try:
            return self.inner.extract(delta, context)
        finally:
            self.lock.acquire()


def dumped(event) -> dict:
    """An event as ingestion reads it.  One without an id (google-adk's default is "") gets the
    id google-adk's own SQLite service gives it: a hash of author, timestamp and content, so adding
    it again is recognised."""
    data = event.model_dump(mode="json", by_alias=True, exclude_none=True, include=EVENT_FIELDS)
    if not str(data.get("id") or "").strip():
        content = event.content.model_dump_json(exclude_none=True) if event.content else ""
        digest = hashlib.sha256(f"{event.author or ''}:{event.timestamp}:{content}".encode()).hexdigest()
        data["id"] = "adk-" + digest[:32]
    return data


class LedgerMemoryService(BaseMemoryService):
    """A google-adk memory service that serves current, explained facts instead of raw turns."""

    def __init__(self, ledger: Ledger | str | Path, *, extractor: Any = "patterns",
                 model: str | None = None, clearance=DEFAULT_CLEARANCE, preload: bool = True,
                 limit: int | None = None, budget: int | None = None,
                 min_confidence: float | None = None, domain: bool = True, mode: str | None = None,
                 forget_reason: str = "deleted through the ADK memory service",
                 requested_by: str = "adk-memory-service", create: bool = False,
                 agent: str | None = None):
        self._opened = not isinstance(ledger, Ledger)     # a ledger the service opened, it closes
        if isinstance(ledger, Ledger):
            self.ledger = ledger
        else:
            try:
                self.ledger = Ledger(ledger, create=create)     # a mistyped path is no new ledger
            except LedgerNotFound:
                raise
            except LedgerError as exc:
                raise CorruptLedger(str(exc)) from None
        self.extractor = extractor
        self.model = model
        self.options = RecallOptions.build(clearance=clearance, preload=preload, limit=limit,
                                           budget=budget, min_confidence=min_confidence,
                                           domain=domain, mode=mode)
        self.forget_reason = forget_reason
        self.requested_by = requested_by
        self.agent = agent                 # a serve record names its caller `app/agent` (docs/adk.md)
        self._lock = threading.Lock()      # one thread at a time on the ledger's connection
        self._extractor = None

    def _extractor_for_ingestion(self) -> _Unlocked:
        if self._extractor is None:
            options = {"model": self.model} if self.model and isinstance(self.extractor, str) else {}
            self._extractor = _Unlocked(make_extractor(self.extractor, **options), self._lock)
        return self._extractor

    async def close(self) -> None:
        """Close the ledger if the service opened it from a path (a `Ledger` given stays open)."""
        if self._opened:
            await asyncio.to_thread(self._close)

    def _close(self) -> None:
        with self._lock:
            self.ledger.close()

    # --- writing -------------------------------------------------------------------------

    async def add_session_to_memory(self, session) -> None:
        """Ingest the events of `session` not read before (by id); erased turns stay erased."""
        app = partition.caller_id(session.app_name, "app_name")
        user = partition.caller_id(session.user_id, "user_id")
        events = [dumped(e) for e in session.events]
        await asyncio.to_thread(self._ingest, app, user, partition.session_id(session.id), events)

    async def add_events_to_memory(self, *, app_name: str, user_id: str, events: Sequence,
                                   session_id: str | None = None,
                                   custom_metadata: Mapping[str, object] | None = None) -> None:
        """A delta: the events whose ids this session has not read yet (no session id: one
        reserved session per user holds them)."""
        app = partition.caller_id(app_name, "app_name")
        user = partition.caller_id(user_id, "user_id")
        session = partition.session_id(session_id)
        batch = [dumped(e) for e in events]
        if batch:
            await asyncio.to_thread(self._ingest, app, user, session, batch)

    def _ingest(self, app: str, user: str, session: str, events: list[dict]) -> None:
        data = {"id": session, "appName": app, "userId": user, "events": events}
        with self._lock:
            self.ledger.ingest_session(data, app=app, user=user,
                                       extractor=self._extractor_for_ingestion(),
                                       new_events=new_events)

    async def add_memory(self, *, app_name: str, user_id: str, memories: Sequence[MemoryEntry],
                         custom_metadata: Mapping[str, object] | None = None) -> None:
        """Each entry a candidate (all or none are stored); see `entries.candidate`."""
        app = partition.caller_id(app_name, "app_name")
        user = partition.caller_id(user_id, "user_id")
        shared = dict(custom_metadata or {})
        await asyncio.to_thread(self._add_memory, app, user, list(memories), shared)

    def _add_memory(self, app: str, user: str, memories: list[MemoryEntry], shared: dict) -> None:
        now = iso(self.ledger.clock())
        candidates = [entries.candidate(app, user, entry, shared, now) for entry in memories]
        with self._lock:
            self.ledger.observe_many(candidates)

    # --- reading -------------------------------------------------------------------------

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        app = partition.caller_id(app_name, "app_name")
        user = partition.caller_id(user_id, "user_id")
        return await asyncio.to_thread(self._search, app, user, query)

    def _search(self, app: str, user: str, query: str) -> SearchMemoryResponse:
        with self._lock:
            # a serve, recorded before the memories leave: hashed as the block they are cut from
            caller = f"{app}/{self.agent}" if self.agent else app
            result = self.ledger.recall(app, user, query, options=self.options, served_to=caller, surface="adk")
        memories = entries.memory_entries(result.selected)
        if result.withheld:
            memories.append(entries.withheld_entry(result.withheld, self.options.limit))
        return SearchMemoryResponse(memories=memories)

    # --- forgetting ----------------------------------------------------------------------

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Forget one fact (`memory_id` from `search_memory`), or, without an id, the whole user.

        The caller's own fact is forgotten (again, or after the whole user: a no-op).  An
        app-wide fact (the `_domain` partition, served to every user) is not the caller's to
        erase: nothing is deleted and `SharedMemory` says so, and how the app's operator forgets
        it.  Any other id raises `MemoryNotFound`, with the same message whether or not it exists
        in another partition."""
        app = partition.caller_id(app_name, "app_name")
        user = partition.caller_id(user_id, "user_id")
        fact = None if memory_id is None else normalise_id(memory_id, "memory_id")
        await asyncio.to_thread(self._delete, app, user, fact, app_name, user_id)

    def _delete(self, app: str, user: str, fact: str | None, app_name: str, user_id: str) -> None:
        with self._lock:
            if fact is not None and not self._owns(app, user, fact):
                if self.options.domain and self._in_partition(app, DOMAIN_USER, fact):
                    raise SharedMemory(
                        f"memory {fact!r} is an app-wide fact of app {app_name!r}, shared by every "
                        f"user: not deleted (it is still served to every user of the app); the "
                        f"app's operator forgets it for everyone with `factledger forget --app "
                        f"{app} --user {DOMAIN_USER} --fact {fact}`")
                if self._forgotten(app, user, fact):
                    return
                raise MemoryNotFound(f"no memory {fact!r} for app {app_name!r}, user {user_id!r}")
            self.ledger.forget(app, user, fact=fact, reason=self.forget_reason,
                               requested_by=self.requested_by)

    def _in_partition(self, app: str, user: str, fact: str) -> bool:
        return self.ledger.lookup.fact_observed_in(fact, app, user)

    def _owns(self, app: str, user: str, fact: str) -> bool:
        return self._in_partition(app, user, fact)

    def _forgotten(self, app: str, user: str, fact: str) -> bool:
        """Deleted already: the fact, or the whole user (whose fact ids the ledger no longer keeps)."""
        return self.ledger.erased.is_forgotten_fact(app, user, fact) or self.ledger.erased.is_forgotten_user(app, user)
