"""`python -m bench.pg --db LOCATION --events N [--json FILE]`: the backend bench.

The same measurements on a PostgreSQL ledger (`--db postgresql://...?schema=NAME`, an empty
schema) or on a SQLite file (`--db PATH`, a new file), so the two can be set side by side at one N
on one machine: observe in batches of 1,000 candidates (the seeded generator of
`bench/generator.py`) and one at a time, recall over 1,000 facts, verify, replay (at one job and
at two, as `bench/replay.py` measures a file's), forgetting one user (one of the generator's,
whose history grows with N, and one of 20 users of 10 statements each, spread over the stream,
the same work at every N); then appends/s with 1, 2, 4 and 8 writer processes, on one ledger and
on as many separate ledgers (schemas, or files), each writer appending one candidate per
transaction for a fixed time.
`python -m bench --db postgresql://...` runs this.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from factledger.ledger import Ledger, make_candidate
from factledger.ledger.store.postgres.backend import display, fresh_postgres, is_postgres, split_location

from . import queries, replay
from .forget import forget_users, users
from .generator import APP, USERS, Generator
from .observe import single_latency
from .stats import ms, percentile, rate

# The store is what is measured here: embedding every fact (the semantic extra, when installed)
# would dominate every figure; bench/semantic.py measures it.  Writers inherit the setting.
os.environ.setdefault("FACTLEDGER_EMBEDDER", "off")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _fresh(location: str) -> None:
    if is_postgres(location):
        if not fresh_postgres(location):
            raise SystemExit(f"{display(location)} already holds a ledger: name an empty ?schema=")
    elif Path(location).exists():
        raise SystemExit(f"{location} exists: the bench wants a new file")


# Users of the same size at every N: the generator's 10,000 users each say about N / 10,000
# things, so forgetting one of them is ten times the work at 1M that it is at 100k.  These say
# SIZED_STATEMENTS things each, spread evenly over the stream (so their events lie among
# everyone else's, as a real user's do), whatever N is: forgetting one is the same work at 100k
# and at 1M, and its cost shows what the size of the ledger adds (issue 30's "within 1.5x").
# A hundred of them, so that the nearest-rank p99 is the second slowest forget, not the slowest.
SIZED_USERS = 100
SIZED_STATEMENTS = 10


def sized_users() -> list[str]:
    return [f"sized{j:03d}" for j in range(SIZED_USERS)]


class SizedStream:
    """Each sized user's statements: a generator of its own (seed + its number), renamed."""

    def __init__(self, seed: int, registry):
        self.gens = [(name, Generator(seed + 1 + j, users=2, registry=registry))
                     for j, name in enumerate(sized_users())]
        self.said = 0                      # statements said by each so far

    def due(self, last: int, events: int) -> list[dict]:
        """The statements of every sized user that the stream, at `last` of `events`, has passed
        the point of (their k-th when it passes k / (SIZED_STATEMENTS + 1) of the way)."""
        out = []
        while self.said < SIZED_STATEMENTS and last >= (self.said + 1) * events / (SIZED_STATEMENTS + 1):
            self.said += 1
            for name, gen in self.gens:
                fields = gen.next()
                fields.update(user=name, session=f"{name}-{fields['session']}",
                              evidence_event=f"{name}-{fields['evidence_event']}")
                out.append(fields)
        return out


def observe_batches(ledger: Ledger, gen: Generator, events: int, batch: int = 1000,
                    sized: SizedStream | None = None) -> dict:
    spent, candidates, last = 0.0, 0, ledger.head()[0]
    next_report = time.monotonic() + 30
    while last < events:
        cands = [make_candidate(**fields) for fields in gen.batch(batch)]
        if sized is not None:
            cands += [make_candidate(**fields) for fields in sized.due(last, events)]
        t0 = time.perf_counter()
        ledger.observe_many(cands)
        spent += time.perf_counter() - t0
        candidates += len(cands)
        last = ledger.head()[0]
        if time.monotonic() > next_report:
            _log(f"  observe: {last:,} events, {candidates / spent:,.0f} candidates/s")
            next_report = time.monotonic() + 30
    return {"events": last, "candidates": candidates, "observe_batch_per_s": rate(candidates, spent),
            "observe_batch_events_per_s": rate(last, spent)}


