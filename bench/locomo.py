"""Recall measured on a public benchmark nobody here wrote: LoCoMo's evidence turns.

    python -m bench.locomo LOCOMO_JSON --conversations 0-4 --json OUT
        [--modes observations,turns,extractor] [--rankings lexical,semantic,hybrid] [--k 10]
        [--dump FILE.jsonl] [--recency-weight W]

LOCOMO_JSON is `data/locomo10.json` of snap-research/LoCoMo (CC BY-NC: pass its path, never copy
it into the repository).  Develop on conversations 0-4; 5-9 are held out.

What is stored, per mode, in a temporary SQLite ledger of its own (written once, asked with each
ranking):
- `observations`: the dataset's observations (per session and speaker, a sentence and the turn(s)
  it rests on) as facts of kind `event` under the open key `locomo.observation`, value and quote
  the sentence, evidence its first turn, said at its session's date: retrieval with a perfect
  extractor.
- `turns`: every turn as an `event` of its speaker under `locomo.turn`, value and quote the
  turn's text (a text over the value's 500 characters is cut at a word; a turn the write path
  refuses, such as one too short to say anything, is counted in `refused`).
- `extractor`: the shipped offline `patterns` extractor over each session, ingested once per
  speaker as an ADK session (that speaker's turns authored `user`, the other's an agent's).

Partitions: one app per conversation (its sample id), one user per speaker.  Why: a fact is
about the person who said it (the extractor files every fact under "the user", so with one user
per conversation the two speakers' `one` keys would supersede each other), and that is how an
application keeps memory.  A question is asked of both speakers' partitions (the questions name
one speaker, or both, and the adversarial ones name the wrong one on purpose) and the two served
lists are merged by score, best first, cut at k; latency is the two recalls together.  The
scores are on one scale (relevance and recency in [0, 1]); the TF-IDF weights are each
partition's own.

Scoring, per question (evidence ids normalised by `bench.locomo_data`):
- A served fact's evidence is its evidence turn, plus the turns of the candidates the write
  reinforced it with (the same sentence said twice).  hit@n: one of the first n served facts has
  an evidence turn among the question's.  `recall_at_n` is over the non-adversarial questions
  (categories 1-4) with at least one evidence turn; `answerable_recall_at_k` over those of them
  with an evidence turn that some stored fact cites (in `observations` mode: that some
  observation cites; no ranking can serve the rest).
- Category 5 (adversarial: the question pins on one speaker what the other said) is scored as
  abstention: a question abstained when no served fact's evidence is among its evidence turns
  (serving nothing at all abstains; `abstention_empty` counts those alone).
- `p50_ms` / `p99_ms`: the wall time of a question's recalls (both partitions), after one
  untimed warm-up recall per ledger (the encoder's load).

Recall is asked with `clearance="all"` (the facts are the conversation's own; what is measured is
ranking, not the clearance gate) and otherwise the defaults but `limit=k`.  The ledger's clock
is pinned, per conversation, to a day after its last session: nothing said is in the future, and
ages are as if asked at the end of the conversation.

`--dump FILE` writes, for every non-adversarial question asked with a `hybrid` ranking, each
in-scope fact's scores from `explain=True` (meaning, lexical, recency, outcome, whether it is an
evidence fact): ids and numbers, no dataset text; `bench.locomo_sim` replays ranking variants
on it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

from bench.locomo_data import Conversation, LocomoError, load, parse_indices

MODES = ("observations", "turns", "extractor")
RANKINGS = ("lexical", "semantic", "hybrid")
ADVERSARIAL = 5
MAX_VALUE = 500
# Open keys of kind `event` (ledger/registry/kinds.py): many values, never superseded, dated by
# when they were said; the shipped registry, nothing declared for the benchmark.
PREDICATES = {"observations": "locomo.observation", "turns": "locomo.turn"}
KIND = "event"


class Clock:
    """The ledger's clock, moved by the harness (pinned per conversation)."""

    def __init__(self):
        self.now = None

    def __call__(self):
        return self.now


