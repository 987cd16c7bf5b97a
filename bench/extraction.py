"""`python -m bench.extraction`: how the offline extractor does on real first-person speech.

Runs an extractor (default `patterns`, built by `make_extractor` as ingestion builds it, with the
registry ingestion would load) on each labelled statement of bench/extraction_data/ (PersonaChat
persona lines and chat turns; source, licence and labelling guide in docs/extraction-eval.md)
and prints recall per predicate, recall on persona lines and on chat turns, value exact-match,
the false-extraction rate on fact-free statements, and the share of extractions that name a label.

Labels can miss a fact, so predicate precision is adjudicated by reading: `--sample N` prints a
seeded random sample of N extractions with their statements; the verdicts go in a JSONL file
(`{"id", "predicate", "value", "verdict": "right"|"wrong", "why"}`) that `--adjudicated FILE`
reads back to print the adjudicated precision over the same sample (or, without `--sample`, over
every extraction), listing the extractions that have no verdict yet.

    python -m bench.extraction [--split dev|heldout|all] [--predicate P] [--show-misses N]
                               [--sample N] [--seed S] [--adjudicated FILE] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path

from factledger.ledger.domain.candidate import value_key
from factledger.ledger.ingest.extractor import Context
from factledger.ledger.ingest.extractors import make_extractor
from factledger.ledger.ingest.session import Session, SessionEvent, tail
from factledger.ledger.registry.predicates import Registry, load_registry

from .extraction_score import Extracted, Report, Row, load_rows, score

DATA = Path(__file__).parent / "extraction_data"
SPLITS = ("dev", "heldout")
SAID_AT = "2026-01-01T00:00:00.000000Z"


def rows_for(split: str, data: Path = DATA) -> list[Row]:
    names = SPLITS if split == "all" else (split,)
    return [row for name in names for row in load_rows(data / f"{name}.jsonl")]


def run_extractor(rows: list[Row], extractor, registry: Registry) -> dict[str, list[Extracted]]:
    """Each statement as a one-event user session, through the extractor interface ingestion uses;
    predicates resolved (aliases) and values normalised the way the registry would store them."""
    context = Context("eval", "eval", registry)
    out: dict[str, list[Extracted]] = {}
    for row in rows:
        event = SessionEvent(id=row.id, author="user", said_at=SAID_AT, text=row.text)
        session = Session(id=f"eval-{row.id}", app="eval", user="eval", events=(event,))
        found = []
        for p in extractor.extract(tail(session, None), context).proposals:
            spec = registry.resolve(p.predicate)
            predicate = spec.name if spec else p.predicate
            value = spec.normalise_value(p.value) if spec else p.value
            found.append(Extracted(predicate, value, p.subject, p.negated))
        out[row.id] = found
    return out


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}% ({n}/{d})" if d else "n/a (0)"


def wilson(right: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion (honest for small samples near 100%)."""
    if n == 0:
        return (0.0, 1.0)
    p = right / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def table(report: Report, registry: Registry) -> list[str]:
    lines = ["| predicate | labelled | found | recall | exact value | extractions | unconfirmed |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    predicates = sorted(set(report.by_predicate) | set(report.extractions_by_predicate),
                        key=lambda p: (-report.by_predicate.get(p, _EMPTY).labelled, p))
    for p in predicates:
        t = report.by_predicate.get(p, _EMPTY)
        spec = registry.predicates.get(p)
        note = "" if spec is None or spec.extractable else " (no patterns)"
        note = " (not in registry)" if spec is None else note
        recall = f"{100 * t.recall:.0f}%" if t.recall is not None else "-"
        exact = f"{t.exact}/{t.found}" if t.found else "-"
        lines.append(f"| {p}{note} | {t.labelled} | {t.found} | {recall} | {exact} | "
                     f"{report.extractions_by_predicate.get(p, 0)} | {report.unconfirmed_by_predicate.get(p, 0)} |")
    return lines


class _Empty:
    labelled = found = exact = 0
    recall = None


_EMPTY = _Empty()


def summary(report: Report) -> list[str]:
    lines = []
    for kind in ("persona", "chat"):
        t = report.by_kind.get(kind)
        if t:
            lines.append(f"recall, {kind} {'lines' if kind == 'persona' else 'turns'}: {_pct(t.found, t.labelled)}")
    o = report.overall
    lines.append(f"recall, all: {_pct(o.found, o.labelled)}")
    lines.append(f"value exact-match (of facts found): {_pct(o.exact, o.found)}")
    lines.append(f"fact-free statements with an extraction: "
                 f"{_pct(report.fact_free_with_extraction, report.fact_free)}")
    lines.append(f"extractions naming a label (a floor on precision): {_pct(report.confirmed, report.extractions)}")
    return lines


