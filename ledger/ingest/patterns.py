"""The offline extractor: the registry's `patterns`, run over each event the pattern allows.

Deterministic and free, so it is the default without an API key and the one the tests and the
demo rely on.  It proposes exactly what a pattern matched; the quote is the sentence around the
match (the speaker's exact words, a substring of the event text, so the validator can find it).
Authority is not its business: a pattern may say which authors it listens to and what basis it
claims, and the validator still decides.
"""

from __future__ import annotations

import bisect
import re

from factledger.ledger.ingest.extractor import Context, Extraction
from factledger.ledger.ingest.proposal import Proposal
from factledger.ledger.ingest.session import Delta
from factledger.ledger.registry.rules import Rule, TextView

_ABBREVIATIONS = "".join(rf"(?<!\b{a})" for a in ("Dr", "Mr", "Ms", "Mrs", "St", "vs", "approx"))
_SENTENCE_END = re.compile(rf"{_ABBREVIATIONS}[.!?;](?=\s|$)|\n")
MAX_QUOTE = 300


class Sentences:
    """The sentence ends of one text, found once, so that finding the sentence around each of
    thousands of matches in one long message costs a binary search, not a rescan of the text."""

    def __init__(self, text: str):
        self.text = text
        self._ends: list[tuple[int, int, bool]] | None = None      # (start, end, is a newline)

    @property
    def ends(self) -> list[tuple[int, int, bool]]:
        if self._ends is None:
            self._ends = [(m.start(), m.end(), m.group() == "\n")
                          for m in _SENTENCE_END.finditer(self.text)]
        return self._ends

    def around(self, start: int, end: int) -> str:
        """The sentence holding text[start:end]; the match alone when that sentence is too long."""
        text, ends = self.text, self.ends
        i = bisect.bisect_right(ends, (start, start, True)) - 1         # last end starting before
        left = 0
        while i >= 0 and ends[i][1] > start:
            i -= 1
        if i >= 0:
            left = ends[i][1]
        # A full stop right before the match ends a sentence even when no space follows it
        # (the old `finditer(text, 0, start)` saw the end of its window as the end of the text).
        if start > 0 and _SENTENCE_END.match(text, start - 1, start):
            left = start
        j = bisect.bisect_left(ends, (end, -1, False))                   # first end at or after
        if j < len(ends):
            right = ends[j][0] if ends[j][2] else ends[j][1]
        else:
            right = len(text)
        sentence = text[left:right].strip()
        return sentence if 0 < len(sentence) <= MAX_QUOTE else text[start:end].strip()


def sentence_around(text: str, start: int, end: int) -> str:
    """The sentence holding text[start:end]; the match alone when that sentence is too long."""
    return Sentences(text).around(start, end)


class PatternsExtractor:
    name = "patterns"
    model = None

    def extract(self, delta: Delta, context: Context) -> Extraction:
        proposals: list[Proposal] = []
        seen: set[tuple] = set()
        for event in delta.events:
            # Whitespace collapsed, as the validator compares quotes: a line break inside a
            # sentence must not hide it from a pattern written with plain spaces.
            text = " ".join(event.text.split())
            if not text:
                continue                           # a tool result placeholder says nothing
            sentences, view = Sentences(text), TextView(text)
            for spec in context.registry.predicates.values():
                for pattern, start, end, value, negated in _found(spec, event.author, text, view):
                    if not value or not value.strip():
                        continue
                    value = spec.normalise_value(value.strip()) if isinstance(pattern, Rule) else value.strip()
                    key = (pattern.subject, spec.name, value.casefold(), negated, event.id)
                    if key in seen:
                        continue
                    seen.add(key)
                    proposals.append(Proposal(
                        subject=pattern.subject, predicate=spec.name, value=value,
                        quote=sentences.around(start, end), evidence_event=event.id,
                        basis=pattern.basis, negated=negated, pattern=pattern.id or None))
        return Extraction(proposals=proposals)


def _found(spec, author: str, text: str, view: TextView):
    """(pattern or rule, start, end, value, negated) for every statement of the predicate in the
    text: the declarative rules first, then the values their rules read in a retracting clause
    said positively ("i don't have a dog anymore": pet = dog, negated), then the regular
    expressions."""
    for rule in spec.rules:
        if author in rule.authors:
            retracting = view.positives(rule.lang) if rule.retracts else ()
            for hit in rule.finditer(text, view):
                if any(start <= hit.start < end for start, end, _ in retracting):
                    continue                 # "i quit my job at globex": no longer, not now
                yield rule, hit.start, hit.end, hit.value, rule.negated
    for rule in spec.rules if spec.cardinality != "series" else ():
        if rule.retracts and author in rule.authors:
            for hit in rule.retracted(view):
                yield rule, hit.start, hit.end, hit.value, True
    for pattern in spec.patterns:
        if author in pattern.authors:
            for match in pattern.regex.finditer(text):
                value = pattern.value if pattern.value is not None else match.group("value")
                yield pattern, match.start(), match.end(), value, pattern.negated
