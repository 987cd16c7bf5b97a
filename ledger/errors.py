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


class LedgerNotFound(LedgerError, FileNotFoundError):
    """No ledger at the location, and the caller did not ask for one to be made (`create=True`,
    `factledger init`, `--create`): a mistyped path must not silently become a new, empty ledger.
    Also a `FileNotFoundError`, which is what it is."""


class CandidateRefused(LedgerError, ValueError):
    """A candidate offered directly (`observe`) fails a check ingestion makes before it records
    anything: its quote is no evidence (too short) or its negation does not negate (a value the
    quote does not support is held for review, not refused).  Nothing was written;
    `reason` is the rejection reason ingestion would record (`quote_too_short`, `negation_not_in_quote`)."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


class StorageError(LedgerError):
    """The database refused or failed a statement.  Each engine maps its driver's errors onto this
    class and the ones below once, in its own folder (`ledger/store/sqlite/errors.py`,
    `ledger/store/postgres/errors.py`); nothing above the store catches a driver's error.
    `detail` is the driver's own text (the message is written for the person who caused it)."""

    def __init__(self, message: str, detail: str | None = None):
        super().__init__(message)
        self.detail = message if detail is None else detail


class LedgerBusy(StorageError):
    """Another writer held the ledger past the busy timeout (a lock wait, a deadlock, a
    serialisation failure); nothing was changed and trying again may succeed."""


class LedgerReadOnly(StorageError):
    """The ledger can be read but not written: a read-only file or folder, a read-only
    transaction or server."""


class LedgerFull(StorageError):
    """The disk, or the database's page limit, is full; nothing was written."""


class LedgerDamaged(StorageError):
    """The ledger's database is damaged (a malformed page, a corrupt image)."""


class NotALedger(StorageError):
    """The location holds something that is not a factledger ledger: a file that is not a
    database, or someone else's database (which is never changed)."""


class ConstraintViolation(StorageError):
    """A write the schema refused: the append-only guard, a unique or primary key."""


class ProjectionMismatch(LedgerError):
    """What a read would serve disagrees with the log: a projection row (`table`) of a fact
    (`fact_id`) is not what the committed event at `seq` established, or an event's body does not
    match its commitment.  Nothing is served; `factledger verify` names every part it checks."""

    def __init__(self, table: str, fact_id: str | None, seq: int | None, problem: str):
        where = f"{table}'s row of fact {fact_id}" if fact_id else table
        at = f" (event seq {seq})" if seq is not None else ""
        super().__init__(f"the ledger is damaged: {where}: {problem}{at}; run factledger verify")
        self.table, self.fact_id, self.seq, self.problem = table, fact_id, seq, problem


# The ledger itself cannot be used (as against busy or read-only now): a batch stops on these
# rather than record them against one session, as it did when they were the driver's; a
# projection that disagrees with the log is damage too (a batch must not go on acting on it).
UNUSABLE = (LedgerDamaged, NotALedger, ConstraintViolation, ProjectionMismatch)


class SensitivityUnconfirmed(LedgerError):
    """A reviewer's accept would put a value into another sensitivity class than the one it was
    held under; it needs its own confirmation, naming the new class (`confirm_sensitivity`)."""

    def __init__(self, message: str, *, held_as: str, value: str, user: str, predicate: str,
                 sensitivity: str, was: str):
        super().__init__(message)
        self.held_as, self.value, self.user = held_as, value, user
        self.predicate, self.sensitivity, self.was = predicate, sensitivity, was
