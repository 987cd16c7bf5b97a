"""factledger's write side and domain; `Ledger` is the one object a library user opens."""

from .candidate import Candidate, make_candidate
from .errors import ChainError, LedgerError
from .service import Ledger, Outcome

__all__ = ["Candidate", "ChainError", "Ledger", "LedgerError", "Outcome", "make_candidate"]
