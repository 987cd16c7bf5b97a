"""Read-path measurements: `facts --as-of` over a long history, and recall (when it exists).

as-of: the generator's heavy user (a long history of supersessions and reinforcements); 200
queries at transaction times drawn (seeded) from the recorded_at values of that user's events.
recall: a user seeded with 1,000 open facts (the `many` predicates of the default registry), 200
queries built from words of those values; measured only when `Ledger.recall` exists.  The facts
are said one to four days before the ledger's own clock: facts said long before it would have
decayed under the serving threshold, and a recall that serves nothing is not the one to measure
(`recall_mean_selected` shows what the queries served).  Where the ledger records serves (the
access ledger), `recall_p99_ms` is with the record and `recall_unrecorded_p99_ms` without, from
the same queries in the same run; their ratio is `recall_recorded_vs_unrecorded_p99` (<= 1.5).
"""

from __future__ import annotations

import inspect
import random
import time
from datetime import timedelta

from factledger.ledger import Ledger, make_candidate
from factledger.ledger.vocabulary.clock import iso

from .generator import APP, HEAVY_USER
from .stats import ms, percentile

RECALL_USER = "recall-1k"
_THINGS = ["kettle", "bicycle", "camera", "guitar", "laptop", "blender", "drone", "printer",
           "tent", "kayak", "piano", "scooter", "telescope", "router", "headphones", "speaker"]
_COLOURS = ["red", "blue", "green", "black", "white", "silver", "orange", "purple"]


def as_of(ledger: Ledger, count: int = 200, seed: int = 7) -> dict:
    times = [r[0] for r in ledger._conn.execute(
        "SELECT DISTINCT recorded_at FROM events WHERE app = ? AND user = ?", (APP, HEAVY_USER))]
    history = ledger._conn.execute("SELECT COUNT(*) FROM fact_history WHERE app = ? AND user = ?",
                                  (APP, HEAVY_USER)).fetchone()[0]
    if not times:
        return {"as_of_p50_ms": None, "as_of_p99_ms": None, "as_of_reason": "no heavy user"}
    rng = random.Random(seed)
    samples, rows = [], 0
    for _ in range(count):
        at = rng.choice(times)
        t0 = time.perf_counter()
        rows += len(ledger.facts(APP, HEAVY_USER, as_of=at, include_sensitive=True))
        samples.append(time.perf_counter() - t0)
    return {"as_of_p50_ms": ms(percentile(samples, 50)), "as_of_p99_ms": ms(percentile(samples, 99)),
            "as_of_user_events": ledger._conn.execute(
                "SELECT COUNT(*) FROM events WHERE app = ? AND user = ?", (APP, HEAVY_USER)).fetchone()[0],
            "as_of_user_history_rows": history, "as_of_mean_rows": round(rows / count, 1)}


def seed_recall_user(ledger: Ledger, facts: int = 1000) -> None:
    specs = [s.name for s in ledger.registry.predicates.values()
             if s.cardinality == "many" and s.sensitivity != "health"]
    rng = random.Random(11)
    now = ledger.clock()
    cands = []
    for i in range(facts):
        predicate = specs[i % len(specs)]
        value = f"{rng.choice(_COLOURS)} {rng.choice(_THINGS)} {predicate.rsplit('.', 1)[-1]} {i}"
        said_at = iso(now - timedelta(days=1 + 3 * rng.random()))   # recent, recency differs
        cands.append(make_candidate(app=APP, user=RECALL_USER, predicate=predicate, value=value,
                                    quote=f"I have a {value}", session=f"recall-s{i}",
                                    evidence_event=f"recall-e{i}", said_at=said_at))
    ledger.observe_many(cands)


def recall(ledger: Ledger, count: int = 200, seed: int = 13) -> dict:
    if not hasattr(ledger, "recall"):
        return {"recall_p50_ms": None, "recall_p99_ms": None,
                "recall_reason": "Ledger.recall does not exist yet"}
    seed_recall_user(ledger)
    params = inspect.signature(ledger.recall).parameters
    rng = random.Random(seed)
    samples, unchecked, unrecorded, selected = [], [], [], 0
    served = _served_module()
    records = "record" in params          # a ledger that records every serve (the access ledger)
    for n in range(count):
        query = f"{rng.choice(_COLOURS)} {rng.choice(_THINGS)}"
        # where this ledger records serves, the same query a third time without the record
        # (`record=False`): recall p99 with recording against without, in the same run
        if records:
            t0 = time.perf_counter()
            ledger.recall(APP, RECALL_USER, query, record=False)
            unrecorded.append(time.perf_counter() - t0)
        # each query twice, in alternating order: with the check of what is served (the figure),
        # and, where this ledger has one, with that check switched off (what it costs)
        for checked in ((True, False) if n % 2 else (False, True)):
            if not checked and served is None:
                continue
            saved = served.check_recall if served is not None else None
            if not checked:
                served.check_recall = lambda *args, **kwargs: None
            try:
                t0 = time.perf_counter()
                if "query" in params and list(params)[:2] == ["app", "user"]:
                    result = ledger.recall(APP, RECALL_USER, query)
                else:
                    result = ledger.recall(app=APP, user=RECALL_USER, query=query)
                (samples if checked else unchecked).append(time.perf_counter() - t0)
            finally:
                if served is not None:
                    served.check_recall = saved
            if checked:
                selected += len(result.selected)
    open_facts = ledger._conn.execute("SELECT COUNT(*) FROM facts_current WHERE app = ? AND user = ?",
                                     (APP, RECALL_USER)).fetchone()[0]
    out = {"recall_p50_ms": ms(percentile(samples, 50)), "recall_p99_ms": ms(percentile(samples, 99)),
           "recall_user_open_facts": open_facts, "recall_mean_selected": round(selected / count, 2)}
    if unchecked:
        out.update(recall_unchecked_p50_ms=ms(percentile(unchecked, 50)),
                   recall_unchecked_p99_ms=ms(percentile(unchecked, 99)))
    if unrecorded:
        # recall_p99_ms is the recorded figure (a library recall records by default)
        out.update(recall_recorded_p99_ms=out["recall_p99_ms"],
                   recall_unrecorded_p50_ms=ms(percentile(unrecorded, 50)),
                   recall_unrecorded_p99_ms=ms(percentile(unrecorded, 99)))
        out["recall_recorded_vs_unrecorded_p99"] = round(percentile(samples, 99) / percentile(unrecorded, 99), 3)
    return out


def _served_module():
    """The module whose `check_recall` checks what recall serves (None on a ledger without it)."""
    try:
        from factledger.ledger.audit import served
    except ImportError:
        return None
    return served
