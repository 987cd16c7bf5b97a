"""`python -m bench.adk_stall`: how long one slow extraction stalls the other tasks of an event loop.

A `LedgerMemoryService` ingests one session whose extractor takes `--delay` seconds (0.3 by
default, a model call's order of magnitude) while a ticker task on the same loop wakes every
10 ms.  The longest gap between two ticks is the stall another task saw: about the extraction's
delay when the service runs it on the loop, about one tick when it runs it off the loop.
Also reported: the gap while a search and an ingestion run together (a search must not wait for
another task's extraction either).  Not a test: figures depend on the machine (docs/adk.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from google.adk.events import Event
from google.adk.sessions import Session
from google.genai import types

from factledger.adk import LedgerMemoryService
from factledger.ledger import Ledger
from factledger.ledger.ingest.patterns import PatternsExtractor

TICK = 0.01


class SlowExtractor:
    """The offline extractor, plus a blocking sleep standing in for a model call."""

    name = "patterns"
    model = None

    def __init__(self, delay: float):
        self.delay, self.inner = delay, PatternsExtractor()

    def extract(self, delta, context):
        time.sleep(self.delay)
        return self.inner.extract(delta, context)


def session(index: int) -> Session:
    start = time.time() - 3600
    return Session(id=f"stall-{index}", app_name="bench", user_id=f"u{index}", last_update_time=start,
                   events=[Event(id=f"stall-{index}-e1", author="user", timestamp=start,
                                 content=types.Content(role="user",
                                                       parts=[types.Part(text="I live in Pune")]))])


async def _measure(memory: LedgerMemoryService, delay: float) -> dict:
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker():
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(TICK)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    async def work():
        await asyncio.sleep(5 * TICK)
        started = time.perf_counter()
        await memory.add_session_to_memory(session(0))
        ingest = time.perf_counter() - started
        started = time.perf_counter()
        await asyncio.gather(memory.add_session_to_memory(session(1)),
                             memory.search_memory(app_name="bench", user_id="u0", query="where"))
        await asyncio.sleep(5 * TICK)
        done.set()
        return ingest, time.perf_counter() - started

    ingest, together = (await asyncio.gather(ticker(), work()))[1]
    return {"extraction_delay_s": delay, "tick_s": TICK, "ingest_s": round(ingest, 3),
            "ingest_and_search_s": round(together, 3),
            "longest_stall_s": round(max(gaps) - TICK, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Ledger(Path(tmp) / "stall.db", create=True) as ledger:
        memory = LedgerMemoryService(ledger, extractor=SlowExtractor(args.delay))
        print(json.dumps(asyncio.run(_measure(memory, args.delay))))


if __name__ == "__main__":
    main()
