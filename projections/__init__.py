"""Read models folded from the event log; each can be dropped and rebuilt from it."""

from __future__ import annotations

from .facts import FactsProjection
from .provenance import ProvenanceProjection
from .review import ReviewProjection

ALL = (FactsProjection(), ProvenanceProjection(), ReviewProjection())
