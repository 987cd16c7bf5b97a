"""Reading a yes/no from JSON or TOML: a real boolean, or a refusal.

`bool("false")` is True, so a lenient reading of `"negated": "false"` retracts the very fact an
entry asserts.  Input that says a flag must say it with `true` or `false`; a string, a number or
anything else is refused with a message naming the field, never guessed at.
"""

from __future__ import annotations

from factledger.ledger.errors import LedgerError

_MISSING = object()


class NotABoolean(LedgerError, ValueError):
    """A flag given as something other than true or false.  Also a `ValueError`, so pydantic
    validators and google-adk callers see the kind of error they expect."""


def strict_bool(value, what: str = "value", default=_MISSING) -> bool:
    """`value` when it is `True` or `False`; `default` when it is None (and a default is given)."""
    if value is None and default is not _MISSING:
        return default
    if isinstance(value, bool):
        return value
    raise NotABoolean(f"{what} must be true or false (a JSON boolean), not {type(value).__name__} "
                      f"{ascii(value)[:40]}")
