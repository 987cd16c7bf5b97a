"""The offline extractor: the registry's `patterns`, run over each event the pattern allows.

Deterministic and free, so it is the default without an API key and the one the tests and the
demo rely on.  It proposes exactly what a pattern matched; the quote is the sentence around the
match (the speaker's exact words, a substring of the event text, so the validator can find it).
Authority is not its business: a pattern may say which authors it listens to and what basis it
claims, and the validator still decides.
"""

from __future__ import annotations

import re

from .extractor import Context, Extraction
from .proposal import Proposal
from .session import Delta

_ABBREVIATIONS = "".join(rf"(?<!\b{a})" for a in ("Dr", "Mr", "Ms", "Mrs", "St", "vs", "approx"))
_SENTENCE_END = re.compile(rf"{_ABBREVIATIONS}[.!?;](?=\s|$)|\n")
MAX_QUOTE = 300


def sentence_around(text: str, start: int, end: int) -> str:
    """The sentence holding text[start:end]; the match alone when that sentence is too long."""
    left = max((m.end() for m in _SENTENCE_END.finditer(text, 0, start)), default=0)
    right_match = _SENTENCE_END.search(text, end)
    right = right_match.end() if right_match and right_match.group() != "\n" else (
        right_match.start() if right_match else len(text))
    sentence = text[left:right].strip()
    return sentence if 0 < len(sentence) <= MAX_QUOTE else text[start:end].strip()


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
            for spec in context.registry.predicates.values():
                for pattern in spec.patterns:
                    if event.author not in pattern.authors:
                        continue
                    for match in pattern.regex.finditer(text):
                        value = pattern.value if pattern.value is not None else match.group("value")
                        if not value or not value.strip():
                            continue
                        key = (pattern.subject, spec.name, value.strip().casefold(),
                               pattern.negated, event.id)
                        if key in seen:
                            continue
                        seen.add(key)
                        proposals.append(Proposal(
                            subject=pattern.subject, predicate=spec.name, value=value.strip(),
                            quote=sentence_around(text, match.start(), match.end()),
                            evidence_event=event.id, basis=pattern.basis,
                            negated=pattern.negated))
        return Extraction(proposals=proposals)
