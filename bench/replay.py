"""Replay measurement, run in a child process so its peak memory is its own.

`python -m bench.replay DB` opens the ledger (a SQLite file, or a PostgreSQL URL: `bench/pg.py`
runs it too), times the raw floor (`raw_read`: every row read in seq order and its body parsed
with orjson), then, in ROUNDS rounds, times `Ledger.replay()` (every projection cleared and
refolded from the log, one transaction) and `Ledger.replay(jobs=2)` (two worker processes fold,
this one writes and commits once; their start-up is inside the time), with the machine's
two-process ceiling (`bench/ceiling.py`) measured before and after each two-job
replay.  It prints one JSON object: `replay_ratio` is the one-job rebuild's (best round),
`replay_jobs2_ratio` the two-job one's, both against the same raw floor, `replay_speedup_2` the
best one-job time over the best two-job time, and `parallel_ceiling_2` the median ceiling of
those minutes.  Peak memory (after the first one-job replay) is the child's VmHWM
(/proc/self/status; ru_maxrss elsewhere): the high-water mark of the whole process, interpreter
and imports included, so it over- rather than under-states the rebuild.  The baseline RSS before
the replay is reported beside it.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from .ceiling import parallel_ceiling
from .stats import rate, ratio

# Rounds of (one job, two jobs), alternated: the machine's speed drifts over minutes, so each
# figure is the best of its rounds, and each round's own speed-up is reported beside it.
ROUNDS = 2


def _rss_mb() -> float:
    """This process's peak RSS in MiB: VmHWM, the high-water mark of its own address space.

    Not ru_maxrss: Linux carries the parent's high-water mark across fork + exec into the child's
    ru_maxrss, which would report the bench's own memory, not the replay's."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _children_cpu() -> float:
    """CPU seconds of this process's ended children (the replay's workers, once they are reaped)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _settle(ledger) -> None:
    """Let the last replay's writes reach the files now, untimed.  SQLite: copy its WAL into the
    file; left to the ledger's checkpoint thread, it would copy a whole rewritten projection (a
    gigabyte at 1M events) while the next replay, or the ceiling, was being timed.  PostgreSQL:
    a CHECKPOINT, so the server's checkpointer is not writing the last replay's pages out inside
    the next one (the replay's own VACUUM of the rewritten tables is part of the replay, and
    timed).  A role that may not CHECKPOINT leaves it to the server's schedule."""
    if ledger.checkpointer is None:
        import psycopg  # only a PostgreSQL ledger has no checkpointer

        try:
            ledger._conn.raw.execute("CHECKPOINT")
        except psycopg.errors.InsufficientPrivilege:
            pass
        return
    with ledger.checkpointer.exclusive():
        ledger._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def child(db: str) -> dict:
    from factledger.ledger import Ledger

    from .baseline import raw_read

    with Ledger(db) as ledger:
        raw_count, raw_s = raw_read(ledger._conn)
        before = _rss_mb()
        rounds, peak = [], None
        for _ in range(ROUNDS):
            _settle(ledger)
            t0, cpu0 = time.perf_counter(), time.process_time()
            count = ledger.replay()
            one = {"s": time.perf_counter() - t0, "cpu": time.process_time() - cpu0}
            peak = peak or _rss_mb()
            _settle(ledger)
            ceiling_before = parallel_ceiling()["ceiling"]
            t0, cpu0, workers0 = time.perf_counter(), time.process_time(), _children_cpu()
            count_2 = ledger.replay(jobs=2)
            two = {"s": time.perf_counter() - t0, "parent_cpu": time.process_time() - cpu0,
                   "workers_cpu": _children_cpu() - workers0}
            if count_2 != count:
                raise RuntimeError(f"replay folded {count} events at one job, {count_2} at two")
            _settle(ledger)
            rounds.append((one, two, ceiling_before, parallel_ceiling()["ceiling"]))
    replay_s = min(one["s"] for one, *_ in rounds)
    jobs2_s = min(two["s"] for _, two, *_ in rounds)
    ceilings = sorted(c for *_, before_c, after_c in rounds for c in (before_c, after_c))
    one, two = rounds[-1][:2]
    return {"replay_events": count, "replay_s": round(replay_s, 3),
            "replay_per_s": rate(count, replay_s), "raw_read_per_s": rate(raw_count, raw_s),
            "replay_ratio": ratio(rate(count, replay_s), rate(raw_count, raw_s)),
            "replay_jobs2_s": round(jobs2_s, 3), "replay_jobs2_per_s": rate(count, jobs2_s),
            "replay_jobs2_ratio": ratio(rate(count, jobs2_s), rate(raw_count, raw_s)),
            "replay_speedup_2": round(replay_s / jobs2_s, 2) if jobs2_s else None,
            # what two busy processes gained on this machine in the same minutes (bench/ceiling.py)
            "parallel_ceiling_2": ceilings[len(ceilings) // 2],
            # each round: one-job s, two-job s, their speed-up, the ceiling before and after
            "replay_rounds": [[round(one["s"], 3), round(two["s"], 3), round(one["s"] / two["s"], 2), before_c, after_c]
                              for one, two, before_c, after_c in rounds],
            "replay_load_avg_1m": round(os.getloadavg()[0], 2),
            # CPU seconds of the last round, for a machine shared with others (wall time there is
            # the scheduler's): the one-job replay; the two-job parent (writes) and its workers
            # (start-up included)
            "replay_cpu_s": round(one["cpu"], 3), "replay_jobs2_parent_cpu_s": round(two["parent_cpu"], 3),
            "replay_jobs2_workers_cpu_s": round(two["workers_cpu"], 3),
            "replay_peak_rss_mb": peak, "replay_rss_before_mb": before,
            # the same high-water mark after the two-job replays too: the parent holds a few
            # shares' images at a time (projections/parallel.py); the workers' own are not in it
            "replay_jobs2_peak_rss_mb": _rss_mb()}


def measure(db: str) -> dict:
    root = Path(__file__).resolve().parent.parent
    where = db if "://" in db else str(Path(db).resolve())
    proc = subprocess.run([sys.executable, "-m", "bench.replay", where],
                          capture_output=True, text=True, cwd=root)
    if proc.returncode != 0:
        raise RuntimeError(f"replay child failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    print(json.dumps(child(sys.argv[1])))
