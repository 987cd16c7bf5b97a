"""Kinds of fact and the open keys they admit: memory beyond the registry's predicates.

The registry's predicates are the keys the ledger knows by name, each with its own rules.  What
people tell an agent is open: a preference ("prefers TypeScript for new services"), a constraint
("no customer data outside the EU"), a decision ("chose plan B"), a fact about their world, an
event, an open item.  A candidate that names a `kind` and a dotted key of its own
(`code.language`, `deploy.region`, `support_group.attended`) is accepted under that kind's default
rules instead of being held as an unknown predicate.  A key the registry knows (by name or alias)
keeps the registry's own rules whatever kind the candidate names.

An open key is never a way around clearance: its sensitivity is the kind's default, raised (never
lowered) by what the candidate asks for, and raised to `health` when the key, the value or the
quote holds a health word the registry knows (its health predicates' names, aliases and values,
and `[open_keys] health_words`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from factledger.ledger.vocabulary.words import CARDINALITIES, SENSITIVITIES

SENSITIVITY_RANK = {name: rank for rank, name in enumerate(SENSITIVITIES)}
OPEN_KEY_RE = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*")     # whole-string: fullmatch
MAX_OPEN_KEY = 100


@dataclass(frozen=True)
class KindSpec:
    """A kind's default rules, which every open key of the kind follows."""

    name: str
    cardinality: str
    sensitivity: str
    description: str = ""
    confirm_after_days: int | None = None        # None: by sensitivity, as for a predicate
    retention_days: int | None = None
    min_confidence: float | None = None          # the serving threshold; None: the ledger's one
    dated: bool = False                          # an event: its said date is its effective date


# The kinds every registry has (a registry's `[kinds.NAME]` table overrides one or adds one).
# `one`: a new value supersedes (a changed preference, decision or fact); `many`: values
# accumulate until retracted (constraints, events, open items: a later one never replaces one).
DEFAULT_KINDS: dict[str, KindSpec] = {k.name: k for k in (
    KindSpec("preference", "one", "normal", "what the user prefers; a new preference replaces the old"),
    KindSpec("constraint", "many", "normal", "a rule the user works under; constraints accumulate"),
    KindSpec("decision", "one", "normal", "a choice made; a later decision on the key replaces it"),
    KindSpec("fact", "one", "personal", "a fact about the user or their world; a new value replaces the old"),
    KindSpec("event", "many", "personal", "something that happened, dated by when it was said; never superseded",
             dated=True),
    KindSpec("open_item", "many", "normal", "something still to do; closed by a negation (done, dropped)"),
    KindSpec("measurement", "series", "normal", "a dated reading; a new date is a new reading"),
    KindSpec("relationship", "one", "personal", "who someone is to the user"),
)}

# Words that make an open key's fact health data whatever its kind says (beside the registry's
# health predicates' own names, aliases and values).
DEFAULT_HEALTH_WORDS = (
    "health", "medical", "medication", "medicine", "meds", "dose", "dosage", "prescription", "prescribed",
    "diagnosis", "diagnosed", "condition", "symptom", "symptoms", "therapy", "therapist", "counseling",
    "counselling", "psychiatrist", "clinic", "hospital", "surgery", "doctor", "blood", "pressure", "glucose",
    "insulin", "cholesterol", "pregnant", "pregnancy", "allergy", "allergic", "disease", "disorder",
    "illness", "injury", "cancer", "diabetes", "depression", "anxiety", "mental", "rehab", "addiction",
    "support_group", "mg", "mmhg",
)

_WORD = re.compile(r"[^\W_]+")


def open_key_name(name: str) -> str | None:
    """`name` as an open key (lower case, words joined by `_` and `.`), or None when it cannot be
    one: case and spaces are forgiven ("Code Language" -> `code_language`), anything else is not."""
    folded = re.sub(r"[\s\-]+", "_", name.strip().lower())
    if len(folded) > MAX_OPEN_KEY or not OPEN_KEY_RE.fullmatch(folded):
        return None
    return folded


def higher(a: str, b: str | None) -> str:
    """The more sensitive of two classes (`b` may be None)."""
    if b is None or b not in SENSITIVITY_RANK:
        return a
    return a if SENSITIVITY_RANK[a] >= SENSITIVITY_RANK[b] else b


def words_of(*texts: str) -> set[str]:
    """The case-folded words of some texts, a key's dotted parts included."""
    out: set[str] = set()
    for text in texts:
        folded = (text or "").casefold()
        out.update(_WORD.findall(folded))
        out.update(part for part in re.split(r"[.\s]+", folded) if part)
    return out


def check_kind_table(name: str, body, fail) -> KindSpec:
    """One `[kinds.NAME]` table of a registry, over the built-in kind of that name if any."""
    base = DEFAULT_KINDS.get(name)
    if not isinstance(body, dict):
        raise fail("(table)", "must be a table")
    known = {"cardinality", "sensitivity", "description", "confirm_after_days", "retention_days",
             "min_confidence", "dated"}
    for key in body:
        if key not in known:
            raise fail(key, f"unknown field (known: {', '.join(sorted(known))})")
    cardinality = body.get("cardinality", base.cardinality if base else None)
    if cardinality not in CARDINALITIES:
        raise fail("cardinality", f"{cardinality!r} is not one of {', '.join(CARDINALITIES)}")
    sensitivity = body.get("sensitivity", base.sensitivity if base else "normal")
    if sensitivity not in SENSITIVITIES:
        raise fail("sensitivity", f"{sensitivity!r} is not one of {', '.join(SENSITIVITIES)}")
    days = {}
    for field in ("confirm_after_days", "retention_days"):
        value = body.get(field, getattr(base, field) if base else None)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise fail(field, "must be a positive whole number of days")
        days[field] = value
    threshold = body.get("min_confidence", base.min_confidence if base else None)
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int | float)
                                  or not 0 <= threshold <= 1):
        raise fail("min_confidence", "must be a number from 0 to 1")
    dated = body.get("dated", base.dated if base else False)
    if not isinstance(dated, bool):
        raise fail("dated", "must be true or false")
    description = body.get("description", base.description if base else "")
    if not isinstance(description, str):
        raise fail("description", "must be text")
    return KindSpec(name, cardinality, sensitivity, description, days["confirm_after_days"],
                    days["retention_days"], None if threshold is None else float(threshold), dated)
