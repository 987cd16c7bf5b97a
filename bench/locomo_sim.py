"""Ranking variants replayed on `bench.locomo --dump`, and why each miss was missed.

    python -m bench.locomo_sim DUMP.jsonl [--mode observations] [--k 10] [--recency-weight W]

Why a replay: `explain=True` gives every in-scope fact's meaning, lexical and recency scores, so
another blend weight, recency weight, half-life or relevance floor can be scored without asking
the ledger again (a grid of 100 variants costs seconds, not a run each).  The replay is recall's
arithmetic (docs/semantic.md, "Hybrid recall"): relevance = a * meaning + (1 - a) * lexical; a
fact no query word reaches is served only at meaning >= max(floor, share * the partition's best
meaning); score = (1 - w) * relevance + w * recency; each partition cut at k, merged by score.
Scores are the explanation's (rounded to 4 places), so a replay of the shipped settings agrees
with the measured ranks to within ties (`reproduced` says how many).  `--recency-weight`: the
weight the dumped run scored the mode's facts with; by default an event's (the call's 0.3 times
`DATED_RECENCY_SHARE`: the `observations` and `turns` modes store events); 0.3 for the registry
facts of `extractor` and for a dump made before events took a share.

Each miss of the shipped settings among the answerable questions is put down to the first of:
- `floor`: the best evidence fact is `no_match` (no shared word, meaning under the floor);
- `other_speaker`: it is in its own partition's top k but the other speaker's facts outscore it;
- `recency`: ranked by relevance alone (w = 0) it is within k;
- `blend`: ranked by meaning alone or by words alone it is within k;
- `limit`: within 2k (a larger limit would serve it);
- `relevance`: further down by every signal (neither words nor meaning prefer it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from factledger.ledger.domain.recall_options import DEFAULT_RECENCY_WEIGHT
from factledger.ledger.recall.facts import DATED_RECENCY_SHARE

SHIPPED = {"a": 0.6, "w": round(DEFAULT_RECENCY_WEIGHT * DATED_RECENCY_SHARE, 6), "half_life": 90.0,
           "floor": 0.05, "share": 0.3}


def read(path: str, mode: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [d for d in map(json.loads, f) if d["mode"] == mode]


def ranked(question: dict, a: float, w: float, half_life: float, floor: float, share: float,
           k: int, per_partition: bool = True) -> list[tuple[float, bool, int]]:
    """(score, evidence?, partition) of the served facts, best first, merged and cut at k."""
    rows = question["candidates"]
    best = Counter()
    for u, m, _lex, _rec, _out, _ev in rows:
        best[u] = max(best[u], m or 0.0)
    by_user: dict[int, list] = {}
    for u, m, lex, rec, _out, ev in rows:
        m, lex = m or 0.0, lex or 0.0
        if lex <= 0.0 and m < max(floor, share * best[u]):
            continue
        relevance = a * m + (1 - a) * lex
        if relevance <= 0.0:
            continue
        if half_life != SHIPPED["half_life"] and rec:
            rec = rec ** (SHIPPED["half_life"] / half_life)      # 0.5 ** (age / half-life)
        by_user.setdefault(u, []).append(((1 - w) * relevance + w * (rec or 0.0), ev, u))
    served = []
    for facts in by_user.values():
        facts.sort(key=lambda f: -f[0])
        served.extend(facts[:k] if per_partition else facts)
    served.sort(key=lambda f: -f[0])
    return served[:k]


def hit(question: dict, k: int, **settings) -> bool:
    return any(ev for _s, ev, _u in ranked(question, k=k, **settings))


def recall(questions: list[dict], k: int, **settings) -> float:
    return round(sum(hit(q, k, **settings) for q in questions) / len(questions), 4) if questions else 0.0


def cause(question: dict, k: int) -> str:
    """Why the shipped settings missed it (the first that fits, module docstring)."""
    rows = question["candidates"]
    evidence = [r for r in rows if r[5]]
    if not evidence:
        return "not_stored"
    if all(r[4] == "no_match" for r in evidence):
        return "floor"
    shipped = dict(SHIPPED)
    if _in_own_top(question, k):
        return "other_speaker"
    if hit(question, k, **{**shipped, "w": 0.0}):
        return "recency"
    if hit(question, k, **{**shipped, "a": 1.0}) or hit(question, k, **{**shipped, "a": 0.0}):
        return "blend"
    if hit(question, 2 * k, **shipped):
        return "limit"
    return "relevance"


def _in_own_top(question: dict, k: int) -> bool:
    """Whether some evidence fact is within k of its own partition (shipped settings)."""
    rows = question["candidates"]
    for u in {r[0] for r in rows if r[5]}:
        own = {**question, "candidates": [r for r in rows if r[0] == u]}
        if hit(own, k, **SHIPPED):
            return True
    return False


def evidence_rank(question: dict, **settings) -> int | None:
    """The best evidence fact's rank among everything the settings would serve (no cut)."""
    for i, (_s, ev, _u) in enumerate(ranked(question, k=10**6, **settings), 1):
        if ev:
            return i
    return None


