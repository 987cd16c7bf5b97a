"""factledger: long-term fact memory for AI agents, event-sourced and hash-chained.

The repository keeps the product's folders `ledger/`, `projections/` and `cli/` at the top level;
they install as `factledger.ledger`, `factledger.projections` and `factledger.cli`, so the only
name a user's environment gains is `factledger` (see docs/decisions.md).
"""

from factledger.ledger import Candidate, ChainError, Ledger, LedgerError, Outcome, make_candidate

__all__ = ["Candidate", "ChainError", "Ledger", "LedgerError", "Outcome", "make_candidate"]
