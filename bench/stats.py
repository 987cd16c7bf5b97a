"""Small statistics helpers shared by the measurements."""

from __future__ import annotations

import math


def percentile(samples: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of a list of samples; None when there are none."""
    if not samples:
        return None
    ordered = sorted(samples)
    rank = min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[rank]


def rate(count: float, seconds: float) -> float | None:
    return round(count / seconds, 1) if seconds > 0 else None


def ratio(ours: float | None, theirs: float | None) -> float | None:
    return round(ours / theirs, 3) if ours and theirs else None


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 3)
