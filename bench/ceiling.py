"""What two processes can gain on this machine now: the ceiling a two-job replay is held against.

`replay --jobs 2` cannot go faster than the machine lets two busy processes go.  On a virtual
machine two cores may share a physical core or a host with other tenants, so two processes that
each run alone in T may take well over T side by side, and by an amount that changes from one
minute to the next (docs/performance.md, "Parallel replay").  This times the same piece of
pure-Python work (integer arithmetic and small dicts, as a fold is) in one process alone, then in
two processes at once, each process timing only its own loop:

    parallel_ceiling_2 = 2 x (alone) / (the slower of the pair)

2.0 is two whole cores; the two-job replay's speed-up is compared with it measured in the same
minutes (`bench/replay.py` times it just before and just after the two-job replay).
"""

from __future__ import annotations

import subprocess
import sys

# About half a second of work on the bench machine: long enough to swamp timer noise, short
# enough to sit beside the replay it describes.
LOOP = """
import time
t = time.perf_counter()
seen = {}
for i in range(2_500_000):
    seen[i % 1024] = seen.get(i % 1024, 0) + i * i % 7
print(time.perf_counter() - t)
"""


def _start() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", LOOP], stdout=subprocess.PIPE, text=True)


def _seconds(proc: subprocess.Popen) -> float:
    out, _ = proc.communicate(timeout=120)
    return float(out)


def parallel_ceiling() -> dict:
    """The loop alone, then two at once: seconds and the two-process ceiling."""
    alone = min(_seconds(_start()) for _ in range(2))
    pair = [_start(), _start()]
    slower = max(_seconds(p) for p in pair)
    return {"alone_s": round(alone, 3), "pair_s": round(slower, 3),
            "ceiling": round(2 * alone / slower, 2)}
