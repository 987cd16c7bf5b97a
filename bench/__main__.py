"""`python -m bench --events N [--json FILE]`: the whole suite, a table on stdout, JSON on request.

Order: the observe stream (with the raw baseline and the eventsourcing peer per batch), database
size, single observations, as-of, recall, verify, replay (child process), forgetting (copies first,
then 100 users on the ledger itself), the google-adk peer.  See docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from factledger.ledger import Ledger

from . import adk, forget, observe, pg, proofs, queries, replay, report, verify
from .baseline import RawStore, SameRowsStore
from .generator import Generator
from .peers import eventsourcing_peer

PHASES = ("single", "as_of", "recall", "verify", "proofs", "replay", "forget", "adk", "meaning")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _size(path: Path) -> int:
    return sum(Path(str(path) + s).stat().st_size for s in ("", "-wal")
               if Path(str(path) + s).exists())


def run(events: int, seed: int, workdir: Path, skip: set[str], forget_sizes=(1000, 10_000),
        json_path: str | None = None) -> dict:
    started = time.perf_counter()

    def save_partial(phase: str) -> None:
        """Long runs: keep what is measured so far (marked partial) in case a later phase dies."""
        if json_path:
            report.write_json({**results, "partial_after": phase}, json_path)

    results: dict = {"n_events_requested": events, "seed": seed}
    reasons: dict = {}
    db = workdir / "ledger.db"
    ledger = Ledger(db, create=True)
    gen = Generator(seed, registry=ledger.registry)
    raw = RawStore(str(workdir / "raw.db"))
    same = SameRowsStore(str(workdir / "same-rows.db"), ledger.projector.schema)
    peer, why = eventsourcing_peer(str(workdir / "eventsourcing.db"))
    if peer is None:
        reasons["eventsourcing_append_per_s"] = reasons["vs_eventsourcing_ratio"] = why

    _log(f"observe stream to {events:,} events in transactions of 1,000 candidates ...")
    results.update(observe.stream(ledger, gen, events, raw, peer, log=_log, same=same))
    raw.close()
    same.close()
    if peer is not None:
        peer.close()

    save_partial("observe")
    _truncate_wal(ledger)
    results["bytes_per_event"] = round(_size(db) / results["events"], 1)
    results["raw_bytes_per_event"] = round(_size(workdir / "raw.db") / results["events"], 1)

    if "single" not in skip:
        _log("single observations (synchronous=FULL) ...")
        results.update(observe.single(ledger, gen))
    if "as_of" not in skip:
        _log("facts --as-of ...")
        results.update(queries.as_of(ledger))
    if "recall" not in skip:
        _log("recall ...")
        got = queries.recall(ledger)
        if got.get("recall_reason"):
            reason = got.pop("recall_reason")
            for key in ("recall_p50_ms", "recall_p99_ms", "recall_mean_selected"):
                reasons[key] = reason
        results.update(got)
    if "verify" not in skip:
        _log("verify ...")
        results.update(verify.measure(ledger, gen, workdir))
    save_partial("verify")
    if "proofs" not in skip:
        _log("checkpoint and proofs ...")
        results.update(proofs.measure(ledger))
    if "replay" not in skip:
        _log("replay (child process) ...")
        _truncate_wal(ledger)
        results.update(replay.measure(str(db)))
    save_partial("replay")
    if "forget" not in skip:
        missing = forget.available()
        if missing:
            for key in forget.KEYS:
                results[key] = None
                reasons[key] = missing
        else:
            _log("forget: copies for the bulk runs ...")
            made = forget.copies(ledger, workdir, forget_sizes)
            _log("forget: 100 users on the full ledger ...")
            results.update(forget.per_user(ledger))
            save_partial("forget_user")
            _log("forget: bulk runs in the fresh copies ...")
            results.update(forget.bulk(ledger.registry, made, log=_log))
            for key in ("forget_1k_s", "forget_10k_s"):
                if key not in results:
                    results[key] = None
                    reasons[key] = (f"this run forgot {', '.join(map(str, forget_sizes))} users in "
                                    "bulk (--forget-sizes); see forget_<n>_users_s")
    save_partial("forget")
    if "meaning" not in skip:
        _log("the write path with and without the semantic extra ...")
        got = observe.meaning(workdir, seed, ledger.registry, candidates=max(100, min(2000, events // 50)))
        why = got.pop("meaning_reason", None)
        if why:
            for key in MEANING_KEYS:
                reasons[key] = why
        results.update(got)
    if "adk" not in skip:
        _log("google-adk peer ...")
        got = adk.measure(workdir, registry=ledger.registry)
        why = got.pop("adk_reason", None)
        if why:
            for key in ("adk_sqlite_add_per_s", "adk_sqlite_search_p99_ms", "vs_adk_add_ratio"):
                if got.get(key) is None:
                    reasons[key] = why
        results.update(got)
    ledger.close()
    if results.get("recall_p99_ms") and results.get("adk_sqlite_search_p99_ms"):
        results["recall_p99_vs_adk_search"] = round(
            results["recall_p99_ms"] / results["adk_sqlite_search_p99_ms"], 3)
    for key in report.ORDER:
        results.setdefault(key, None)
        if results[key] is None and key not in reasons:
            reasons[key] = "skipped" if any(p in key for p in skip) else "not measured"
    results["null_reasons"] = reasons
    results["targets"] = {k: report.verdict(k, results) for k in report.TARGETS}
    results["meta"] = _meta(time.perf_counter() - started)
    return results


MEANING_KEYS = ("observe_meaning_per_s", "observe_no_meaning_per_s", "observe_meaning_ratio")


def _truncate_wal(ledger: Ledger) -> None:
    """Empty the WAL (the file size is a figure), with the ledger's own checkpoint thread kept out."""
    with ledger.checkpointer.exclusive():
        for _ in range(100):
            if not ledger._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]:
                return
            time.sleep(0.05)
    raise RuntimeError("the bench ledger's WAL could not be truncated (a reader held it)")


