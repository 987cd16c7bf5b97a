"""Time in one place: the injectable clock and the one ISO 8601 form the ledger writes.

Tests and fixture replays need fixed time, so nothing in the ledger calls
`datetime.now()` directly; it asks a `Clock`.  Every timestamp the ledger stores or
prints is UTC with microseconds and a `Z`, so that text order is time order.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from datetime import UTC, date, datetime
from functools import lru_cache

from factledger.ledger.errors import LedgerError

Clock = Callable[[], datetime]
_DATE_START = re.compile(r"^\d{4}-\d{2}-\d{2}")


def system_clock() -> datetime:
    return datetime.now(UTC)


def fixed_clock(at: str | datetime) -> Clock:
    moment = parse_time(at) if isinstance(at, str) else at

    def clock() -> datetime:
        return moment

    return clock


def clock_from_env() -> Clock:
    """FACTLEDGER_NOW pins the clock: fixture replays and demos need repeatable times."""
    pinned = os.environ.get("FACTLEDGER_NOW")
    return fixed_clock(pinned) if pinned else system_clock


def iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    m = moment.astimezone(UTC)
    # formatted by hand: strftime does not zero-pad years before 1000, and text order must be time order
    return (f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}"
            f".{m.microsecond:06d}Z")


def parse_time(text: str) -> datetime:
    """Accept ISO 8601 (a date alone is midnight UTC; no zone means UTC)."""
    if not isinstance(text, str) or not text.strip():
        raise LedgerError(f"timestamp {text!r} is empty")
    raw = text.strip()
    if not _DATE_START.match(raw):          # "1788080400" is epoch seconds, not ISO basic format
        raise LedgerError(f"timestamp {text!r} is not ISO 8601 (YYYY-MM-DD[THH:MM[:SS]][Z])")
    try:
        if len(raw) == 10:
            day = date.fromisoformat(raw)
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        moment = datetime.fromisoformat(raw.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        raise LedgerError(f"timestamp {text!r} is not ISO 8601") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:                   # 9999-12-31T23:59-01:00 is past year 9999 in UTC
        raise LedgerError(f"timestamp {text!r} is out of range") from None


def normalise_time(text: str) -> str:
    return iso(parse_time(text))


_STORED = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z", re.ASCII)
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)


@lru_cache(maxsize=8192)
def _in_stored_form(text: str, day: bool) -> bool:
    """Whether `text` is a real moment written exactly as `iso` writes it (or with `day` a real
    date alone): the form by an ASCII pattern, the calendar by `fromisoformat`.  Every event that
    enters the ledger has its times checked here, and a session's events share their times, so
    the answers are kept (the check is pure)."""
    try:
        if _STORED.fullmatch(text):
            datetime.fromisoformat(text[:-1])
            return True
        if day and _DAY.fullmatch(text):
            date.fromisoformat(text)
            return True
    except ValueError:
        pass
    return False


def stored_time(text: str, day: bool = False) -> str:
    """`text` if it is a timestamp exactly as the ledger writes it (`iso`: UTC, microseconds, `Z`),
    or with `day` a date alone (YYYY-MM-DD); refused otherwise, never rewritten (an event body's
    times are checked, not normalised: its bytes are what the chain covers)."""
    if isinstance(text, str) and _in_stored_form(text, day):
        return text
    form = "YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS.ffffffZ" if day else "YYYY-MM-DDTHH:MM:SS.ffffffZ (UTC)"
    raise LedgerError(f"timestamp {text!r} is not in the ledger's form {form}")


def from_epoch(seconds: float) -> str:
    try:
        return iso(datetime.fromtimestamp(float(seconds), tz=UTC))
    except (OverflowError, OSError, ValueError):
        raise LedgerError(f"timestamp {seconds!r} is out of range") from None


def days_between(earlier: str, later: datetime) -> float:
    return (later - parse_time(earlier)).total_seconds() / 86400.0
