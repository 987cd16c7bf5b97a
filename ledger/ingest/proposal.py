"""What an extractor proposes, before the validator has looked at it.

A proposal names an evidence event and a quote; it never carries the author or the time, because
those are taken from the session, not from whatever produced the proposal.  (A candidates file
that still carries `said_at`, `author` or `cardinality` is accepted and those fields are ignored.)
It may name a `kind` for a key of its own (an open key, ledger/registry/kinds.py) and a
`sensitivity`, which only ever raises an open key's class: a registry predicate's class is the
registry's, never the proposal's.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from factledger.ledger.domain.candidate import describe_validation_error
from factledger.ledger.errors import LedgerError
from factledger.ledger.ingest.jsonl import json_lines, read_text
from factledger.ledger.vocabulary.words import Basis, Sensitivity

IGNORED_FIELDS = ("said_at", "author", "cardinality")


class Proposal(BaseModel):
    """One candidate as an extractor hands it over."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    subject: str = "user"
    predicate: str
    value: str
    quote: str
    evidence_event: str
    basis: Basis = "stated"
    negated: StrictBool = False           # "false" (a string) is refused, never read as true
    confidence: float | None = None
    effective_date: str | None = None
    kind: str | None = Field(default=None, max_length=40)
    sensitivity: Sensitivity | None = None
    # provenance: the registry pattern or rule that proposed it (the offline extractor's)
    pattern: str | None = Field(default=None, max_length=200)
    session: str | None = Field(default=None, description="only in candidates files: routing")

    def record(self) -> dict:
        return self.model_dump(exclude_none=True)


def proposal_from(obj, where: str) -> Proposal:
    """Build a proposal from a JSON object, or raise `LedgerError` naming `where`."""
    if not isinstance(obj, dict):
        raise LedgerError(f"{where}: a candidate must be a JSON object")
    data = {k: v for k, v in obj.items() if k not in IGNORED_FIELDS}
    for key in ("value", "quote", "predicate", "evidence_event", "subject"):
        if isinstance(data.get(key), (int, float)) and not isinstance(data.get(key), bool):
            data[key] = str(data[key])        # 25 -> "25": a number is a value too
    try:
        return Proposal(**data)
    except ValidationError as exc:
        raise LedgerError(f"{where}: {describe_validation_error(exc)}") from None


def read_candidates(path: str) -> list[Proposal]:
    """A candidates JSONL file; an error names the file and the line."""
    return [proposal for proposal, _where in read_candidate_lines(path)]


def read_candidate_lines(path: str) -> list[tuple[Proposal, str]]:
    """Each proposal of a candidates file with where it is ("FILE line N"), for messages."""
    text = read_text(path, missing="no such candidates file")
    return [(proposal_from(obj, where), where) for _number, where, obj in json_lines(text, path)]
