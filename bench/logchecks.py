"""`python -m bench.logchecks [--sessions 300] [--observations 300]`: what the write path's log checks cost.

Issue 47 has ingestion read what was forgotten and its watermark from the log (kept folds,
`projections/logkept.py`) and the decision table's read of a key checked against the log
(`served.check_key_rows`; its past, negations and an open key's kind: `check_key_past`,
`check_key_negations`, `check_key_kind`).  This times the same work with the checks and with them switched off
in the same process (fresh ledgers, alternated so machine drift cancels): N one-event sessions of
one user (the partition grows, so the kept folds must extend, not refold), N one-event sessions
of N users, N single observations alternating two values of one key (each decision reads the
key), the same said ever earlier (each a late statement: the key's past is read), and the same as
one `observe_many` per 50 (the keys read up front).  Prints the ratios; `--json FILE` writes the figures.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from factledger.ledger import Ledger, make_candidate
from factledger.ledger.ingest import pipeline
from factledger.ledger.vocabulary.clock import fixed_clock
from factledger.projections import sessions

NOW = "2026-11-01T00:00:00Z"


def _session(i: int, user: str) -> dict:
    return {"id": f"s{i}", "appName": "app", "userId": user, "events": [
        {"id": f"e{i}", "author": "user", "timestamp": 1788000000 + i,
         "content": {"role": "user", "parts": [{"text": "I live in Pune"}]}}]}


def _alternating(i: int, second: int):
    return make_candidate(app="app", user="u1", predicate="home_city", value=("Pune", "Lima")[i % 2],
                          quote=f"I live in {('Pune', 'Lima')[i % 2]}", session=f"s{i}", evidence_event=f"e{i}",
                          said_at=f"2026-10-01T{second // 3600 % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z")


@contextmanager
def _unchecked(ledger: Ledger):
    """The checks off: the projection rows read as before issue 47's change."""
    projector = ledger._work.projector
    hooks = ("check_key", "check_past", "check_negations", "check_kind")
    saved = (pipeline.checked_state, pipeline.is_forgotten, *(getattr(projector, h) for h in hooks))
    pipeline.checked_state = sessions.session_state
    pipeline.is_forgotten = lambda conn, app, kind, digest: conn.execute(
        "SELECT 1 FROM forgotten_scopes WHERE kind = ? AND hash = ?", (kind, digest)).fetchone() is not None
    for hook in hooks:
        setattr(projector, hook, None)
    try:
        yield
    finally:
        pipeline.checked_state, pipeline.is_forgotten = saved[:2]
        for hook, value in zip(hooks, saved[2:]):
            setattr(projector, hook, value)


def _run(folder: Path, name: str, checked: bool, work) -> float:
    path = folder / f"{name}-{'on' if checked else 'off'}.db"
    with Ledger(path, clock=fixed_clock(NOW), create=True) as ledger:
        started = time.perf_counter()
        if checked:
            work(ledger)
        else:
            with _unchecked(ledger):
                work(ledger)
        return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.logchecks", description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--observations", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", dest="json_out", default=None)
    args = parser.parse_args(argv)
    n, m = args.sessions, args.observations
    cases = {
        "ingest, one user": lambda ledger: [ledger.ingest_session(_session(i, "u1"), extractor="patterns")
                                           for i in range(n)],
        "ingest, many users": lambda ledger: [ledger.ingest_session(_session(i, f"u{i}"), extractor="patterns")
                                             for i in range(n)],
        "observe, one key": lambda ledger: [ledger.observe(make_candidate(
            app="app", user="u1", predicate="home_city", value=("Pune", "Lima")[i % 2],
            quote=f"I live in {('Pune', 'Lima')[i % 2]}", session=f"s{i}", evidence_event=f"e{i}",
            said_at=f"2026-10-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z")) for i in range(m)],
        "observe, one key, late": lambda ledger: [ledger.observe(_alternating(i, m - i)) for i in range(m)],
        "observe_many of 50, one key": lambda ledger: [ledger.observe_many([_alternating(i, i) for i in
                                                                            range(start, min(start + 50, m))])
                                                       for start in range(0, m, 50)],
    }
    figures = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, work in cases.items():
            on = off = 0.0
            for r in range(args.rounds):
                off += _run(Path(folder), f"{name}-{r}".replace(" ", "_").replace(",", ""), False, work)
                on += _run(Path(folder), f"{name}-{r}".replace(" ", "_").replace(",", ""), True, work)
            count = n if name.startswith("ingest") else m
            figures[name] = {"count": count, "checked_ms_each": round(on / args.rounds / count * 1000, 3),
                             "unchecked_ms_each": round(off / args.rounds / count * 1000, 3),
                             "ratio": round(on / off, 3)}
            print(f"{name:20} {figures[name]['checked_ms_each']:8.3f} ms each checked, "
                  f"{figures[name]['unchecked_ms_each']:8.3f} unchecked, ratio {figures[name]['ratio']:.3f}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
