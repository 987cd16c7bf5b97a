"""factledger's write side and domain; `Ledger` is the one object a library user opens."""

from factledger.ledger.domain.candidate import Candidate, make_candidate
from factledger.ledger.errors import ChainError, LedgerError
from factledger.ledger.service import Ledger, Outcome

__all__ = ["Candidate", "ChainError", "Ledger", "LedgerError", "Outcome", "make_candidate"]