def sample(report_rows: list[Row], extracted: dict[str, list[Extracted]], n: int, seed: int,
           predicate: str | None = None) -> list[tuple[Row, Extracted]]:
    """A seeded random sample of n extractions (each with its statement), for adjudication."""
    pool = [(row, g) for row in report_rows for g in extracted.get(row.id, [])
            if predicate is None or g.predicate == predicate]
    return random.Random(seed).sample(pool, min(n, len(pool)))


def adjudicated(path: str, pool: list[tuple[Row, Extracted]]) -> list[str]:
    """Adjudicated precision over `pool` (the sample, or every extraction) from a verdicts file;
    the extractions of the pool that have no verdict yet are printed to be read."""
    verdicts = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            v = json.loads(line)
            verdicts[(v["id"], v["predicate"], value_key(v["value"]))] = v["verdict"]
    judged = [verdicts.get((row.id, g.predicate, value_key(g.value))) for row, g in pool]
    right, seen = judged.count("right"), sum(v is not None for v in judged)
    low, high = wilson(right, seen)
    lines = [f"adjudicated precision: {_pct(right, seen)}, 95% interval {100 * low:.1f}%-{100 * high:.1f}% "
             f"({len(pool) - seen} of {len(pool)} extractions without a verdict)"]
    for (row, g), verdict in zip(pool, judged):
        if verdict is None:
            lines.append("  no verdict: " + _line(row, g))
    return lines


def _line(row: Row, g: Extracted) -> str:
    mark = "label" if any(f.predicate == g.predicate for f in row.facts) else "no label"
    return json.dumps({"id": row.id, "predicate": g.predicate, "value": g.value, "subject": g.subject,
                       "negated": g.negated, "text": row.text, "labelled": mark}, ensure_ascii=False)


def main(argv: list[str] | None = None, data: Path = DATA, extractor=None) -> int:
    """`extractor` (an object) replaces the one named by --extractor: the test's fixed extractor."""
    parser = argparse.ArgumentParser(prog="python -m bench.extraction", description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="dev")
    parser.add_argument("--predicate", help="count only this predicate")
    parser.add_argument("--show-misses", type=int, default=0, metavar="N",
                        help="print N missed facts and N extractions that name no label")
    parser.add_argument("--sample", type=int, default=0, metavar="N", help="print N random extractions to adjudicate")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--adjudicated", metavar="FILE", help="verdicts on a sample: report adjudicated precision")
    parser.add_argument("--extractor", default="patterns")
    parser.add_argument("--registry", help="registry TOML (default: FACTLEDGER_REGISTRY or the packaged one)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)

    registry = load_registry(args.registry)
    rows = rows_for(args.split, data)
    extracted = run_extractor(rows, extractor or make_extractor(args.extractor), registry)
    report = score(rows, extracted, args.predicate)
    persona = sum(r.kind == "persona" for r in rows)
    out = [f"{args.extractor} extractor on the {args.split} split: {report.rows} statements "
           f"({persona} persona lines, {len(rows) - persona} chat turns), "
           f"{report.overall.labelled} labelled facts, registry {registry.sha256[:12]}"
           + (f", predicate {args.predicate}" if args.predicate else ""), ""]
    out += summary(report) + [""] + table(report, registry)
    if args.show_misses:
        out += ["", f"missed facts (first {args.show_misses}):"]
        for row, fact, got in report.misses[:args.show_misses]:
            said = ", ".join(f"{g.predicate}={g.value!r}" for g in got) or "nothing"
            out.append(f"  {row.id} {row.text!r}: want {fact.predicate}={fact.value!r}, got {said}")
        out += ["", f"extractions naming no label (first {args.show_misses}):"]
        for row, g in report.unconfirmed[:args.show_misses]:
            out.append(f"  {row.id} {row.text!r}: {g.predicate}={g.value!r}"
                       + (" (negated)" if g.negated else "") + (f" subject {g.subject}" if g.subject != "user" else ""))
    pool = sample(rows, extracted, args.sample or len(rows) * 100, args.seed, args.predicate)
    if args.sample and not args.adjudicated:
        out += ["", f"random sample of extractions to adjudicate (seed {args.seed}):"]
        out += [_line(row, g) for row, g in pool]
    if args.adjudicated:
        what = f"a random sample of {len(pool)} (seed {args.seed})" if args.sample else f"all {len(pool)}"
        out += ["", f"adjudicated extractions: {what}"] + adjudicated(args.adjudicated, pool)
    print("\n".join(out))
    if args.json:
        figures = {"split": args.split, "extractor": args.extractor, "predicate": args.predicate,
                   "statements": report.rows, "facts": report.overall.labelled,
                   "recall": {k: t.recall for k, t in report.by_kind.items()} | {"all": report.overall.recall},
                   "exact_match": report.overall.exact / report.overall.found if report.overall.found else None,
                   "false_extraction_rate": report.false_extraction_rate,
                   "label_agreement": report.label_agreement,
                   "by_predicate": {p: {"labelled": t.labelled, "found": t.found, "exact": t.exact}
                                    for p, t in report.by_predicate.items()}}
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
