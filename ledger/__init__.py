"""factledger's write side and domain; `Ledger` is the one object a library user opens.

The public names load on first use (PEP 562): importing `factledger.ledger`, or any module under
it, costs nothing more than that module, so a command pays only for what it uses
(docs/performance.md, "Imports that cost nothing").
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:                    # what the names are, for readers and type checkers
    from factledger.ledger.domain.candidate import Candidate, make_candidate
    from factledger.ledger.errors import (
        CandidateRefused,
        ChainError,
        ConstraintViolation,
        InvalidId,
        LedgerBusy,
        LedgerDamaged,
        LedgerError,
        LedgerFull,
        LedgerNotFound,
        LedgerReadOnly,
        NotALedger,
        ProjectionMismatch,
        SensitivityUnconfirmed,
        StorageError,
    )
    from factledger.ledger.service import Ledger, Outcome

ERRORS = ("LedgerError", "ChainError", "InvalidId", "LedgerNotFound", "CandidateRefused", "StorageError",
          "LedgerBusy", "LedgerReadOnly", "LedgerFull", "LedgerDamaged", "NotALedger", "ConstraintViolation",
          "ProjectionMismatch", "SensitivityUnconfirmed")

# public name -> the module that defines it
_HOMES = {
    "Candidate": "factledger.ledger.domain.candidate",
    "make_candidate": "factledger.ledger.domain.candidate",
    # every exception a caller may catch (ledger/errors.py), importable from the package itself
    **{name: "factledger.ledger.errors" for name in ERRORS},
    "Ledger": "factledger.ledger.service",
    "Outcome": "factledger.ledger.service",
}

__all__ = ["Candidate", "Ledger", "Outcome", "make_candidate",
           "LedgerError", "ChainError", "InvalidId", "LedgerNotFound", "CandidateRefused", "StorageError",
           "LedgerBusy", "LedgerReadOnly", "LedgerFull", "LedgerDamaged", "NotALedger", "ConstraintViolation",
           "ProjectionMismatch", "SensitivityUnconfirmed"]


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value          # later look-ups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
