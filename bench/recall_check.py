"""`python -m bench.recall_check --db URL [--count 200] [--json FILE]`: what the served-fact check costs recall.

On a ledger `python -m bench.pg` built (its recall user already holds 1,000 open facts; nothing is
written but serve records), `bench.queries.recall`'s verified and unchecked recalls, three times
over: with the check as it is (`fact_events`, then the events, looked up by key), with the one
join it replaced (issue 50: PostgreSQL's planner hashed it over a scan of the whole log), and as
it is again, so the two are measured in the same minutes of a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from factledger.ledger import Ledger
from factledger.ledger.audit import served

from . import queries

os.environ.setdefault("FACTLEDGER_EMBEDDER", "off")

# The statement before issue 50, for the comparison only.
JOIN = ("SELECT t.fact_id, t.seq, e.event_id, e.type, e.app, e.user, e.recorded_at, e.body, e.salt,"
        " e.commitment, e.redacted_by FROM fact_events t LEFT JOIN events e ON e.seq = t.seq WHERE t.fact_id IN ")


def one_join(conn, fact_ids: list[str], known, where=None):
    for start in range(0, len(fact_ids), served.CHUNK):
        chunk = fact_ids[start:start + served.CHUNK]
        yield from conn.execute(JOIN + f"({', '.join('?' for _ in chunk)})", chunk)


def measure(location: str, count: int) -> dict:
    keyed = served._touched_rows
    seed = queries.seed_recall_user
    queries.seed_recall_user = lambda ledger, facts=1000: None        # seeded by bench.pg
    out: dict = {"load_before": os.getloadavg()}
    try:
        with Ledger(location, future_tolerance="100y", create=False) as ledger:
            out["events"] = ledger.head()[0]
            for label, rows in (("key_lookups", keyed), ("one_join", one_join), ("key_lookups_again", keyed)):
                served._touched_rows = rows
                got = queries.recall(ledger, count=count)
                row = {k: got[k] for k in ("recall_p50_ms", "recall_p99_ms", "recall_unchecked_p50_ms",
                                           "recall_unchecked_p99_ms")}
                for q in (50, 99):
                    verified, unchecked = got[f"recall_p{q}_ms"], got[f"recall_unchecked_p{q}_ms"]
                    row[f"verified_vs_unchecked_p{q}"] = round(verified / unchecked, 3)
                out[label] = row
    finally:
        served._touched_rows = keyed
        queries.seed_recall_user = seed
    out["load_after"] = os.getloadavg()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.recall_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="a ledger bench.pg built (postgresql://...?schema=NAME, or a file)")
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    text = json.dumps(measure(args.db, args.count), indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
