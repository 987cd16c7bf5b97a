"""`python -m bench.manykey [--values 4000]`: one hostile `many` session against N single ones.

A session that states N values of one `many` key (N allergies) is ingested in one transaction,
under the write lock.  Its cost per candidate must not grow with the values the key already
holds, or one session holds the lock for minutes (it was quadratic: 1,000 values 3.6 s, 4,000
values 58 s).  Compared with N one-event sessions of N users (each key one value), ingested
one transaction each, through the same pipeline (patterns extractor, validator, decision table).
Prints a table; `--json FILE` writes the figures.  Timings only: tests/domain/test_manykey.py checks the
facts.

Then forgetting: the same N values said in a first session and again in a second (each a
reinforcement), and the first session forgotten, so re-decision decides all N statements of the
second session again (each becomes an observation) inside the forget's one transaction.

Meaning (the semantic extra's dedup) is off unless `FACTLEDGER_EMBEDDER` is set or `--meaning`
is given (the bundled encoder: each value is then compared with the key's values by one matrix
product, and its cost per value must not grow with them either).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from factledger.ledger import Ledger
from factledger.ledger.vocabulary.clock import fixed_clock

START = 1788080400.0                      # 2026-08-30T09:00:00Z
CLOCK = "2026-11-01T00:00:00Z"


def word(i: int) -> str:
    """A distinct made-up lower-case word per i (the allergy pattern takes letters only); it starts
    with an x so that none is an English word the extractor passes over ("been")."""
    letters = ""
    i += 26 ** 3
    while i:
        i, r = divmod(i, 26)
        letters = chr(97 + r) + letters
    return "x" + letters


def event(i: int, text: str) -> dict:
    return {"id": f"e{i}", "author": "user", "timestamp": START + i,
            "content": {"role": "user", "parts": [{"text": text}]}}


def many_session(n: int, user: str = "hostile") -> dict:
    return {"id": "many", "appName": "bench", "userId": user,
            "events": [event(i, f"I'm allergic to {word(i)}") for i in range(n)]}


def single_session(i: int) -> dict:
    return {"id": f"one-{i}", "appName": "bench", "userId": f"user{i}",
            "events": [event(i, f"I'm allergic to {word(i)}")]}


def again_session(n: int, user: str = "hostile") -> dict:
    """The same N values as `many_session`, said again later in another session."""
    return {"id": "again", "appName": "bench", "userId": user,
            "events": [event(n + i, f"I'm allergic to {word(i)}") for i in range(n)]}


def forget_timed(path: Path, n: int) -> tuple[float, int]:
    """Seconds to forget the first of two sessions stating the same N values, and the events
    re-decision recorded again."""
    with Ledger(path, clock=fixed_clock(CLOCK), create=True) as ledger:
        for session in (many_session(n), again_session(n)):
            assert ledger.ingest_session(session, extractor="patterns").status == "ingested"
        started = time.perf_counter()
        receipt = ledger.forget("bench", "hostile", session="many", reason="bench")
        elapsed = time.perf_counter() - started
        facts = ledger._conn.execute("SELECT COUNT(*) FROM facts_current").fetchone()[0]
        assert facts == n, (facts, n)
    return elapsed, receipt["counts"]["restated"]


def timed(path: Path, sessions: list[dict]) -> tuple[float, int]:
    with Ledger(path, clock=fixed_clock(CLOCK), create=True) as ledger:
        started = time.perf_counter()
        for session in sessions:
            result = ledger.ingest_session(session, extractor="patterns")
            assert result.status == "ingested", result.error
        elapsed = time.perf_counter() - started
        facts = ledger._conn.execute("SELECT COUNT(*) FROM facts_current").fetchone()[0]
    return elapsed, facts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.manykey", description=__doc__.split("\n")[0])
    parser.add_argument("--values", type=int, default=4000, help="N (default 4000)")
    parser.add_argument("--steps", default="1000,2000", help="smaller N for the many session too")
    parser.add_argument("--json", dest="json_out", default=None)
    parser.add_argument("--no-forget", action="store_true", help="skip the forget measurement")
    parser.add_argument("--meaning", action="store_true",
                        help="dedup by meaning on (the semantic extra's bundled encoder)")
    args = parser.parse_args(argv)
    if args.meaning:
        os.environ.pop("FACTLEDGER_EMBEDDER", None)
    else:
        os.environ.setdefault("FACTLEDGER_EMBEDDER", "off")
    sizes = sorted({int(s) for s in args.steps.split(",") if s.strip()} | {args.values})
    results: dict = {"values": args.values, "many_session_seconds": {}, "python": sys.version.split()[0],
                     "meaning": args.meaning}
    with tempfile.TemporaryDirectory() as work:
        for n in sizes:
            seconds, facts = timed(Path(work) / f"many-{n}.db", [many_session(n)])
            # made-up words may share a meaning to the encoder: with meaning on, some merge
            assert facts == n or (args.meaning and 0 < facts <= n), (facts, n)
            results.setdefault("many_session_facts", {})[n] = facts
            results["many_session_seconds"][n] = round(seconds, 3)
            print(f"one session, {n:>6} values of one many key: {seconds:8.2f} s "
                  f"({seconds / n * 1e3:.3f} ms a value)", flush=True)
        n = args.values
        seconds, facts = timed(Path(work) / "single.db", [single_session(i) for i in range(n)])
        assert facts == n, (facts, n)           # one value per user: nothing to merge with
        results["single_sessions_seconds"] = round(seconds, 3)
        print(f"{n:>6} sessions of one value each (own user):   {seconds:8.2f} s "
              f"({seconds / n * 1e3:.3f} ms a value)", flush=True)
    ratio = results["many_session_seconds"][n] / results["single_sessions_seconds"]
    results["ratio_many_to_single"] = round(ratio, 3)
    print(f"many session / single sessions: {ratio:.2f}")
    if not args.no_forget:
        results["forget_seconds"] = {}
        with tempfile.TemporaryDirectory() as work:
            for size in sizes:
                seconds, restated = forget_timed(Path(work) / f"forget-{size}.db", size)
                results["forget_seconds"][size] = round(seconds, 3)
                print(f"forget re-deciding {restated:>6} statements of one many key: {seconds:8.2f} s "
                      f"({seconds / size * 1e3:.3f} ms a value)", flush=True)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
