"""The one protocol every extractor follows, and how a name becomes an extractor.

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

from ..errors import LedgerError
from ..registry import Registry
from .proposal import Proposal
from .session import Delta

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


def default_extractor_name() -> str:
    """`anthropic` when an API key is configured, else the offline `patterns` extractor."""
    return "anthropic" if os.environ.get("ANTHROPIC_API_KEY") else "patterns"


def make_extractor(name: str | Extractor | None = None, *, model: str | None = None,
                   candidates: str | list[str] | None = None, **options) -> Extractor:
    if name is not None and not isinstance(name, str):
        return name                                   # already an extractor object
    name = name or default_extractor_name()
    if name == "patterns":
        from .patterns import PatternsExtractor

        return PatternsExtractor()
    if name == "candidates":
        from .candidates import CandidatesExtractor
        from .proposal import read_candidate_lines

        if not candidates:
            raise LedgerError("the candidates extractor needs --candidates FILE")
        files = [candidates] if isinstance(candidates, str) else list(candidates)
        lines = [line for name in files for line in read_candidate_lines(name)]
        return CandidatesExtractor([p for p, _ in lines], wheres=[w for _, w in lines])
    if name == "anthropic":
        from .anthropic import AnthropicExtractor

        return AnthropicExtractor(model=model, **options)
    raise LedgerError(f"unknown extractor {name!r} (choose from {', '.join(EXTRACTORS)})")
