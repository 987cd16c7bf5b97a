"""The one exception a user is meant to see.

The CLI turns a `LedgerError` into `Error: ...` and exit code 1; anything else is a bug
and is allowed to show a traceback.
"""


class LedgerError(Exception):
    """Bad input or a refused operation, with a message written for the person who caused it."""


class ChainError(LedgerError):
    """The log does not verify; `seq` names the first bad event."""

    def __init__(self, seq: int, message: str):
        super().__init__(f"seq {seq}: {message}")
        self.seq = seq


class InvalidId(LedgerError, ValueError):
    """An app, user, session or fact id that cannot name anything (empty, too long, control
    characters).  Also a `ValueError`, since that is what google-adk's own services raise."""