def _meta(seconds: float) -> dict:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=Path(__file__).parent).stdout.strip() or None
    except OSError:
        commit = None
    return {"date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "seconds": round(seconds, 1), "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version, "cpus": os.cpu_count(),
            "load_avg_1m_at_end": round(os.getloadavg()[0], 2), "git_commit": commit}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(arg == "--db" or arg.startswith("--db=") for arg in argv):
        pg.main(argv)                          # a ledger named by --db: the backend bench (bench/pg.py)
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000, help="events to append (default 100,000)")
    parser.add_argument("--json", dest="json_path", help="write the results here as JSON")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--workdir", help="keep the databases here (default: a temporary folder)")
    parser.add_argument("--skip", action="append", default=[], choices=PHASES,
                        help="skip a phase (repeatable)")
    parser.add_argument("--forget-sizes", default="1000,10000",
                        help="bulk forgetting sizes, comma-separated (default 1000,10000)")
    args = parser.parse_args(argv)
    # Every phase but `meaning` measures the ledger without dedup by meaning, as every earlier
    # round did (they ran without the semantic extra); `meaning` measures both.
    os.environ.setdefault("FACTLEDGER_EMBEDDER", "off")
    sizes = tuple(int(x) for x in args.forget_sizes.split(",") if x)
    if args.workdir:
        workdir = Path(args.workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        for old in workdir.glob("*.db*"):
            old.unlink()
        results = run(args.events, args.seed, workdir, set(args.skip), sizes, args.json_path)
    else:
        tmp = tempfile.mkdtemp(prefix="factledger-bench-")
        try:
            results = run(args.events, args.seed, Path(tmp), set(args.skip), sizes, args.json_path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(report.table(results))
    if args.json_path:
        report.write_json(results, args.json_path)
        _log(f"wrote {args.json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
