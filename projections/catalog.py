"""The projections a ledger keeps, in the order they fold."""

from __future__ import annotations

from .erasures import ErasuresProjection
from .facts import FactsProjection
from .merkle import MerkleProjection
from .negations import NegationsProjection
from .provenance import ProvenanceProjection
from .recall import RecallProjection
from .review import ReviewProjection
from .sessions import SessionsProjection
from .vectors import VectorProjection


def all_projections() -> tuple:
    """A fresh set for one projector: a projection holds what its transaction has not written
    yet, so two ledgers (or threads) never share one.  RecallProjection follows what the facts
    projection flushes, so it comes after it (it is handed the facts projection it reads), and so
    does VectorProjection."""
    facts = FactsProjection()
    return (facts, ProvenanceProjection(), ReviewProjection(), RecallProjection(facts),
            SessionsProjection(), ErasuresProjection(), NegationsProjection(), VectorProjection(facts),
            MerkleProjection())
