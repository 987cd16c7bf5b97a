"""Every confidence constant and formula, in one place.

Confidence is derived, never stored as a decision: the fold recomputes it from the observation
and its reinforcements, so a redacted reinforcement simply stops counting.
"""

from __future__ import annotations

from datetime import datetime

from factledger.ledger.vocabulary.clock import days_between
from factledger.ledger.vocabulary.words import BASES

BASIS_RANK = {basis: rank for rank, basis in enumerate(BASES)}     # BASES is lowest authority first
BASE_CONFIDENCE = {"inferred": 0.4, "stated": 0.9, "verified": 0.95}
REINFORCE_KEEP = 0.8        # each new session removes 20% of the remaining doubt
CONFIDENCE_CEILING = 0.99
DECAY_PER_PERIOD = 0.85     # effective confidence loses 15% ...
DECAY_PERIOD_DAYS = 90.0    # ... per 90 days since the fact was last confirmed
DECAY_FLOOR = 0.1
SERVING_THRESHOLD = 0.7


def initial_confidence(basis: str, proposed: float | None = None) -> float:
    """The basis sets the ceiling; an extractor may propose less, never more."""
    base = BASE_CONFIDENCE[basis]
    return base if proposed is None else min(base, max(0.0, proposed))


def reinforced_confidence(base: float, reinforcements: int) -> float:
    return min(CONFIDENCE_CEILING, 1.0 - (1.0 - base) * REINFORCE_KEEP**reinforcements)


def effective_confidence(confidence: float, confirmed_at: str, now: datetime) -> float:
    age_days = max(0.0, days_between(confirmed_at, now))
    decayed = confidence * DECAY_PER_PERIOD ** (age_days / DECAY_PERIOD_DAYS)
    return round(max(DECAY_FLOOR, decayed) if confidence >= DECAY_FLOOR else confidence, 4)
