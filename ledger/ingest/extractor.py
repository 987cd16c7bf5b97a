"""The one protocol every extractor follows (`extractors.py` turns a name into one).

An extractor reads a session delta and proposes candidates (plus, optionally, a one-line digest
of the session).  It never writes: ingestion validates what it proposes and appends the result
in one transaction, so an extractor that fails halfway leaves nothing behind.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from factledger.ledger.errors import LedgerError
from factledger.ledger.ingest.proposal import Proposal
from factledger.ledger.ingest.session import Delta
from factledger.ledger.registry.predicates import Registry

EXTRACTORS = ("patterns", "anthropic", "candidates")


@dataclass(frozen=True)
class Context:
    """What an extractor may know besides the transcript: the registry and the partition's keys.

    `current` (the open facts: subject, predicate, value) is read only when an extractor asks
    for it; `patterns` and `candidates` never do.
    """

    app: str
    user: str
    registry: Registry
    load_current: Callable[[], Iterable[dict]] | None = field(default=None, repr=False,
                                                              compare=False)

    @cached_property
    def current(self) -> tuple[dict, ...]:
        return tuple(self.load_current()) if self.load_current is not None else ()


@dataclass
class Extraction:
    proposals: list[Proposal] = field(default_factory=list)
    digest: str | None = None
    model: str | None = None
    prompt_sha256: str | None = None


class ExtractionFailed(Exception):
    """The extractor could not produce a trustworthy answer; nothing of the session is stored."""

    def __init__(self, message: str, attempts: int = 1):
        super().__init__(message)
        self.attempts = attempts


class Extractor(Protocol):
    name: str
    model: str | None

    def extract(self, delta: Delta, context: Context) -> Extraction: ...


# The extractor when none is named: FACTLEDGER_EXTRACTOR, else the offline `patterns` one.
EXTRACTOR_ENV = "FACTLEDGER_EXTRACTOR"


def default_extractor_name() -> str:
    """FACTLEDGER_EXTRACTOR when set, else the offline `patterns` extractor.

    An ANTHROPIC_API_KEY in the environment alone chooses nothing: sending transcripts to a
    third party is opt-in (`--extractor anthropic`, FACTLEDGER_EXTRACTOR=anthropic, or
    `extractor="anthropic"`), since a key is often set for other tools (issue 46)."""
    chosen = os.environ.get(EXTRACTOR_ENV, "").strip().lower()
    if not chosen:
        return "patterns"
    if chosen not in EXTRACTORS:
        raise LedgerError(f"{EXTRACTOR_ENV}={chosen!r} is not an extractor (choose from {', '.join(EXTRACTORS)})")
    return chosen
