"""The exceptions a google-adk application can catch from `LedgerMemoryService`.

Each is a `LedgerError` (the CLI's and the library's one error type) and also a `ValueError`,
because google-adk's own memory services raise `ValueError` for bad arguments, so code written
against them keeps working.  `InvalidId` (ledger/vocabulary/ids.py) is the same kind of error for an id.
"""

from __future__ import annotations

from factledger.ledger.errors import InvalidId, LedgerError

__all__ = ["CorruptLedger", "InvalidId", "InvalidMemory", "MemoryNotFound", "SharedMemory"]


class MemoryNotFound(LedgerError, ValueError):
    """`delete_memory` was given an id that names nothing in the caller's partition.

    The message is the same whether the id never existed or belongs to another app or user, so a
    caller cannot learn that a fact exists somewhere else."""


class SharedMemory(LedgerError, ValueError):
    """`delete_memory` was given the id of an app-wide fact (the `_domain` partition) that
    `search_memory` serves to every user of the app: not one user's to erase, so nothing is
    deleted.  The message says how the app's operator forgets it for everyone."""


class InvalidMemory(LedgerError, ValueError):
    """An `add_memory` entry the service cannot read as a statement (no text, a non-boolean
    `negated`, ...); nothing of the call is stored."""


class CorruptLedger(LedgerError, ValueError):
    """The file given to the service is not a ledger it can open (not a database, damaged)."""
