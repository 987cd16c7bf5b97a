"""`python -m bench.pg_layouts --plain URL --partitioned URL [--rounds 2] [--json FILE]`: two
ledgers `bench.pg` built (the same events, one with plain tables, one with hash leaves), measured
in alternation on the same code in the same minutes: single observations and recall (verified
and unchecked), each round plain first then partitioned, so the machine's load (shared by other
benches) falls on both alike.  What decides the default layout (docs/decisions.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from factledger.ledger import Ledger

from . import queries
from .generator import Generator
from .observe import single_latency

os.environ.setdefault("FACTLEDGER_EMBEDDER", "off")

KEYS = ("observe_single_p50_ms", "observe_single_p99_ms", "recall_p50_ms", "recall_p99_ms",
        "recall_unchecked_p50_ms", "recall_unchecked_p99_ms")


def measure(location: str, seed: int) -> dict:
    with Ledger(location, future_tolerance="100y", create=False) as ledger:
        out = {"pg_leaves": ledger._conn.leaves, "load_before": [round(x, 2) for x in os.getloadavg()]}
        out.update(single_latency(ledger, Generator(seed, registry=ledger.registry)))
        out.update({k: v for k, v in queries.recall(ledger).items() if k in KEYS})
        out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pg_layouts", description=__doc__.split("\n\n")[0])
    parser.add_argument("--plain", required=True, help="a plain ledger bench.pg built (FACTLEDGER_PG_LEAVES=0)")
    parser.add_argument("--partitioned", required=True, help="the same, built with FACTLEDGER_PG_LEAVES=8")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    rounds = []
    for n in range(args.rounds):
        for layout, location in (("plain", args.plain), ("partitioned", args.partitioned)):
            print(f"round {n + 1}: {layout} ...", file=sys.stderr, flush=True)
            rounds.append({"round": n + 1, "layout": layout, **measure(location, seed=1000 + n)})
    summary = {}
    for key in KEYS:
        plain = [r[key] for r in rounds if r["layout"] == "plain"]
        split = [r[key] for r in rounds if r["layout"] == "partitioned"]
        summary[f"{key}_partitioned_vs_plain"] = round(sum(split) / sum(plain), 2)
    text = json.dumps({"rounds": rounds, **summary}, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
