"""UUIDv7 text ids: time-ordered, so ids sort roughly like the log, and unique across processes."""

from __future__ import annotations

import os
import time
import unicodedata
import uuid

from factledger.ledger.errors import InvalidId


def new_id() -> str:
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= (rand >> 68 & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    # str(uuid.UUID(int=value)), without building the object (same text: 8-4-4-4-12 lowercase hex)
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_SPLIT = uuid.UUID("7d3c1e52-5f0a-4b8e-9c61-2a4f6d8b0e13")


def split_id(fact_id: str, at: str) -> str:
    """The id of the part of `fact_id` a statement said at `at` splits off (ledger/domain/record.py): the
    same whenever that split is made, so re-decision after a forget gives the part back its id,
    as it gives an observation recorded again its own.  A fact is split at one time at most once
    (after it, the fact holds from a statement said later), so the id is unique."""
    return str(uuid.uuid5(_SPLIT, f"{fact_id}\x00{at}"))


MAX_ID_LENGTH = 200


def normalise_id(value: str, what: str = "id") -> str:
    """The one spelling of an app, user, session or fact id that the ledger stores and looks up.

    Every entry point (library, CLI, ADK service) passes ids through here, so "josé" typed with a
    combining accent, or with surrounding spaces, reaches the same partition as the stored id:
    NFC, stripped, non-empty, at most MAX_ID_LENGTH characters, no control characters.
    """
    if not isinstance(value, str):
        raise InvalidId(f"{what} must be text, not {type(value).__name__}")
    text = unicodedata.normalize("NFC", value).strip()
    if not text:
        raise InvalidId(f"{what} is empty")
    if len(text) > MAX_ID_LENGTH:
        raise InvalidId(f"{what} is longer than {MAX_ID_LENGTH} characters")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") for ch in text):
        raise InvalidId(f"{what} contains a control or format character (or a lone surrogate)")
    return text


def normalise_optional(value: str | None, what: str = "id") -> str | None:
    """`normalise_id` for a filter that may be absent (None stays None: no filter)."""
    return None if value is None else normalise_id(value, what)


def normalise_partition(app: str | None, user: str | None) -> tuple[str, str]:
    """An `(app, user)` partition in its one spelling; a missing half is bad input, said so."""
    if not isinstance(app, str) or not app.strip() or not isinstance(user, str) or not user.strip():
        raise InvalidId("a partition is required: app and user (--app and --user)")
    return normalise_id(app, "app"), normalise_id(user, "user")
