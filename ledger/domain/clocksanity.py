"""A statement cannot come from the future: said_at and session timestamps are bounded by the clock.

A statement dated in the future would win its key until that date: it becomes current, every
true update is only history before it (`backfill`), and recall tells the model "(stated 2099-...)".
So a `said_at` (or a session event's timestamp) later than the ledger's clock plus a tolerance is
bad input.  The tolerance (default one day) absorbs clock skew between the agent that wrote the
session and the machine running the ledger.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from factledger.ledger.domain.recall_options import parse_days
from factledger.ledger.errors import LedgerError
from factledger.ledger.vocabulary.clock import iso

DEFAULT_TOLERANCE = timedelta(days=1)
_LATEST = "9999-12-31T23:59:59.999999Z"


def tolerance(value: timedelta | float | int | str | None) -> timedelta:
    """A tolerance from a timedelta, a number of days or a duration (`6h`, `1d`, `0`)."""
    if value is None:
        return DEFAULT_TOLERANCE
    if isinstance(value, timedelta):
        if value < timedelta(0):
            raise LedgerError(f"the future tolerance cannot be negative (got {value})")
        return value
    days = parse_days("--future-tolerance", value, allow_zero=True)
    try:
        return timedelta(days=days)
    except OverflowError:
        raise LedgerError(f"--future-tolerance {value!r} is too large") from None


def latest_allowed(now: datetime, allowed: timedelta) -> str:
    """The latest said_at the ledger accepts now, in the stored timestamp form (text order)."""
    try:
        return iso(now + allowed)
    except OverflowError:
        return _LATEST


def refuse_future(said_at: str, now: datetime, allowed: timedelta, what: str = "said_at") -> None:
    if said_at > latest_allowed(now, allowed):
        raise LedgerError(f"{what} {said_at} is in the future: later than the ledger's clock "
                          f"({iso(now)}) plus {_human(allowed)}")


def _human(allowed: timedelta) -> str:
    seconds = allowed.total_seconds()
    if seconds and seconds % 86400 == 0:
        days = int(seconds // 86400)
        return f"{days} day" + ("s" if days != 1 else "")
    return f"{seconds:g} seconds"
