"""Choosing an extractor by name: the factory over the implementations (which know nothing of it)."""

from __future__ import annotations

from factledger.ledger.errors import LedgerError
from factledger.ledger.ingest.anthropic import AnthropicExtractor
from factledger.ledger.ingest.candidates import CandidatesExtractor
from factledger.ledger.ingest.extractor import EXTRACTORS, Extractor, default_extractor_name
from factledger.ledger.ingest.patterns import PatternsExtractor
from factledger.ledger.ingest.proposal import read_candidate_lines


def make_extractor(name: str | Extractor | None = None, *, model: str | None = None,
                   candidates: str | list[str] | None = None, **options) -> Extractor:
    if name is not None and not isinstance(name, str):
        return name                                   # already an extractor object
    name = name or default_extractor_name()
    if name == "patterns":
        return PatternsExtractor()
    if name == "candidates":
        if not candidates:
            raise LedgerError("the candidates extractor needs --candidates FILE")
        files = [candidates] if isinstance(candidates, str) else list(candidates)
        lines = [line for name in files for line in read_candidate_lines(name)]
        return CandidatesExtractor([p for p, _ in lines], wheres=[w for _, w in lines])
    if name == "anthropic":
        return AnthropicExtractor(model=model, **options)
    raise LedgerError(f"unknown extractor {name!r} (choose from {', '.join(EXTRACTORS)})")
