"""One figure of an existing bench ledger, in a fresh process, with whichever checkout runs it.

`python -m bench.compare DB recall|verify|verify-full [--read-only]` prints one JSON line:
recall p50/p99 (`bench/queries.py: recall`, the recall user already seeded: `seed` seeds it
once), or `verify` (`--log-only`) / `verify-full` with the raw chain loop of `bench/baseline.py`
run first in the same process.  Run from two checkouts (each with its own venv) back to back on
the same file to compare them (docs/performance.md, "Read-only opens, and a faster full verify");
a checkout whose `Ledger` has no `read_only` opens the ledger as it always did.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import time

from factledger.ledger import Ledger

from . import queries
from .baseline import raw_chain
from .stats import rate, ratio


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.compare")
    parser.add_argument("db")
    parser.add_argument("what", choices=("seed", "recall", "verify", "verify-full"))
    parser.add_argument("--read-only", action="store_true", help="open with Ledger(..., read_only=True)")
    args = parser.parse_args()
    options = {"read_only": True} if args.read_only and "read_only" in inspect.signature(Ledger).parameters else {}
    out = {"what": args.what, "read_only": bool(options), "load_before": round(os.getloadavg()[0], 2)}
    if args.what == "seed":
        with Ledger(args.db) as ledger:
            queries.seed_recall_user(ledger)
    elif args.what == "recall":
        queries.seed_recall_user = lambda ledger, facts=1000: None      # seeded once, by `seed`
        with Ledger(args.db, **options) as ledger:
            out.update(queries.recall(ledger))
    else:
        with Ledger(args.db, **options) as ledger:
            count, raw_s = raw_chain(ledger._conn)
            started = time.perf_counter()
            result = ledger.verify(log_only=args.what == "verify")
            seconds = time.perf_counter() - started
            if not result["ok"]:
                raise SystemExit(f"verify failed on the bench ledger: {result['problem']}")
            ours, raw = rate(result["events"], seconds), rate(count, raw_s)
            out.update(events=result["events"], seconds=round(seconds, 2), per_s=ours, raw_chain_per_s=raw,
                       ratio=ratio(ours, raw))
    out["load_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