class Progress:
    """click's progress bar on stderr at a terminal; otherwise one line per stage."""

    def __init__(self, enabled: bool | None = None):
        self.bar_enabled = sys.stderr.isatty() if enabled is None else enabled

    def stage(self, label: str, items):
        items = list(items)
        if self.bar_enabled:
            import click
            return click.progressbar(items, label=label, file=sys.stderr)
        print(f"{label} ({len(items)}) ...", file=sys.stderr, flush=True)
        return _Plain(items)


class _Plain:
    def __init__(self, items):
        self.items = items

    def __enter__(self):
        return iter(self.items)

    def __exit__(self, *exc):
        return False


def _truncate(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= MAX_VALUE:
        return text
    cut = text[:MAX_VALUE].rsplit(" ", 1)[0]
    return cut or text[:MAX_VALUE]


def _said(session) -> str:
    return session.said_at.strftime("%Y-%m-%dT%H:%M:%SZ")


class Store:
    """One mode's ledger: what it stored and which turns each fact rests on."""

    def __init__(self, ledger, clock: Clock, mode: str):
        self.ledger, self.clock, self.mode = ledger, clock, mode
        self.evidence: dict[str, set[str]] = {}       # fact id -> evidence turn ids
        self.cited: dict[str, set[str]] = {}          # sample id -> turns some stored fact cites
        self.facts = self.refused = self.candidates = 0

    def write(self, conv: Conversation) -> None:
        self.clock.now = conv.last_said + timedelta(days=1)
        if self.mode == "extractor":
            self._extract(conv)
        else:
            self._observe(conv)
        cited = self.cited.setdefault(conv.sample_id, set())
        for speaker in conv.speakers:
            for fact in self.ledger.facts(conv.sample_id, speaker, include_sensitive=True):
                found = self.evidence.setdefault(fact["fact_id"], set())
                found.add(fact["evidence_event"])
                cited |= found
                self.facts += 1

    def _observe(self, conv: Conversation) -> None:
        from factledger.ledger import make_candidate
        from factledger.ledger.errors import CandidateRefused
        from factledger.ledger.service import refuse_unsupported

        predicate = PREDICATES[self.mode]
        rows = []      # (candidate, evidence turns)
        if self.mode == "observations":
            for obs in conv.observations:
                if obs.evidence and obs.sentence.strip():
                    rows.append((obs.speaker, obs.sentence, obs.evidence, conv.session_of(obs.session)))
        else:
            for session in conv.sessions:
                for turn in session.turns:
                    if turn.text.strip():
                        rows.append((turn.speaker, turn.text, (turn.dia_id,), session))
        batch = []
        for speaker, text, evidence, session in rows:
            value = _truncate(text)
            candidate = make_candidate(
                app=conv.sample_id, user=speaker, kind=KIND, predicate=predicate, value=value,
                quote=text.strip()[:2000],
                session=f"session_{session.number}", evidence_event=evidence[0], said_at=_said(session))
            self.candidates += 1
            try:
                refuse_unsupported(candidate, self.ledger.registry)
            except CandidateRefused:
                self.refused += 1
                continue
            batch.append((candidate, evidence))
        outcomes = self.ledger.observe_many([c for c, _ in batch])
        for (_, evidence), outcome in zip(batch, outcomes):
            if outcome.fact_id:
                self.evidence.setdefault(outcome.fact_id, set()).update(evidence)

    def _extract(self, conv: Conversation) -> None:
        for speaker in conv.speakers:
            for session in conv.sessions:
                start = session.said_at.timestamp()
                events = [{"id": turn.dia_id, "author": "user" if turn.speaker == speaker else "companion",
                           "timestamp": start + i,
                           "content": {"role": "user" if turn.speaker == speaker else "model",
                                       "parts": [{"text": turn.text}]}}
                          for i, turn in enumerate(session.turns) if turn.text.strip()]
                result = self.ledger.ingest_session(
                    {"id": f"session_{session.number}", "appName": conv.sample_id, "userId": speaker,
                     "events": events}, extractor="patterns")
                self.candidates += result.candidates
                self.refused += sum(n for reason, n in result.counts.items() if reason.startswith("reject"))


def ask(ledger, conv: Conversation, question: str, ranking: str, k: int, explain: bool = False,
        recency_weight: float | None = None):
    """The served facts (both speakers' partitions merged by score, best first, cut at k), and
    with `explain` every in-scope fact of both.  `recency_weight`: None as shipped."""
    results = [ledger.recall(conv.sample_id, speaker, question, mode=ranking, limit=k, clearance="all",
                             explain=explain, recency_weight=recency_weight, record=False)  # ranking, not serving
               for speaker in conv.speakers]
    served = [f for r in results for f in r.selected]
    served.sort(key=lambda f: -(f["score"] or 0.0))          # stable: speaker a first on a tie
    return served[:k], [c for r in results for c in r.candidates]


def _share(hits: int, n: int) -> float | None:
    return round(hits / n, 4) if n else None


def measure(store: Store, convs: list[Conversation], ranking: str, k: int, progress: Progress,
            dump=None, recency_weight: float | None = None) -> dict:
    ledger = store.ledger
    cuts = sorted({1, 5, k} if k >= 5 else {1, k})
    hits = {n: 0 for n in cuts}
    answerable_hits = answerable = asked = 0
    by_cat: dict[int, Counter] = {}
    abstained = empty = adversarial = 0
    times: list[float] = []
    store.clock.now = convs[0].last_said + timedelta(days=1)
    ask(ledger, convs[0], "warm up", ranking, k)
    questions = [(conv, qi, q) for conv in convs for qi, q in enumerate(conv.questions)]
    with progress.stage(f"{store.mode} / {ranking}", questions) as items:
        for conv, qi, q in items:
            store.clock.now = conv.last_said + timedelta(days=1)
            explain = dump is not None and ranking == "hybrid" and q.category != ADVERSARIAL
            began = time.perf_counter()
            served, candidates = ask(ledger, conv, q.question, ranking, k, explain, recency_weight)
            times.append((time.perf_counter() - began) * 1000)
            rank = next((i for i, f in enumerate(served, 1)
                         if store.evidence.get(f["fact_id"], set()) & q.evidence), None)
            cat = by_cat.setdefault(q.category, Counter())
            cat["questions"] += 1
            if q.category == ADVERSARIAL:
                adversarial += 1
                abstained += rank is None
                empty += not served
                continue
            if not q.evidence:
                cat["no_evidence"] += 1
                continue
            asked += 1
            cat["asked"] += 1
            for n in cuts:
                if rank is not None and rank <= n:
                    hits[n] += 1
                    cat[f"hit_{n}"] += 1
            if q.evidence & store.cited.get(conv.sample_id, set()):
                answerable += 1
                answerable_hits += rank is not None
            if explain:
                dump.write(json.dumps(_dumped(store, conv, qi, q, rank, candidates)) + "\n")
    result = {f"recall_at_{n}": _share(hits[n], asked) for n in reversed(cuts)}
    result[f"answerable_recall_at_{k}"] = _share(answerable_hits, answerable)
    result["by_category"] = {}
    for c in sorted(by_cat):
        counts = by_cat[c]
        if c == ADVERSARIAL:
            result["by_category"][str(c)] = {"questions": counts["questions"],
                                             "abstention": _share(abstained, adversarial)}
        else:
            result["by_category"][str(c)] = {"questions": counts["questions"], "asked": counts["asked"],
                                             **{f"recall_at_{n}": _share(counts[f"hit_{n}"], counts["asked"])
                                                for n in reversed(cuts)}}
    result.update(abstention=_share(abstained, adversarial), abstention_empty=_share(empty, adversarial),
                  p50_ms=round(statistics.median(times), 2) if times else None,
                  p99_ms=round(_percentile(times, 0.99), 2) if times else None,
                  questions=asked, answerable=answerable, adversarial=adversarial,
                  facts=store.facts, candidates=store.candidates, refused=store.refused)
    return result


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _dumped(store: Store, conv: Conversation, qi: int, q, rank, candidates) -> dict:
    """One question's explanation as numbers: per in-scope fact [speaker index, meaning, lexical,
    recency, outcome, evidence?] (no dataset text)."""
    users = {name: i for i, name in enumerate(conv.speakers)}
    rows = [[users.get(c["user"], -1), c.get("meaning"), c.get("lexical"), c.get("recency"), c["outcome"],
             bool(store.evidence.get(c["fact_id"], set()) & q.evidence)] for c in candidates]
    return {"mode": store.mode, "conversation": conv.index, "question": qi, "category": q.category,
            "rank": rank, "answerable": bool(q.evidence & store.cited.get(conv.sample_id, set())),
            "candidates": rows}


def run(path: str, indices: list[int], modes=MODES, rankings=RANKINGS, k: int = 10,
        progress: Progress | None = None, dump_path: str | None = None,
        recency_weight: float | None = None) -> dict:
    """{mode: {ranking: figures}}; see the module docstring."""
    from factledger.ledger import Ledger
    from factledger.ledger.semantic import embedder

    progress = progress or Progress()
    convs = load(path, indices)
    if any(r != "lexical" for r in rankings) and not embedder.available():
        raise LocomoError("semantic and hybrid rankings need the semantic extra (and FACTLEDGER_EMBEDDER not off)")
    results: dict = {}
    dump = open(dump_path, "w", encoding="utf-8") if dump_path else None     # noqa: SIM115
    try:
        with tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
            for mode in modes:
                clock = Clock()
                clock.now = convs[0].last_said + timedelta(days=1)
                with Ledger(Path(tmp) / f"{mode}.db", clock=clock, create=True) as ledger:
                    store = Store(ledger, clock, mode)
                    with progress.stage(f"{mode}: storing", convs) as items:
                        for conv in items:
                            store.write(conv)
                    results[mode] = {r: measure(store, convs, r, k, progress, dump, recency_weight)
                                     for r in rankings}
    finally:
        if dump:
            dump.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.locomo", description=__doc__.split("\n\n")[0])
    parser.add_argument("locomo_json")
    parser.add_argument("--conversations", default="0-4", help="ranges and lists: 0-4, 0,2 (default 0-4)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--rankings", default=",".join(RANKINGS))
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--json", dest="json_out")
    parser.add_argument("--dump", help="JSONL of every hybrid question's candidate scores (no dataset text)")
    parser.add_argument("--recency-weight", type=float, help="recall's recency weight (default: as shipped)")
    args = parser.parse_args(argv)
    try:
        modes = _choices(args.modes, MODES, "modes")
        rankings = _choices(args.rankings, RANKINGS, "rankings")
        if args.k < 1:
            raise LocomoError("--k must be at least 1")
        if args.recency_weight is not None and not 0 <= args.recency_weight <= 1:
            raise LocomoError("--recency-weight must be from 0 to 1")
        results = run(args.locomo_json, parse_indices(args.conversations), modes, rankings, args.k,
                      dump_path=args.dump, recency_weight=args.recency_weight)
    except LocomoError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    text = json.dumps(results, indent=2)
    if args.json_out:
        out = Path(args.json_out)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(text + "\n", encoding="utf-8")
        os.replace(tmp, out)           # nothing half-written
    print(_table(results, args.k))
    return 0


def _choices(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    chosen = [c.strip() for c in text.split(",") if c.strip()]
    bad = [c for c in chosen if c not in allowed]
    if bad or not chosen:
        raise LocomoError(f"--{what}: {', '.join(bad) or 'none given'} (choose from {', '.join(allowed)})")
    return chosen


def _table(results: dict, k: int) -> str:
    lines = [f"| mode | ranking | recall@1 | recall@5 | recall@{k} | answerable@{k} | "
             "abstention | p50 ms | p99 ms |", "| --- " * 9 + "|"]
    for mode, by_ranking in results.items():
        for ranking, r in by_ranking.items():
            cells = [r.get("recall_at_1"), r.get("recall_at_5"), r.get(f"recall_at_{k}"),
                     r.get(f"answerable_recall_at_{k}"), r["abstention"], r["p50_ms"], r["p99_ms"]]
            lines.append(f"| {mode} | {ranking} | " + " | ".join("-" if c is None else str(c) for c in cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
