"""Write-path measurements: the batch stream (with its baselines) and single observations.

The batch stream appends the generated candidates through `Ledger.observe_many` in transactions
of 1,000.  After each batch the events it appended are read back (untimed) and the same events are
appended to the raw baseline and to the eventsourcing peer, so the three run on the same data in
the same minutes and machine drift cancels out of the ratios.  Building the candidates (pydantic
shape checks, the caller's work) is outside the timed region; everything `observe_many` does is in.
"""

from __future__ import annotations

import time
from collections import Counter

import orjson

from factledger.ledger import Ledger, make_candidate

from .stats import ms, percentile, rate, ratio


def stream(ledger: Ledger, gen, target_events: int, raw, peer=None, batch: int = 1000,
           log=print) -> dict:
    per_batch: list[tuple[int, float]] = []
    ledger_s = raw_s = peer_s = 0.0
    candidates = 0
    decisions: Counter = Counter()
    last = ledger.head()[0]
    next_report = time.monotonic() + 30
    while last < target_events:
        cands = [make_candidate(**fields) for fields in gen.batch(batch)]
        t0 = time.perf_counter()
        outcomes = ledger.observe_many(cands)
        took = time.perf_counter() - t0
        ledger_s += took
        per_batch.append((len(cands), took))
        candidates += len(cands)
        for o in outcomes:
            decisions["series_reading" if o.rule == "series_reading" else o.decision] += 1
        events = [(t, a, u, orjson.loads(b)) for t, a, u, b in ledger._conn.execute(
            "SELECT type, app, user, body FROM events WHERE seq > ? ORDER BY seq", (last,))]
        last += len(events)
        raw_s += raw.insert(events)
        if peer is not None:
            peer_s += peer.insert(events)
        if time.monotonic() > next_report:
            log(f"  observe: {last:,} events, {candidates:,} candidates, "
                f"{candidates / ledger_s:,.0f}/s ledger, {candidates / raw_s:,.0f}/s raw")
            next_report = time.monotonic() + 30
    tenth = max(1, len(per_batch) // 10)
    deciles = [per_batch[i * tenth:(i + 1) * tenth] for i in range(10)]
    deciles[-1] = per_batch[-tenth:]
    decile_us = [round(sum(t for _, t in d) / sum(n for n, _ in d) * 1e6, 1) if d else None
                 for d in deciles]
    first, final = decile_us[0] / 1e6, decile_us[-1] / 1e6
    observe = rate(candidates, ledger_s)
    raw_rate = rate(candidates, raw_s)
    result = {
        "events": last,
        "candidates": candidates,
        "events_per_candidate": round(last / candidates, 3),
        "decisions": dict(sorted(decisions.items())),
        "observe_batch_per_s": observe,
        "raw_insert_per_s": raw_rate,
        "raw_insert_events_per_s": rate(last, raw_s),
        "observe_batch_ratio": ratio(observe, raw_rate),
        "observe_cost_growth": round(final / first, 3),
        "observe_first_tenth_us": round(first * 1e6, 1),
        "observe_last_tenth_us": round(final * 1e6, 1),
        # The first tenth is insert-heavy (users start empty); from the second on the mix is
        # steady, so last / second isolates growth with the ledger's size from the mix.
        "observe_cost_growth_steady": (round(decile_us[-1] / decile_us[1], 3)
                                       if decile_us[1] else None),
        "observe_decile_us": decile_us,
    }
    if peer is not None:
        es = rate(candidates, peer_s)
        result["eventsourcing_append_per_s"] = es
        result["vs_eventsourcing_ratio"] = ratio(observe, es)
    return result


def single(ledger: Ledger, gen, count: int = 200) -> dict:
    """One candidate per transaction (synchronous=FULL, so each commit is an fsync)."""
    return {**single_latency(ledger, gen, count),
            "observe_single_synchronous": ledger._conn.execute("PRAGMA synchronous").fetchone()[0]}


def single_latency(ledger: Ledger, gen, count: int = 200) -> dict:
    """Each `observe` timed on its own, whatever the backend (bench/pg.py uses it on both)."""
    samples = []
    for _ in range(count):
        cand = make_candidate(**gen.next())
        t0 = time.perf_counter()
        ledger.observe(cand)
        samples.append(time.perf_counter() - t0)
    return {"observe_single_p50_ms": ms(percentile(samples, 50)),
            "observe_single_p99_ms": ms(percentile(samples, 99))}