def _mean_events(ledger: Ledger, names: list[str]) -> float:
    """How many events of the log the named users' partitions hold, on average (before forgetting)."""
    total = sum(ledger._conn.execute("SELECT COUNT(*) FROM events WHERE app = ? AND user = ?",
                                     (APP, name)).fetchone()[0] for name in names)
    return round(total / len(names), 1)


def timed(name: str, call) -> dict:
    t0 = time.perf_counter()
    value = call()
    return {f"{name}_s": round(time.perf_counter() - t0, 3), f"_{name}": value}


WRITER = r"""
import sys, time
from pathlib import Path
from factledger.ledger import Ledger, make_candidate
location, name, go, seconds = sys.argv[1], sys.argv[2], Path(sys.argv[3]), float(sys.argv[4])
with Ledger(location, busy_timeout=120, future_tolerance="100y", create=True) as ledger:
    ledger.observe_many([])
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    n, appended, end = 0, 0, time.monotonic() + seconds
    while time.monotonic() < end:                # a new fact of a new user each time: one event
        appended += len(ledger.observe(make_candidate(app="conc", user=f"{name}-u{n}", predicate="home_city",
            value=f"City{n}", quote=f"I live in City{n}", session=f"{name}-s{n}", evidence_event="e",
            said_at="2026-01-01T00:00:00Z")).seqs)
        n += 1
    print(appended, flush=True)
"""


def _location(base: str, suffix: str, folder: Path) -> str:
    """Another ledger beside `base`: the schema NAME_suffix of the same database, or a file."""
    if not is_postgres(base):
        return str(folder / f"conc-{suffix}.db")
    parts = urlsplit(base)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "schema"]
    schema = split_location(base)[1]
    return urlunsplit(parts._replace(query=urlencode([*query, ("schema", f"{schema}_{suffix}")])))


