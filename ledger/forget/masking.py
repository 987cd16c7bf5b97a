"""Masking forgotten values in what survives: "I'm vegan and we live in [erased]".

One utterance can yield several facts with one quote.  When a value is forgotten by fact,
predicate, sensitivity or retention, the quotes of the surviving statements that contain it are
recorded again with the value replaced by `MASK` (a forget never edits a body: the statement is
scrubbed and recorded again, `ledger.restate`).  A quote is not masked for a value its own
statement holds (that value survives as the statement's value anyway).

A value matches as a whole word or phrase, case-insensitively, however it is spaced ("25 mg",
"25mg"); a value shorter than `MIN_LENGTH` characters is not looked for in other text (it would
mask every "no" or "2" in a sentence).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from factledger.ledger.domain.candidate import value_key

MASK = "[erased]"
MIN_LENGTH = 3
_TOKEN = re.compile(r"\d+|[^\W\d]+|[^\w\s]", re.UNICODE)


class Masker:
    """Replaces any of a set of forgotten values in text."""

    def __init__(self, values: Iterable[str] = ()):
        keys = sorted({value_key(v) for v in values if len(value_key(v)) >= MIN_LENGTH},
                      key=len, reverse=True)
        self.keys = keys
        self._pattern = re.compile("|".join(_phrase(k) for k in keys), re.IGNORECASE) if keys else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def mentions(self, text: str | None, own_value: str = "") -> bool:
        return text is not None and self(text, own_value) != text

    def __call__(self, text: str, own_value: str = "") -> str:
        """`text` with every forgotten value that is not (part of) `own_value` masked."""
        if self._pattern is None or not text:
            return text
        own = value_key(own_value) if own_value else ""

        def replace(match: re.Match) -> str:
            found = value_key(match.group(0))
            return match.group(0) if own and found in own else MASK

        return self._pattern.sub(replace, text)


def _phrase(key: str) -> str:
    """A regular expression for a value key: its tokens in order, any spacing between them,
    not inside a longer word."""
    tokens = _TOKEN.findall(key)
    body = r"\s*".join(re.escape(t) for t in tokens)
    return rf"(?<!\w){body}(?!\w)"
