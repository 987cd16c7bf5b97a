"""The projections a ledger keeps, in the order they fold."""

from __future__ import annotations

from factledger.projections.erasures import ErasuresProjection
from factledger.projections.facts import FactsProjection
from factledger.projections.merkle import MerkleProjection
from factledger.projections.negations import NegationsProjection
from factledger.projections.provenance import ProvenanceProjection
from factledger.projections.recall import RecallProjection
from factledger.projections.review import ReviewProjection
from factledger.projections.serves import ServesProjection
from factledger.projections.sessions import SessionsProjection
from factledger.projections.vectors import VectorProjection


def all_projections() -> tuple:
    """A fresh set for one projector: a projection holds what its transaction has not written
    yet, so two ledgers (or threads) never share one.  RecallProjection follows what the facts
    projection flushes, so it comes after it (it is handed the facts projection it reads), and so
    does VectorProjection."""
    facts = FactsProjection()
    return (facts, ProvenanceProjection(), ReviewProjection(), RecallProjection(facts),
            SessionsProjection(), ErasuresProjection(), NegationsProjection(), VectorProjection(facts),
            ServesProjection(), MerkleProjection())
