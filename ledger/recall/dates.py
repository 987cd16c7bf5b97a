"""Relative time words in a served fact, resolved against the day it was said.

"I went to a support group yesterday", said on 2023-05-08, is served months later: a model that
reads "yesterday" then answers the wrong day.  The block therefore says what each relative word
meant when it was said ("yesterday" = 2023-05-07), computed from the fact's said date only, so
the same fact renders the same way whenever it is served.  English only; a phrase not listed is
left as it was said (the said date is always on the line).
"""

from __future__ import annotations

import re
from datetime import date, timedelta

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")
_COUNT = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
          "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3}
_PHRASE = re.compile(
    r"\b(?P<phrase>yesterday|today|tonight|this morning|this afternoon|this evening|last night|tomorrow|"
    r"(?:last|this|next) (?:week|weekend|month|year)|"
    r"(?:last|this|next|on) (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"(?P<count>\d+|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten) "
    r"(?P<unit>day|week|month|year)s? ago)\b", re.IGNORECASE)


def _month(d: date, shift: int) -> str:
    index = d.year * 12 + d.month - 1 + shift
    return f"{_MONTHS[index % 12]} {index // 12}"


def _week_of(d: date) -> str:
    monday = d - timedelta(days=d.weekday())
    return f"the week of {monday.isoformat()}"


def meaning(phrase: str, said: date, count: str | None = None, unit: str | None = None) -> str | None:
    """What one relative phrase meant on the day `said`, in words a model reads as a date."""
    p = " ".join(phrase.lower().split())
    if p in ("today", "tonight", "this morning", "this afternoon", "this evening"):
        return said.isoformat()
    if p in ("yesterday", "last night"):
        return (said - timedelta(days=1)).isoformat()
    if p == "tomorrow":
        return (said + timedelta(days=1)).isoformat()
    if count is not None and unit is not None:
        n = int(count) if count.isdigit() else _COUNT.get(count.lower(), 1)
        unit = unit.lower()
        if unit == "day":
            return (said - timedelta(days=n)).isoformat()
        if unit == "week":
            return _week_of(said - timedelta(weeks=n))
        if unit == "month":
            return _month(said, -n)
        return str(said.year - n)
    which, _, what = p.partition(" ")
    shift = {"last": -1, "this": 0, "next": 1, "on": -1}[which]
    if what == "week":
        return _week_of(said + timedelta(weeks=shift))
    if what == "weekend":
        saturday = said + timedelta(days=(5 - said.weekday()) % 7) + timedelta(weeks=shift)
        if shift < 0 and saturday >= said:
            saturday -= timedelta(weeks=1)
        return f"the weekend of {saturday.isoformat()}"
    if what == "month":
        return _month(said, shift)
    if what == "year":
        return str(said.year + shift)
    day = _WEEKDAYS.index(what)
    if shift > 0:
        return (said + timedelta(days=(day - said.weekday()) % 7 or 7)).isoformat()
    if shift == 0:
        return (said + timedelta(days=day - said.weekday())).isoformat()
    return (said - timedelta(days=(said.weekday() - day) % 7 or 7)).isoformat()


def resolved(text: str | None, said_at: str | None) -> list[str]:
    """`"yesterday" = 2023-05-07`, one a relative phrase of `text`, in order, each once."""
    if not text or not said_at:
        return []
    try:
        said = date.fromisoformat(said_at[:10])
    except ValueError:
        return []
    out: list[str] = []
    for found in _PHRASE.finditer(text):
        phrase = " ".join(found.group("phrase").lower().split())
        meant = meaning(phrase, said, found.group("count"), found.group("unit"))
        entry = f'"{phrase}" = {meant}'
        if meant and entry not in out:
            out.append(entry)
    return out
