"""K batches of 1,000 generated candidates through `Ledger.observe_many`, on a new ledger after
`--warm` batches: the unit that docs/performance.md counts instructions of under callgrind
("The write path after the house was rebuilt").  Prints the timed batches' seconds on stderr.

    valgrind --tool=callgrind python -m bench.observe_batches 6
    valgrind --tool=callgrind python -m bench.observe_batches 2
    # one batch = (total instructions of the first - of the second) / 4
"""

from __future__ import annotations

import argparse
import inspect
import sys
import tempfile
import time
from pathlib import Path

from factledger.ledger import Ledger, make_candidate

from .generator import Generator


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.observe_batches", description=__doc__.split("\n")[0])
    parser.add_argument("batches", type=int, help="timed batches of 1,000 candidates")
    parser.add_argument("--warm", type=int, default=5, help="untimed batches first (default 5)")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    # `create` is new since a61fc82; a checkout from before it takes a copy of this file as it is
    create = {"create": True} if "create" in inspect.signature(Ledger.__init__).parameters else {}
    with tempfile.TemporaryDirectory() as workdir, Ledger(Path(workdir) / "ledger.db", **create) as ledger:
        gen = Generator(args.seed, registry=ledger.registry)
        for _ in range(args.warm):
            ledger.observe_many([make_candidate(**fields) for fields in gen.batch(1000)])
        # the caller's work, built before the clock starts (callgrind counts it, K times in both runs)
        batches = [[make_candidate(**fields) for fields in gen.batch(1000)] for _ in range(args.batches)]
        started = time.perf_counter()
        for batch in batches:
            ledger.observe_many(batch)
        spent = time.perf_counter() - started
    print(f"{args.batches} batches of 1,000 candidates: {spent:.3f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
