"""Range checks for the numbers a caller hands the ledger (seqs, counts, day spans).

SQLite integers are signed 64-bit and `datetime` stops at year 1, so an out-of-range number
would surface as OverflowError or TypeError deep inside a query; here it becomes the person's
`LedgerError` (exit 1 on the command line) before anything is read or written.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from factledger.ledger.errors import LedgerError

MAX_SEQ = 2**63 - 1                  # SQLite's largest INTEGER: no seq, count or offset is beyond
MAX_DAYS = 100_000                   # about 273 years back: the cut-off still falls after year 1


def check_int(option: str, value, low: int, high: int) -> int:
    """`value` as a whole number in [low, high], or a `LedgerError` naming the option."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise LedgerError(f"{option} must be a whole number (got {value!r})")
    if not low <= value <= high:
        raise LedgerError(f"{option} must be from {low} to {high} (got {value})")
    return value


MAX_JOBS = 64                        # worker processes of a replay: more is a typo, not a machine


def check_jobs(value) -> int:
    """`--jobs` (worker processes of a replay) as a whole number from 1 to MAX_JOBS; the command
    line hands it over as text, so a digit string is taken too."""
    if isinstance(value, str):
        text = value.strip()
        if not text.isascii() or not text.isdigit():
            raise LedgerError(f"--jobs must be a whole number from 1 to {MAX_JOBS} (got {value!r})")
        value = int(text)
    return check_int("--jobs", value, 1, MAX_JOBS)


def check_log_window(after, limit) -> None:
    check_int("--after", after, 0, MAX_SEQ)
    if limit is not None:
        check_int("--limit", limit, 0, MAX_SEQ)


def check_seq(option: str, value) -> int:
    return check_int(option, value, 0, MAX_SEQ)


def check_days(option: str, value, now: datetime) -> int | None:
    """A span of days back from `now` (retention); None means the registry's own."""
    if value is None:
        return None
    check_int(option, value, 1, MAX_DAYS)
    try:
        now - timedelta(days=value)
    except OverflowError:
        raise LedgerError(f"{option} {value} reaches before year 1 from {now:%Y-%m-%d}") from None
    return value
