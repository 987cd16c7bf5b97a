"""The support rule's meaning threshold, measured (ledger/semantic/entail.py, docs/ingestion.md).

    python -m bench.support [--json OUT]

Pairs from the extraction set (bench/extraction_data/dev.jsonl: a line of chat and the facts it
states): each gold fact is a positive (its line means its value); the same line with another
line's value of the same predicate is a negative (it does not).  For each threshold: the share of
positives the meaning check supports among those the other rules do not (the ones it is for), and
the share of negatives it would wrongly support.  The threshold in entail.py is chosen from this
table: as many positives as it can while wrongly supporting at most 2% of the negatives.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

DATA = Path(__file__).parent / "extraction_data" / "dev.jsonl"
THRESHOLDS = (0.4, 0.45, 0.5, 0.52, 0.54, 0.56, 0.58, 0.6, 0.65)


def pairs(seed: int = 7) -> tuple[list, list]:
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    facts = [(r["text"], f["predicate"], f["value"]) for r in rows for f in r.get("facts", [])]
    by_predicate: dict[str, list[str]] = {}
    for _text, predicate, value in facts:
        by_predicate.setdefault(predicate, []).append(value)
    rng = random.Random(seed)
    negatives = []
    for text, predicate, value in facts:
        others = [v for v in set(by_predicate[predicate]) if v.casefold() != value.casefold()
                  and v.casefold() not in text.casefold()]
        if others:
            negatives.append((text, predicate, rng.choice(sorted(others))))
    return facts, negatives


def measure() -> dict:
    os.environ.pop("FACTLEDGER_EMBEDDER", None)
    from factledger.ledger.domain.support import unsupported
    from factledger.ledger.ingest.proposal import Proposal
    from factledger.ledger.registry.predicates import load_registry
    from factledger.ledger.semantic import entail

    registry = load_registry()
    positives, negatives = pairs()

    def other_rules(text, predicate, value) -> bool:
        proposal = Proposal(predicate=predicate, value=value, quote=text, evidence_event="e")
        return unsupported(proposal, registry.resolve(predicate)) is None

    def scored(items):
        out = []
        for text, predicate, value in items:
            if other_rules(text, predicate, value):
                continue
            out.append(entail.score(text, registry.resolve(predicate), value))
        return out

    pos, neg = scored(positives), scored(negatives)
    table = {str(t): {"positives_supported": round(sum(s >= t for s in pos) / max(1, len(pos)), 3),
                      "negatives_supported": round(sum(s >= t for s in neg) / max(1, len(neg)), 3)}
             for t in THRESHOLDS}
    return {"positives_left_to_meaning": len(pos), "positives_total": len(positives),
            "negatives_left_to_meaning": len(neg), "negatives_total": len(negatives),
            "threshold_in_use": entail.THRESHOLD, "by_threshold": table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", dest="out")
    args = parser.parse_args()
    result = measure()
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
