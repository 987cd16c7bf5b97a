"""`python -m bench.backfill [--rows 1000,10000] [--late 200] [--json FILE]`: late statements as a partition grows.

A statement said before its key's current fact (`backfill`, docs/decisions.md "Late arrivals")
reads the key's past: one query per late statement over the partition's open history intervals
(projections/history.py `KEY_PAST`, through `fact_history_intervals`, which orders a partition's
intervals by time recorded, not by key), so its cost may grow with the partition.  A value said
between two statements of one fact (a split) reads those statements' bodies by seq as well.

For a partition of about R history rows (R/4 keys of a `one` predicate, each a value said on day 1,
said again on day 15 and replaced on day 20: four intervals a key), each run ingests, in one transaction each and on
distinct keys: M late values said on day 10 (split: day 1 and day 15 are one fact), M late
values said on day 17 (backfilled between day 15 and day 20), and M newer values said on day 30
(supersede, the common path); and appends the M late statements' bodies to a raw SQLite event
store (bench/baseline.py: same table, pragmas, hashing; no decision, no projection) in the same
process.  Flat means the time a late statement takes at 10,000 rows is about its time at 1,000.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from factledger.ledger import Ledger, make_candidate
from factledger.ledger.vocabulary.clock import parse_time

from .baseline import RawStore

CLOCK = "2026-11-01T00:00:00Z"
PREDICATE = "home_city"


def ticking():
    """A clock a millisecond on at each reading: each transaction records its own intervals (under
    a fixed clock they would overwrite each other and the partition would keep no history)."""
    moment = [parse_time(CLOCK)]

    def clock():
        moment[0] += timedelta(milliseconds=1)
        return moment[0]

    return clock


def said(day: int) -> str:
    return f"2026-08-{day:02d}T10:00:00.000000Z"


def statement(key: int, value: str, day: int):
    return make_candidate(app="bench", user="late", subject=f"account:{key}", predicate=PREDICATE, value=value,
                          quote=f"I live in {value}", session=f"k{key}-d{day}", evidence_event=f"e{key}-{day}",
                          said_at=said(day), author="user", basis="stated")


def build(ledger: Ledger, keys: int) -> int:
    """Each key: Pune on day 1, again on day 15, Lyon on day 20.  Returns the partition's history rows."""
    for day, value in ((1, "Pune"), (15, "Pune"), (20, "Lyon")):
        for start in range(0, keys, 1000):
            ledger.observe_many([statement(k, value, day) for k in range(start, min(keys, start + 1000))])
    return ledger._conn.execute("SELECT COUNT(*) FROM fact_history WHERE app = 'bench' AND user = 'late'").fetchone()[0]


def timed(ledger: Ledger, candidates: list, expected: str) -> float:
    started = time.perf_counter()
    outcomes = ledger.observe_many(candidates)
    elapsed = time.perf_counter() - started
    reasons = {o.reason for o in outcomes}
    assert reasons == {expected}, reasons
    return elapsed


def run(rows: int, late: int, work: Path) -> dict:
    keys = max(rows // 4, 3 * late)
    with Ledger(work / f"late-{rows}.db", clock=ticking(), create=True) as ledger:
        history = build(ledger, keys)
        chosen = range(0, 3 * late, 3)
        split = timed(ledger, [statement(k, "Goa", 10) for k in chosen], "split")
        backfilled = timed(ledger, [statement(k + 1, "Goa", 17) for k in chosen], "backfilled")
        newer = timed(ledger, [statement(k + 2, "Oslo", 30) for k in chosen], "superseded")
    raw = RawStore(str(work / f"raw-{rows}.db"))
    try:
        bodies = [("FactObserved", "bench", "late", statement(k, "Goa", 10).model_dump(mode="json")) for k in chosen]
        raw_seconds = raw.insert(bodies)
    finally:
        raw.close()
    return {"history_rows": history, "late": late, "split_ms": round(split / late * 1e3, 3),
            "backfill_ms": round(backfilled / late * 1e3, 3), "newer_ms": round(newer / late * 1e3, 3),
            "raw_ms": round(raw_seconds / late * 1e3, 4),
            "split_vs_raw": round(split / raw_seconds, 1), "backfill_vs_raw": round(backfilled / raw_seconds, 1),
            "newer_vs_raw": round(newer / raw_seconds, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.backfill", description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="1000,10000", help="partition sizes in history rows (default 1000,10000)")
    parser.add_argument("--late", type=int, default=80, help="M late statements of each kind (default 80)")
    parser.add_argument("--json", dest="json_out", default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("FACTLEDGER_EMBEDDER", "off")
    results: dict = {"python": sys.version.split()[0], "runs": []}
    with tempfile.TemporaryDirectory() as work:
        for rows in sorted({int(r) for r in args.rows.split(",") if r.strip()}):
            got = run(rows, args.late, Path(work))
            results["runs"].append(got)
            print(f"{got['history_rows']:>7} history rows: split {got['split_ms']:7.3f} ms, backfill "
                  f"{got['backfill_ms']:7.3f} ms, newer value {got['newer_ms']:7.3f} ms a statement; raw append "
                  f"{got['raw_ms']:.4f} ms (split x{got['split_vs_raw']}, backfill x{got['backfill_vs_raw']}, "
                  f"newer x{got['newer_vs_raw']})", flush=True)
    first, last = results["runs"][0], results["runs"][-1]
    growth = {kind: round(last[f"{kind}_ms"] / first[f"{kind}_ms"], 2) for kind in ("split", "backfill", "newer")}
    results["growth_last_vs_first"] = growth
    print(f"a statement at {last['history_rows']:,} rows / at {first['history_rows']:,}: "
          + ", ".join(f"{k} x{v}" for k, v in growth.items()))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
