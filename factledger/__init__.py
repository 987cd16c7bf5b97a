"""factledger: long-term fact memory for AI agents, event-sourced and hash-chained.

The repository keeps the product's folders `ledger/`, `projections/` and `cli/` at the top level;
they install as `factledger.ledger`, `factledger.projections` and `factledger.cli`, so the only
name a user's environment gains is `factledger` (see docs/decisions.md).

The public names load on first use (PEP 562): `import factledger` imports nothing else, and
`factledger.Ledger` loads the facade when it is first read (docs/performance.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:                    # what the names are, for readers and type checkers
    from factledger.ledger import (
        CandidateRefused,
        ChainError,
        ConstraintViolation,
        InvalidId,
        Ledger,
        LedgerBusy,
        LedgerDamaged,
        LedgerError,
        LedgerFull,
        LedgerNotFound,
        LedgerReadOnly,
        NotALedger,
        Outcome,
        ProjectionMismatch,
        SensitivityUnconfirmed,
        StorageError,
        make_candidate,
    )

# The facade, the candidate, and every exception a caller may catch (`factledger.ledger.ERRORS`,
# listed here too so that `import factledger` still imports nothing else).
__all__ = ["Candidate", "Ledger", "Outcome", "make_candidate",
           "LedgerError", "ChainError", "InvalidId", "LedgerNotFound", "CandidateRefused", "StorageError",
           "LedgerBusy", "LedgerReadOnly", "LedgerFull", "LedgerDamaged", "NotALedger", "ConstraintViolation",
           "ProjectionMismatch", "SensitivityUnconfirmed"]


def __getattr__(name: str):
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from factledger import ledger

    value = getattr(ledger, name)
    globals()[name] = value          # later look-ups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
