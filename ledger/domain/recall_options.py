"""The knobs of recall, checked once, so that bad input is a `LedgerError` for the person and
not a traceback halfway through scoring.

Kept apart from `ledger.recall` so that the command line, the google-adk service and the scorer
share one parser and one set of defaults.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from factledger.ledger.domain.confidence import SERVING_THRESHOLD
from factledger.ledger.errors import LedgerError
from factledger.ledger.registry.predicates import SENSITIVITIES

DEFAULT_LIMIT = 12
DEFAULT_RECENCY_WEIGHT = 0.3
DEFAULT_HALF_LIFE_DAYS = 90.0
# The clearance of the two agent-facing surfaces (library recall, the ADK service) when the
# caller names none: an assistant serving a user needs to know where that user lives, not their
# health record.  Every surface's default is in one table in docs/recall.md.
DEFAULT_CLEARANCE = "personal"
# The clearance of the auditor's reads of one fact or key (`history`, `why`): a person inspecting
# provenance sees every class unless they narrow it.
AUDIT_CLEARANCE = "health"
# The clearance of whoever is not named at all: an anonymous web visitor, an actor the operator gave
# no clearance; the lowest class.
PUBLIC_CLEARANCE = SENSITIVITIES[0]
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([hdwmy]?)\s*", re.IGNORECASE)   # fullmatch
_UNIT_DAYS = {"h": 1 / 24, "d": 1.0, "": 1.0, "w": 7.0, "m": 30.0, "y": 365.0}


@dataclass(frozen=True)
class RecallOptions:
    """Every knob of recall, checked once (bad input is a `LedgerError` for the person)."""

    clearance: tuple[str, ...] = SENSITIVITIES[:SENSITIVITIES.index(DEFAULT_CLEARANCE) + 1]
    min_confidence: float = SERVING_THRESHOLD
    max_age_days: float | None = None
    recency_weight: float = DEFAULT_RECENCY_WEIGHT
    half_life_days: float = DEFAULT_HALF_LIFE_DAYS
    limit: int = DEFAULT_LIMIT
    budget: int | None = None
    preload: bool = False
    domain: bool = True
    mode: str | None = None           # lexical | semantic | hybrid; None: hybrid when meaning is available
    kinds: tuple[str, ...] | None = None   # only facts of these kinds (None: every kind)
    # whether the caller named a threshold: if not, a kind's own serving threshold applies
    # (the registry's `[kinds.NAME] min_confidence`), else the caller's, for every kind
    threshold_given: bool = False

    @classmethod
    def build(cls, *, clearance=None, min_confidence=None, max_age=None, recency_weight=None,
              half_life=None, limit=None, budget=None, preload=False, domain=True,
              mode=None, kinds=None) -> RecallOptions:
        opts = cls(
            clearance=parse_clearance(clearance),
            min_confidence=_unit_interval("--min-confidence", min_confidence, SERVING_THRESHOLD),
            max_age_days=None if max_age is None else parse_days("--max-age", max_age, allow_zero=True),
            recency_weight=_unit_interval("--recency-weight", recency_weight, DEFAULT_RECENCY_WEIGHT),
            half_life_days=(DEFAULT_HALF_LIFE_DAYS if half_life is None
                            else parse_days("--half-life", half_life)),
            limit=DEFAULT_LIMIT if limit is None else _count("--limit", limit),
            budget=None if budget is None else _count("--budget", budget),
            preload=bool(preload), domain=bool(domain), mode=parse_mode(mode), kinds=parse_kinds(kinds),
            threshold_given=min_confidence is not None)
        return opts

    def as_dict(self) -> dict:
        return {"clearance": list(self.clearance), "min_confidence": self.min_confidence,
                "max_age_days": self.max_age_days, "recency_weight": self.recency_weight,
                "half_life_days": self.half_life_days, "limit": self.limit, "budget": self.budget,
                "preload": self.preload, "domain": self.domain, "mode": self.mode,
                "kinds": None if self.kinds is None else list(self.kinds)}


MODES = ("lexical", "semantic", "hybrid")
_KIND = re.compile(r"[a-z][a-z0-9_]{0,39}")          # fullmatch, as a candidate's kind


def parse_kinds(value) -> tuple[str, ...] | None:
    """Kind names (a comma-separated string or a list) to limit recall to; None: every kind.
    Whether a kind exists is the registry's to say (`Ledger.recall` checks the names)."""
    if value is None:
        return None
    names = value.split(",") if isinstance(value, str) else list(value)
    kinds = tuple(dict.fromkeys(str(n).strip().lower() for n in names if str(n).strip()))
    bad = [k for k in kinds if not _KIND.fullmatch(k)]
    if bad:
        raise LedgerError(f"--kind {bad[0]!r} is not a kind name (one word, like preference or event)")
    return kinds or None