def grid(questions: list[dict], k: int) -> list[dict]:
    rows = []
    for a in (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0):
        for w in (0.0, 0.015, 0.05, 0.1, 0.2, 0.3):
            rows.append({"a": a, "w": w, "recall": recall(questions, k, **{**SHIPPED, "a": a, "w": w})})
    for half_life in (180.0, 365.0, 730.0):
        rows.append({"a": 0.6, "w": SHIPPED["w"], "half_life": half_life,
                     "recall": recall(questions, k, **{**SHIPPED, "half_life": half_life})})
    for floor, share in ((0.0, 0.0), (0.05, 0.0), (0.1, 0.3), (0.05, 0.5)):
        rows.append({"a": 0.6, "w": SHIPPED["w"], "floor": floor, "share": share,
                     "recall": recall(questions, k, **{**SHIPPED, "floor": floor, "share": share})})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.locomo_sim", description=__doc__.split("\n\n")[0])
    parser.add_argument("dump")
    parser.add_argument("--mode", default="observations")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--recency-weight", type=float, default=SHIPPED["w"])
    args = parser.parse_args(argv)
    SHIPPED["w"] = args.recency_weight
    try:
        questions = read(args.dump, args.mode)
    except (OSError, ValueError, KeyError) as exc:
        print(f"Error: {args.dump}: {exc}", file=sys.stderr)
        return 1
    answerable = [q for q in questions if q["answerable"]]
    asked = questions
    k = args.k
    reproduced = sum((q["rank"] is not None) == hit(q, k, **SHIPPED) for q in questions)
    misses = [q for q in answerable if q["rank"] is None]
    causes = Counter(cause(q, k) for q in misses)
    by_category: dict[str, Counter] = {}
    for q in misses:
        by_category.setdefault(str(q["category"]), Counter())[cause(q, k)] += 1
    ranks = [evidence_rank(q, **SHIPPED) for q in misses]
    out = {
        "mode": args.mode, "k": k, "questions": len(asked), "answerable": len(answerable),
        "reproduced": f"{reproduced}/{len(questions)}",
        "shipped": {"recall": recall(asked, k, **SHIPPED), "answerable_recall": recall(answerable, k, **SHIPPED)},
        "miss_causes": dict(causes.most_common()),
        "miss_causes_by_category": {c: dict(n.most_common()) for c, n in sorted(by_category.items())},
        "miss_evidence_rank": {"within_2k": sum(1 for r in ranks if r and r <= 2 * k),
                               "within_50": sum(1 for r in ranks if r and r <= 50),
                               "not_served": sum(1 for r in ranks if r is None),
                               "median": _median([r for r in ranks if r])},
    }
    print(json.dumps(out, indent=1))
    print(f"answerable recall@{k} by variant (shipped: {SHIPPED}):")
    for row in grid(answerable, k):
        print("  " + json.dumps(row))
    return 0


def _median(values: list[int]):
    if not values:
        return None
    values = sorted(values)
    return values[len(values) // 2]


if __name__ == "__main__":
    sys.exit(main())
