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

from .baseline import batch_rows, merkle_size
from .stats import ms, percentile, rate, ratio


def stream(ledger: Ledger, gen, target_events: int, raw, peer=None, batch: int = 1000,
           log=print, same=None) -> dict:
    """`same`: a `baseline.SameRowsStore`, given the batch's events and the projection rows the
    ledger wrote for them (`observe_same_rows_ratio`)."""
    per_batch: list[tuple[int, float]] = []
    ledger_s = raw_s = peer_s = same_s = 0.0
    candidates = 0
    decisions: Counter = Counter()
    last = ledger.head()[0]
    next_report = time.monotonic() + 30
    while last < target_events:
        cands = [make_candidate(**fields) for fields in gen.batch(batch)]
        merkle_before = merkle_size(ledger._conn) if same is not None else 0
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
        if same is not None:
            same_s += same.insert(events, batch_rows(ledger._conn, last, merkle_before, events))
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
    if same is not None:
        floor = rate(candidates, same_s)
        result["same_rows_insert_per_s"] = floor
        result["observe_same_rows_ratio"] = ratio(observe, floor)
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


def meaning(workdir, seed: int, registry, candidates: int = 2000, batch: int = 500) -> dict:
    """The write path with and without the semantic extra's dedup by meaning: the same generated
    candidates into two fresh ledgers, one with the bundled encoder (every new value of a `many`
    key compared with the key's values by one matrix product, every new fact embedded for its
    stored vector) and one with meaning off.  `observe_meaning_ratio`: with / without."""
    import os

    from factledger.ledger.semantic import embedder as encoders

    from .generator import Generator

    before = os.environ.get("FACTLEDGER_EMBEDDER")
    figures: dict = {}
    try:
        for label, setting in (("observe_meaning_per_s", None), ("observe_no_meaning_per_s", "off")):
            if setting is None:
                os.environ.pop("FACTLEDGER_EMBEDDER", None)
                if not encoders.wanted():
                    return {"meaning_reason": "the semantic extra is not installed"}
            else:
                os.environ["FACTLEDGER_EMBEDDER"] = setting
            gen = Generator(seed, registry=registry)
            with Ledger(workdir / f"meaning-{setting or 'on'}.db", create=True) as ledger:
                if setting is None:
                    encoders.get()                       # the model's load is not a write's cost
                took, done = 0.0, 0
                while done < candidates:
                    cands = [make_candidate(**fields) for fields in gen.batch(min(batch, candidates - done))]
                    t0 = time.perf_counter()
                    ledger.observe_many(cands)
                    took += time.perf_counter() - t0
                    done += len(cands)
            figures[label] = rate(done, took)
    finally:
        if before is None:
            os.environ.pop("FACTLEDGER_EMBEDDER", None)
        else:
            os.environ["FACTLEDGER_EMBEDDER"] = before
    figures["observe_meaning_ratio"] = ratio(figures["observe_meaning_per_s"], figures["observe_no_meaning_per_s"])
    return figures
