"""Read models folded from the event log; each can be dropped and rebuilt from it."""

from __future__ import annotations

from .erasures import ErasuresProjection
from .facts import FactsProjection
from .provenance import ProvenanceProjection
from .recall import RecallProjection
from .review import ReviewProjection
from .sessions import SessionsProjection

# RecallProjection reads facts_current (or the facts projection's last snapshots), so it must
# come after FactsProjection.
_FACTS = FactsProjection()
ALL = (_FACTS, ProvenanceProjection(), ReviewProjection(), RecallProjection(_FACTS),
       SessionsProjection(), ErasuresProjection())
