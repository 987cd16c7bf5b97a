"""The google-adk peer: `SqliteMemoryService` against factledger on the same generated sessions.

Both sides get the same ADK sessions (user turns that the registry's `patterns` extractor
understands, agent replies in between).  The ADK service stores and full-text indexes every event;
factledger ingests each session (render, extract with `patterns`, validate, decide, append,
project) and is then searched with `recall`.  Ours is measured only when `Ledger.ingest_session`
and `Ledger.recall` exist; google-adk's side whenever google-adk is installed.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import time
from pathlib import Path

from .stats import ms, percentile, rate, ratio

APP = "bench-adk"
_LINES = ["I'm vegetarian", "I am vegan now", "I live in Pune", "we just moved to Lisbon",
          "I'm allergic to peanuts", "I am allergic to shellfish", "I have gone pescatarian",
          "we live in Berlin", "I'm a flexitarian", "I moved to Austin"]
_QUERIES = ["what do I eat", "where do I live", "allergies", "diet", "city", "vegetarian food",
            "peanuts", "Lisbon"]


def sessions_json(count: int = 200, turns: int = 6, users: int = 20, seed: int = 5,
                  end: float | None = None) -> list[dict]:
    """ADK session JSON (docs/ingestion.md), seeded; the last turn a day before `end` (default
    now), because the ledger runs on the real clock and facts said long before it would have
    decayed under the serving threshold: a recall serving nothing is not the one to compare."""
    rng = random.Random(seed)
    out = []
    t = (time.time() if end is None else end) - 86_400 - count * turns * 35
    for s in range(count):
        events = []
        for k in range(turns):
            t += 30
            events.append({"id": f"s{s}-u{k}", "author": "user", "timestamp": t,
                           "content": {"role": "user", "parts": [{"text": rng.choice(_LINES)}]}})
            t += 5
            events.append({"id": f"s{s}-a{k}", "author": "agent", "timestamp": t,
                           "content": {"role": "model", "parts": [{"text": "Noted, thank you."}]}})
        out.append({"id": f"adk-s{s}", "appName": APP, "userId": f"adk-u{s % users}",
                    "events": events})
    return out


def _adk_sessions(data: list[dict]):
    from google.adk.events import Event
    from google.adk.sessions import Session
    from google.genai import types

    sessions = []
    for s in data:
        events = [Event(id=e["id"], author=e["author"], timestamp=e["timestamp"],
                        invocation_id=s["id"],
                        content=types.Content(role=e["content"]["role"],
                                              parts=[types.Part(text=e["content"]["parts"][0]["text"])]))
                  for e in s["events"]]
        sessions.append(Session(id=s["id"], app_name=APP, user_id=s["userId"], events=events,
                                last_update_time=s["events"][-1]["timestamp"]))
    return sessions


async def _adk_run(path: Path, sessions, queries) -> tuple[float, list[float]]:
    from google.adk.memory import SqliteMemoryService

    service = SqliteMemoryService(str(path))
    try:
        t0 = time.perf_counter()
        for session in sessions:
            await service.add_session_to_memory(session)
        add_s = time.perf_counter() - t0
        samples = []
        for user, query in queries:
            t0 = time.perf_counter()
            await service.search_memory(app_name=APP, user_id=user, query=query)
            samples.append(time.perf_counter() - t0)
    finally:
        await service.close()
    return add_s, samples


def measure(workdir: Path, registry=None, count: int = 200) -> dict:
    out: dict = {"adk_sqlite_add_per_s": None, "adk_sqlite_search_p99_ms": None,
                 "vs_adk_add_ratio": None}
    data = sessions_json(count)
    rng = random.Random(9)
    queries = [(f"adk-u{rng.randrange(20)}", rng.choice(_QUERIES)) for _ in range(200)]
    try:
        sessions = _adk_sessions(data)
    except ImportError as exc:
        out["adk_reason"] = f"google-adk is not installed ({exc})"
        return out
    add_s, samples = asyncio.run(_adk_run(workdir / "adk-memory.db", sessions, queries))
    out["adk_sqlite_add_per_s"] = rate(len(sessions), add_s)       # sessions per second
    out["adk_sqlite_search_p99_ms"] = ms(percentile(samples, 99))
    out["adk_sqlite_search_p50_ms"] = ms(percentile(samples, 50))

    from factledger.ledger import Ledger

    if not hasattr(Ledger, "ingest_session") or not hasattr(Ledger, "recall"):
        out["adk_reason"] = "factledger side not measured: Ledger.ingest_session / Ledger.recall do not exist yet"
        return out
    with Ledger(workdir / "adk-ledger.db", registry=registry, create=True) as ledger:
        ingest = ledger.ingest_session
        params = inspect.signature(ingest).parameters
        kwargs = {"extractor": "patterns"} if "extractor" in params else {}
        t0 = time.perf_counter()
        for s in data:
            ingest(s, **kwargs)
        ours_add = rate(len(data), time.perf_counter() - t0)
        samples, selected = [], 0
        for user, query in queries:
            t0 = time.perf_counter()
            result = ledger.recall(APP, user, query)
            samples.append(time.perf_counter() - t0)
            selected += len(result.selected)
    out["factledger_ingest_sessions_per_s"] = ours_add
    out["factledger_adk_recall_p99_ms"] = ms(percentile(samples, 99))
    out["factledger_adk_recall_mean_selected"] = round(selected / len(queries), 2)
    out["vs_adk_add_ratio"] = ratio(ours_add, out["adk_sqlite_add_per_s"])
    return out