def concurrent(base: str, folder: Path, seconds: float = 5.0) -> dict:
    """appends/s (events, summed over writers) with 1, 2, 4, 8 writers: one ledger, separate ledgers."""
    out: dict = {}
    for shared in (True, False):
        for writers in (1, 2, 4, 8):
            tag = f"{'one' if shared else 'sep'}{writers}"
            go = folder / f"go-{tag}"
            procs = []
            for w in range(writers):
                where = _location(base, tag if shared else f"{tag}_{w}", folder)
                procs.append(subprocess.Popen([sys.executable, "-c", WRITER, where, f"w{w}", str(go), str(seconds)],
                                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
                if shared and w == 0:
                    assert procs[0].stdout.readline().strip() == "ready"
            for proc in procs[1:] if shared else procs:
                assert proc.stdout.readline().strip() == "ready", proc.stderr.read()[-2000:]
            go.touch()
            total = 0
            for proc in procs:
                stdout, stderr = proc.communicate(timeout=seconds * 20 + 120)
                if proc.returncode:
                    raise RuntimeError(stderr[-2000:])
                total += int(stdout.strip().splitlines()[-1])
            key = f"appends_per_s_{'one_ledger' if shared else 'separate_ledgers'}_{writers}"
            out[key] = round(total / seconds, 1)
            _log(f"  {key}: {out[key]:,} ({total} events)")
            if shared:
                with Ledger(_location(base, tag, folder), create=False) as ledger:
                    check = ledger.verify()
                    if not check["ok"] or check["events"] != total:
                        raise RuntimeError(f"{tag}: chain {check} after {total} appends")
    return out


def run(location: str, events: int, seed: int, concurrency_seconds: float, skip: set[str]) -> dict:
    _fresh(location)
    started = time.perf_counter()
    results: dict = {"backend": "postgresql" if is_postgres(location) else "sqlite",
                     "n_events_requested": events, "seed": seed,
                     "load_at_start": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory(prefix="factledger-bench-") as folder:
        with Ledger(location, future_tolerance="100y", create=True) as ledger:
            if results["backend"] == "postgresql":     # hash leaves per table (0: plain; FACTLEDGER_PG_LEAVES)
                results["pg_leaves"] = ledger._conn.leaves
            gen = Generator(seed, registry=ledger.registry)
            _log(f"observe stream to {events:,} events in transactions of 1,000 candidates ...")
            results.update(observe_batches(ledger, gen, events, sized=SizedStream(seed, ledger.registry)))
            _log("single observations ...")
            results.update(single_latency(ledger, gen))
            _log("recall ...")
            results.update({k: v for k, v in queries.recall(ledger).items() if k != "recall_reason"})
            if "verify" not in skip:
                _log("verify ...")
                got = timed("verify", ledger.verify)
                results["verify_s"] = got["verify_s"]
                results["verify_per_s"] = rate(got["_verify"]["events"], got["verify_s"])
            if "replay" not in skip:
                _log("replay, one job and two, alternated (child process) ...")
                # The same measurement as a file's (bench/replay.py): the raw floor, rounds of one
                # job then two, best of each, the machine's two-process ceiling beside them.  The
                # ledger here holds no transaction open meanwhile; the child opens its own.
                results.update(replay.measure(location))
            if "forget" not in skip:
                # The sized users first: the 20 generator users hold ten times the events at 1M that they
                # do at 100k, and forgetting them first would leave ten times the dead line pointers in
                # the projections' leaves for the sized forgets' VACUUM to read (docs/scale.md).
                _log(f"forget one sized user ({SIZED_USERS} users of {SIZED_STATEMENTS} statements, one at a time) ...")
                results["forget_sized_user_mean_events"] = _mean_events(ledger, sized_users())
                samples = forget_users(ledger, sized_users())
                results["forget_sized_user_samples"] = len(samples)
                for q in (50, 95, 99):
                    results[f"forget_sized_user_p{q}_ms"] = ms(percentile(samples, q))
                results["forget_sized_user_max_ms"] = ms(max(samples))
                # Which forgets were slowest (their place in the sequence, from 0): whether the slowest
                # is the first after the replays, or spread over the sequence.
                slowest = sorted(range(len(samples)), key=samples.__getitem__, reverse=True)[:3]
                results["forget_sized_user_slowest"] = [[i, ms(samples[i])] for i in slowest]
                _log("forget one user (20 users, one at a time) ...")
                results["forget_user_mean_events"] = _mean_events(ledger, users(USERS)[-21:-1])
                samples = forget_users(ledger, users(USERS)[-21:-1])
                results["forget_user_p50_ms"] = ms(percentile(samples, 50))
                results["forget_user_p99_ms"] = ms(percentile(samples, 99))
        if "concurrency" not in skip:
            _log(f"concurrent writers ({concurrency_seconds:g} s each) ...")
            results.update(concurrent(location, Path(folder), concurrency_seconds))
    results["load_at_end"] = [round(x, 2) for x in os.getloadavg()]     # the machine is shared: say its load
    results["meta"] = {"seconds": round(time.perf_counter() - started, 1), "python": platform.python_version(),
                       "cpus": os.cpu_count(), "machine": platform.machine()}
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pg", description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="postgresql://...?schema=NAME (empty), or a new file")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--concurrency-seconds", type=float, default=5.0)
    parser.add_argument("--skip", default="", help="comma-separated: concurrency, replay, verify, forget")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    results = run(args.db, args.events, args.seed, args.concurrency_seconds,
                  set(filter(None, args.skip.split(","))))
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