def parse_mode(value) -> str | None:
    """A recall mode name, or None (the default: hybrid when meaning is available)."""
    if value is None or str(value).strip() == "":
        return None
    mode = str(value).strip().lower()
    if mode not in MODES:
        raise LedgerError(f"unknown recall mode {value!r} (known: {', '.join(MODES)})")
    return mode


def parse_clearance(value) -> tuple[str, ...]:
    """A clearance on the one ordered scale `normal < personal < health`: a level means that
    level and every level below it (`personal` -> ('normal', 'personal'); `health` and `all` ->
    all three).  A list names its highest level (`personal,health` is `health`), so the old
    spelling of "these sensitivities besides normal" never means less than it used to.  None is
    the agent-facing default, DEFAULT_CLEARANCE."""
    if value is None:
        names: list[str] = [DEFAULT_CLEARANCE]
    elif isinstance(value, str):
        names = [n.strip().lower() for n in value.split(",") if n.strip()]
    else:
        names = [str(n).strip().lower() for n in value if str(n).strip()]
    names = [SENSITIVITIES[-1] if n == "all" else n for n in names]
    unknown = [n for n in names if n not in SENSITIVITIES]
    if unknown:
        raise LedgerError(f"unknown clearance {unknown[0]!r} (known: {', '.join(SENSITIVITIES)}, "
                          "each including the ones before it, or all)")
    top = max((SENSITIVITIES.index(n) for n in names), default=0)
    return SENSITIVITIES[:top + 1]


def clearance_level(cleared: tuple[str, ...]) -> str:
    """The one word for a parsed clearance: its highest level."""
    return cleared[-1] if cleared else SENSITIVITIES[0]


def parse_days(option: str, value, allow_zero: bool = False) -> float:
    """A duration in days: a number, or a number with h, d, w, m (30 days) or y (365 days)."""
    if isinstance(value, bool):
        raise LedgerError(f"{option} must be a duration like 90d, 12w or 1y")
    if isinstance(value, (int, float)):
        days = float(value)
    else:
        found = _DURATION.fullmatch(str(value))
        if not found:
            raise LedgerError(f"{option} {value!r} is not a duration (say 90d, 12w, 6m or 1y)")
        days = float(found.group(1)) * _UNIT_DAYS[found.group(2).lower()]
    if not math.isfinite(days) or days < 0 or (days == 0 and not allow_zero):
        raise LedgerError(f"{option} must be {'zero or more' if allow_zero else 'more than zero'}"
                          f" (got {value!r})")
    return days


def _unit_interval(option: str, value, default: float) -> float:
    if value is None:
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise LedgerError(f"{option} must be a number from 0 to 1 (got {value!r})") from None
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise LedgerError(f"{option} must be a number from 0 to 1 (got {value!r})")
    return number


def _count(option: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = int(str(value).strip())
        except ValueError:
            raise LedgerError(f"{option} must be a whole number (got {value!r})") from None
    if value < 0:
        raise LedgerError(f"{option} cannot be negative (got {value})")
    return value


__all__ = ["RecallOptions", "MODES", "parse_mode", "parse_kinds", "parse_clearance", "clearance_level", "parse_days",
           "DEFAULT_CLEARANCE", "AUDIT_CLEARANCE", "PUBLIC_CLEARANCE", "DEFAULT_LIMIT",
           "DEFAULT_RECENCY_WEIGHT", "DEFAULT_HALF_LIFE_DAYS"]
