"""Text a reader below a clearance may see: the values above it masked wherever text carries them.

Withholding a fact is not enough.  One utterance can state a normal and a health fact ("I'm
vegan, and my son is allergic to peanuts"), and the normal fact's quote then carries the health
value; an event body, a review reason or a session digest can carry it too.  So every piece of
text shown to a reader below a fact's sensitivity has that fact's value masked (`WITHHELD`),
by the one matcher forgetting masks with (`ledger.forget.masking.Masker`: whole words and
phrases, under full Unicode case folding, any spacing).  The values come from every interval of
the partition's facts (superseded and retracted ones too: a health value once said is still a
health value).  A text is never masked for its own fact's value (that value is shown, at its own
sensitivity, anyway).  A digest names no sensitivity of its own, so it follows the strictest it
mentions: a digest that carries a value above the reader's clearance is withheld whole
(`digest`), never shown in part.
"""

from __future__ import annotations

from collections.abc import Iterable

from factledger.ledger.forget.masking import Masker

WITHHELD = "[withheld]"


class ClearanceMask:
    """Masks the values a reader is not cleared for in the text they are shown."""

    def __init__(self, values_above: Iterable[str] = ()):
        self._masker = Masker(values_above, mask=WITHHELD)

    def __bool__(self) -> bool:
        return bool(self._masker)

    def text(self, text, own_value: str = ""):
        """`text` with every withheld value but `own_value` masked (None and non-text kept)."""
        if not self or not isinstance(text, str):
            return text
        return self._masker(text, own_value or "")

    def row(self, row: dict, own_value: str | None = None) -> dict:
        """A fact row (or held candidate, or any dict of text) with its text fields masked: every
        string but the row's own value, ids included (an id never holds a value's words)."""
        if not self:
            return row
        own = row.get("value") if own_value is None else own_value
        return {k: (v if k == "value" else self.deep(v, own)) for k, v in row.items()}

    def rows(self, rows: list[dict]) -> list[dict]:
        return [self.row(r) for r in rows] if self else rows

    def deep(self, data, own_value: str = ""):
        """Every string inside `data` (dicts, lists) masked: an event body, a page's payload."""
        if isinstance(data, str):
            return self.text(data, own_value)
        if isinstance(data, dict):
            return {k: self.deep(v, own_value) for k, v in data.items()}
        if isinstance(data, (list, tuple)):
            return [self.deep(v, own_value) for v in data]
        return data

    def digest(self, text):
        """A digest follows the strictest sensitivity it mentions: None when it carries any
        withheld value, else the digest whole."""
        if not self or not isinstance(text, str):
            return text
        return None if self._masker.mentions(text) else text
