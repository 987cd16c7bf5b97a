"""Masking forgotten values in what survives: "I'm vegan and we live in [erased]".

When a value is forgotten by fact, predicate, sensitivity or retention, surviving quotes that
contain it are recorded again with the value replaced by `MASK` (`restate.py`); a quote keeps the
value its own statement holds.  A value matches as a whole word or phrase under full Unicode case
folding (`str.casefold`, as `value_key`), however spaced, and a letter with a combining mark is
another letter; values shorter than `MIN_LENGTH` are not looked for.  The one matcher for every
text a forget masks.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from factledger.ledger.domain.candidate import value_key

MASK = "[erased]"
MIN_LENGTH = 3
_TOKEN = re.compile(r"\d+|[^\W\d]+|[^\w\s]", re.UNICODE)


class Masker:
    """Replaces any of a set of forgotten values in text."""

    def __init__(self, values: Iterable[str] = (), mask: str = MASK):
        self.mask = mask              # what replaces a value (a clearance's mask says "withheld")
        keys = sorted({value_key(v) for v in values if len(value_key(v)) >= MIN_LENGTH},
                      key=len, reverse=True)
        self.keys = keys
        # matched against the case-folded text: the keys are folded already, so no IGNORECASE
        # (its simple folding is what let "Straße" through a key "strasse")
        self._each = [re.compile(_phrase(k)) for k in keys]
        self._pattern = re.compile("|".join(p.pattern for p in self._each)) if keys else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def mentions(self, text: str | None, own_value: str = "") -> bool:
        return text is not None and self(text, own_value) != text

    def __call__(self, text: str, own_value: str = "") -> str:
        """`text` with every forgotten value that is not (part of) `own_value` masked."""
        if self._pattern is None or not text or self._pattern.search(text.casefold()) is None:
            return text
        own = value_key(own_value) if own_value else ""
        folded, where = _fold(text)
        out, last = [], 0
        for start, end in self._spans(folded, where):
            found = text[where[start]:where[end]]
            if own and value_key(found) in own:
                continue
            out += [text[last:where[start]], self.mask]
            last = where[end]
        return "".join(out) + text[last:] if out else text

    def _spans(self, folded: str, where: dict[int, int]):
        """Non-overlapping matches in `folded` that begin and end on whole characters of the
        text and do not stop before a combining mark (longest key first at each place)."""
        pos = 0
        while (match := self._pattern.search(folded, pos)) is not None:
            start = match.start()
            span = next((m.span() for m in ([match] + [p.match(folded, start) for p in self._each])
                         if m is not None and m.start() == start and _whole(folded, where, *m.span())),
                        None)
            if span is None:
                pos = start + 1
                continue
            yield span
            pos = span[1]


def _fold(text: str) -> tuple[str, dict[int, int]]:
    """The text case-folded, and for every character boundary of the folded text that is one of
    the text's, the text's offset there (a folded "ß" is "ss": the offset between the two s's is
    no boundary of the text)."""
    parts, where, pos = [], {}, 0
    for i, ch in enumerate(text):
        where[pos] = i
        folded = ch.casefold()
        parts.append(folded)
        pos += len(folded)
    where[pos] = len(text)
    return "".join(parts), where


def _whole(folded: str, where: dict[int, int], start: int, end: int) -> bool:
    return (end > start and start in where and end in where
            and not (end < len(folded) and _is_mark(folded[end]))
            and not (start > 0 and _is_mark(folded[start]) and not folded[start - 1].isspace()))


def _is_mark(ch: str) -> bool:
    return unicodedata.category(ch).startswith("M")


def _phrase(key: str) -> str:
    """A regular expression for a value key: its tokens in order, any spacing between them,
    not inside a longer word (a combining mark stays with the letter before it)."""
    tokens: list[str] = []
    for token in _TOKEN.findall(key):
        if tokens and all(_is_mark(ch) for ch in token):
            tokens[-1] += token
        else:
            tokens.append(token)
    body = r"\s*".join(re.escape(t) for t in tokens)
    return rf"(?<!\w){body}(?!\w)"
