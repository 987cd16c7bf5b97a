"""Does a quote mean a value?  The support rule's check by meaning (rule 5 of ledger/domain/support.py).

"I eat fish now" does not spell `diet = pescatarian`, and a registry cannot list every way of
saying every value.  With the encoder on, a stated value the quote does not spell is supported
when the quote and the fact's sentence ("diet is pescatarian.") are close: a cosine of at least
`THRESHOLD`, measured on the project's own pairs (`python -m bench.support`, docs/ingestion.md).
Numbers are not meaning: a value whose numbers the quote does not say is never supported by it
("my dose is 50 mg" does not mean 75 mg, though the two sentences are close).  A miss is not a
loss: the candidate is held for a reviewer.
"""

from __future__ import annotations

import re

from factledger.ledger.semantic import embedder as encoders

THRESHOLD = 0.56          # python -m bench.support: 2 of 12 positives, 1.7% of 232 negatives
_NUMBER = re.compile(r"\d+(?:[.,/:]\d+)*")


def score(quote: str, spec, value: str) -> float | None:
    """The cosine of the quote and the fact's sentence, or None with no encoder."""
    model = encoders.get()
    if model is None:
        return None
    fact = model.embed(encoders.sentence("user", spec.name if spec is not None else "", value, None))
    return float(fact @ model.embed(quote))


def supports(quote: str, spec, value: str) -> bool:
    """Whether the quote means the value (the threshold above); a number it does not say, never."""
    said = set(_NUMBER.findall(quote))
    if any(n not in said for n in _NUMBER.findall(value)):
        return False
    found = score(quote, spec, value)
    return found is not None and found >= THRESHOLD
