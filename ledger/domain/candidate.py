"""A proposed fact, checked for shape before anything else looks at it.

Shape errors (an empty value, an unknown basis, a control character, a bad timestamp) are the
caller's mistake and raise `LedgerError` before anything is written.  Whether a well-formed
candidate is *believed* is the validator's and the decision table's business, and leaves an event.
"""

from __future__ import annotations

import math
import re
import unicodedata

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from factledger.ledger.errors import InvalidId, LedgerError
from factledger.ledger.vocabulary.clock import normalise_time
from factledger.ledger.vocabulary.ids import normalise_id
from factledger.ledger.vocabulary.words import ERASED_PREFIX, RESERVED_USERS, Author, Basis, Sensitivity

MAX_VALUE = 500
MAX_QUOTE = 2000
MAX_ID = 200
SUBJECT_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,99}")      # whole-string: fullmatch
_CONTROL = {chr(c) for c in range(32)} | {chr(127)} | {chr(c) for c in range(0x80, 0xA0)}
_QUOTE_ALLOWED = {"\n", "\t", "\r"}
# The same characters as a class, so a text is scanned in C rather than a character at a time.
_CONTROL_CHAR = re.compile("[" + "".join(sorted(_CONTROL)) + "]")
KIND_RE = re.compile(r"[a-z][a-z0-9_]{0,39}")                          # whole-string: fullmatch
# "25 mg" == "25mg", "148/92 mmHg" == "148/92mmHg": the space between a digit and a letter goes.
# Both sides are lookarounds, so the replacement is a plain "" (a template such as r"\1" sends
# every `sub` call through `re`'s Python-level template code).
_NUMBER_UNIT = re.compile(r"(?<=\d) (?=[^\W\d])")


def clean_text(text: str, what: str, limit: int, allow: set[str] = frozenset()) -> str:
    """NFC-normalise and bound a piece of data; refuse what could not be stored faithfully."""
    if not isinstance(text, str):
        raise ValueError(f"{what} must be text")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} is not valid Unicode (lone surrogate)") from None
    text = unicodedata.normalize("NFC", text).strip()
    if not text:
        raise ValueError(f"{what} is empty")
    if len(text) > limit:
        raise ValueError(f"{what} is longer than {limit} characters")
    bad = next((m.group() for m in _CONTROL_CHAR.finditer(text) if m.group() not in allow), None)
    if bad is not None:
        raise ValueError(f"{what} contains a control character (U+{ord(bad):04X})")
    return text


def reserved_user(user: str) -> bool:
    """Whether a user id is one the ledger keeps for itself: a forgotten user's pseudonym, the
    erasure receipts' and the checkpoints' partitions.  The one test every write path applies
    (observe, ingestion, import; the ADK service escapes its callers' ids away from them), so
    nothing a person said is ever filed there.  `_domain` (facts shared by every user of an app)
    is a partition people write to, and is not reserved."""
    return user.startswith(ERASED_PREFIX) or user in RESERVED_USERS


def refuse_reserved_user(user: str, where: str = "") -> str:
    """`user`, or `InvalidId` (a `LedgerError` and a `ValueError`) when it is reserved."""
    if reserved_user(user):
        raise InvalidId(f"{where}user id {user!r} is reserved (erased users, erasure receipts, checkpoints)")
    return user


def value_key(value: str) -> str:
    """The comparison form of a value: one value however it was cased or spaced.  The write path
    asks it of every candidate several times; the number-and-unit rule can close a space only after
    a word that ends in a digit, so a value with none (most are) skips the regex.  Nothing is
    memoised: a process-wide cache would keep values (and quotes) in memory after they are forgotten."""
    words = value.casefold().split()
    if len(words) < 2:
        return words[0] if words else ""
    folded = " ".join(words)
    for word in words[:-1]:
        if word[-1].isdecimal():             # what `\d` matches (Unicode category Nd)
            return _NUMBER_UNIT.sub("", folded)
    return folded


class Candidate(BaseModel):
    # built when it first validates, not on import (as the event bodies, ledger/domain/events.py)
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    app: str
    user: str
    subject: str = "user"
    predicate: str
    value: str
    quote: str
    session: str
    evidence_event: str
    author: Author = "user"
    basis: Basis = "stated"
    negated: bool = False
    confidence: float | None = None
    said_at: str
    effective_date: str | None = None
    # an open key's kind (ledger/registry/kinds.py), and the class it asks for (only ever raises)
    kind: str | None = None
    sensitivity: Sensitivity | None = None

    @field_validator("app", "user", "session", "evidence_event")
    @classmethod
    def _ident(cls, v: str, info) -> str:
        v = normalise_id(v, info.field_name)      # the one spelling every lookup uses too
        if info.field_name == "user":
            refuse_reserved_user(v)
        return v

    @field_validator("predicate")
    @classmethod
    def _predicate(cls, v: str) -> str:
        return clean_text(v, "predicate", MAX_ID)

    @field_validator("subject")
    @classmethod
    def _subject(cls, v: str) -> str:
        v = clean_text(v, "subject", MAX_ID)
        if not SUBJECT_RE.fullmatch(v):
            raise ValueError(f"subject {v!r} must be like user, user.daughter or account:4411")
        return v

    @field_validator("value")
    @classmethod
    def _value(cls, v: str) -> str:
        return clean_text(v, "value", MAX_VALUE)

    @field_validator("quote")
    @classmethod
    def _quote(cls, v: str) -> str:
        return clean_text(v, "quote", MAX_QUOTE, _QUOTE_ALLOWED)

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        v = v.strip().lower()
        if not KIND_RE.fullmatch(v):
            raise ValueError(f"kind {v!r} must be one word, like preference, event or open_item")
        return v

    @field_validator("confidence")
    @classmethod
    def _confidence(cls, v: float | None) -> float | None:
        if v is not None and (not math.isfinite(v) or not 0.0 <= v <= 1.0):
            raise ValueError("confidence must be a number from 0 to 1")
        return v

    @field_validator("said_at")
    @classmethod
    def _said_at(cls, v: str) -> str:
        try:
            return normalise_time(v)
        except LedgerError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("effective_date")
    @classmethod
    def _effective(cls, v: str | None) -> str | None:
        if v is None or not str(v).strip():
            return None
        v = str(v).strip()
        try:
            normal = normalise_time(v)
        except LedgerError as exc:
            raise ValueError(str(exc)) from None
        return normal[:10] if len(v) == 10 else normal

    @property
    def partition(self) -> tuple[str, str]:
        return (self.app, self.user)

    def record(self) -> dict:
        """The candidate as stored inside rejection and hold events."""
        return self.model_dump(exclude={"app", "user"}, exclude_none=True)


def make_candidate(**fields) -> Candidate:
    """Build a candidate, turning pydantic's complaint into one readable `LedgerError`."""
    try:
        return Candidate(**fields)
    except ValidationError as exc:
        raise LedgerError(describe_validation_error(exc)) from None


def describe_validation_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "candidate"
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            message = "is required"
        elif err["type"] == "literal_error":
            message = f"{err.get('input')!r} is not allowed ({message.removeprefix('Input should be ')})"
        parts.append(f"{where}: {message}")
    return "; ".join(parts)
