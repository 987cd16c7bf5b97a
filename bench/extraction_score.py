"""Scoring extractions against the labelled real-speech statements (bench/extraction_data/).

Pure functions over plain data, so the test can check every figure on a handful of rows.

A labelled fact is FOUND when the extractor proposed, about the speaker (`subject` "user"), the
same predicate with the same `negated` flag and a value that names it: the label or one of its
accepted spellings (`also`), compared word by word in comparison form (`value_key`: case and
spacing folded; a plural names its singular), either whole inside the value ("water so" names
"water") or as its last words ("tour guide" names "museum tour guide"; "museum" does not).
It is an EXACT match when the values are equal in comparison form.

Labels cover every registry predicate the speaker states about themself, so an extraction that
names no label is UNCONFIRMED: most are wrong, but some are facts the annotator missed, which is
why precision is adjudicated by reading a sample (`--sample`).  A statement is FACT-FREE when it
has no label at all; any extraction on it (whoever its subject) counts as a false extraction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from factledger.ledger.domain.candidate import value_key

KINDS = ("persona", "chat")


@dataclass(frozen=True)
class Fact:
    predicate: str
    value: str
    also: tuple[str, ...] = ()
    negated: bool = False

    @property
    def spellings(self) -> tuple[str, ...]:
        return (self.value, *self.also)


@dataclass(frozen=True)
class Row:
    id: str
    kind: str            # persona | chat
    sample: str          # all (every persona line) | cue | random (how the chat turn was drawn)
    text: str
    facts: tuple[Fact, ...] = ()
    line: int = 0        # line of the source file (docs/extraction-eval.md names it)


@dataclass(frozen=True)
class Extracted:
    """One proposal, reduced to what is scored (predicate already resolved to its canonical name)."""

    predicate: str
    value: str
    subject: str = "user"
    negated: bool = False


def load_rows(path: str | Path) -> list[Row]:
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        obj = json.loads(line)
        if obj.get("kind") not in KINDS:
            raise ValueError(f"{path} line {number}: kind must be one of {', '.join(KINDS)}")
        facts = tuple(Fact(f["predicate"], f["value"], tuple(f.get("also", ())), bool(f.get("negated", False)))
                      for f in obj.get("facts", ()))
        rows.append(Row(obj["id"], obj["kind"], obj.get("sample", "all"), obj["text"], facts,
                        int(obj.get("line", 0))))
    return rows


def _words(value: str) -> list[str]:
    """Comparison words, a plural folded onto its singular ("dogs" names "dog")."""
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
            for w in re.findall(r"[^\W_]+", value_key(value))]


def _names_value(label: str, value: str) -> bool:
    want, have = _words(label), _words(value)
    if not want or not have:
        return False
    if any(have[i:i + len(want)] == want for i in range(len(have) - len(want) + 1)):
        return True                                   # the label, perhaps with words around it
    return len(have) < len(want) and want[-len(have):] == have     # its head: "tour guide", not "museum"


def names(fact: Fact, got: Extracted) -> bool:
    """Does the extraction name this labelled fact (predicate, negation, and a matching value)?"""
    if got.subject != "user" or got.predicate != fact.predicate or got.negated != fact.negated:
        return False
    return any(_names_value(s, got.value) for s in fact.spellings)


def exact(fact: Fact, got: Extracted) -> bool:
    return names(fact, got) and any(value_key(s) == value_key(got.value) for s in fact.spellings)


@dataclass
class Tally:
    labelled: int = 0
    found: int = 0
    exact: int = 0

    def add(self, found: bool, is_exact: bool) -> None:
        self.labelled += 1
        self.found += found
        self.exact += is_exact

    @property
    def recall(self) -> float | None:
        return self.found / self.labelled if self.labelled else None


@dataclass
class Report:
    rows: int = 0
    by_kind: dict[str, Tally] = field(default_factory=dict)
    by_predicate: dict[str, Tally] = field(default_factory=dict)
    extractions_by_predicate: dict[str, int] = field(default_factory=dict)
    unconfirmed_by_predicate: dict[str, int] = field(default_factory=dict)
    extractions: int = 0                 # every proposal, whoever its subject
    confirmed: int = 0                   # proposals that name a label of their statement
    fact_free: int = 0                   # statements with no label
    fact_free_with_extraction: int = 0
    misses: list[tuple[Row, Fact, list[Extracted]]] = field(default_factory=list)
    unconfirmed: list[tuple[Row, Extracted]] = field(default_factory=list)

    @property
    def overall(self) -> Tally:
        total = Tally()
        for t in self.by_kind.values():
            total.labelled += t.labelled
            total.found += t.found
            total.exact += t.exact
        return total

    @property
    def false_extraction_rate(self) -> float | None:
        return self.fact_free_with_extraction / self.fact_free if self.fact_free else None

    @property
    def label_agreement(self) -> float | None:
        """Share of extractions that name a label: a lower bound on precision (labels can miss)."""
        return self.confirmed / self.extractions if self.extractions else None


def score(rows: Iterable[Row], extracted: dict[str, list[Extracted]], predicate: str | None = None) -> Report:
    """The figures for `rows`, given each row's extractions (by row id).  With `predicate`, only
    that predicate's labels and extractions are counted (fact-free statements stay those with no
    label at all, and count only extractions of that predicate)."""
    report = Report()
    for row in rows:
        report.rows += 1
        got = [g for g in extracted.get(row.id, []) if predicate is None or g.predicate == predicate]
        facts = [f for f in row.facts if predicate is None or f.predicate == predicate]
        for fact in facts:
            hits = [g for g in got if names(fact, g)]
            is_exact = any(exact(fact, g) for g in hits)
            report.by_kind.setdefault(row.kind, Tally()).add(bool(hits), is_exact)
            report.by_predicate.setdefault(fact.predicate, Tally()).add(bool(hits), is_exact)
            if not hits:
                report.misses.append((row, fact, got))
        for g in got:
            report.extractions += 1
            report.extractions_by_predicate[g.predicate] = report.extractions_by_predicate.get(g.predicate, 0) + 1
            if any(names(f, g) for f in row.facts):
                report.confirmed += 1
            else:
                report.unconfirmed_by_predicate[g.predicate] = report.unconfirmed_by_predicate.get(g.predicate, 0) + 1
                report.unconfirmed.append((row, g))
        if not row.facts:
            report.fact_free += 1
            report.fact_free_with_extraction += bool(got)
    return report
