"""The log's vocabulary: one pydantic model per event body, discriminated by `type`.

Bodies are validated once, when they are written.  The fold reads them back as plain dicts
(the bytes were validated on the way in), so replay pays for JSON parsing and nothing else.
Every body carries its partition; every decision carries the rule that took it and the sha256
of the registry it was taken under.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Annotated, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter

from factledger.ledger.errors import LedgerError
from factledger.ledger.vocabulary.clock import stored_time
from factledger.ledger.vocabulary.words import AUTHORS, BASES, Author, Basis, Cardinality, Reason, Sensitivity


def _time(value: str) -> str:
    try:
        return stored_time(value)
    except LedgerError as exc:
        raise ValueError(str(exc)) from None


def _day_or_time(value: str) -> str:
    try:
        return stored_time(value, day=True)
    except LedgerError as exc:
        raise ValueError(str(exc)) from None


# Every time in a body is checked wherever a body is made or read in (append, import, restate):
# exactly the form the ledger writes (`clock.iso`), so the fold and every read can compare and
# parse it.  Checked, never rewritten: a valid body's canonical JSON is what it always was.
Timestamp = Annotated[str, AfterValidator(_time)]
EffectiveDate = Annotated[str, AfterValidator(_day_or_time)]      # a date alone, or a timestamp


# A stored candidate's fields, when present, have a candidate's types: a held one is read back by
# `review` and accepted from, a rejected one is listed (issue 47: a re-chained export's held
# candidate with a number for its predicate imported, and every `review` then failed).
_CANDIDATE_TEXT = ("subject", "predicate", "value", "quote", "session", "evidence_event",
                   "effective_date", "pattern", "error")


def _stored_candidate(candidate: dict) -> dict:
    """A stored candidate's `said_at`, when it has one (a rejected proposal whose evidence event
    does not exist has none), is a timestamp like any other; its other fields have their types."""
    if "said_at" in candidate:
        _time(candidate["said_at"])
    for name in _CANDIDATE_TEXT:
        if name in candidate and not isinstance(candidate[name], str):
            raise ValueError(f"candidate.{name} must be text")
    for name, words in (("author", AUTHORS), ("basis", BASES)):
        if name in candidate and candidate[name] not in words:
            raise ValueError(f"candidate.{name} must be one of {', '.join(words)}")
    if "negated" in candidate and not isinstance(candidate["negated"], bool):
        raise ValueError("candidate.negated must be true or false")
    confidence = candidate.get("confidence")
    if confidence is not None and (isinstance(confidence, bool) or not isinstance(confidence, int | float)):
        raise ValueError("candidate.confidence must be a number")
    return candidate


_KIND_WORD = re.compile(r"[a-z][a-z0-9_]{0,63}")


def _kind(value: str) -> str:
    if not _KIND_WORD.fullmatch(value):
        raise ValueError("kind must be a registry's kind: lower-case words joined by _")
    return value


# A kind's shape only: a registry may define kinds of its own, so which kinds a ledger knows is
# its registry's to say (`export.import_log` checks an import against it).
Kind = Annotated[str, AfterValidator(_kind)]
StoredCandidate = Annotated[dict, AfterValidator(_stored_candidate)]     # a held or rejected proposal


class Body(BaseModel):
    # defer_build: each model's validator is built when it first validates, not on import, so a
    # command that writes no event (facts, log, verify...) does not pay for building them all
    # (docs/performance.md); validation itself is unchanged.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    app: str
    user: str


class Decided(Body):
    fact_id: str
    rule: str
    registry_sha256: str = ""


class FactObserved(Decided):
    type: Literal["FactObserved"] = "FactObserved"
    subject: str
    predicate: str
    value: str
    session: str
    evidence_event: str
    quote: str
    author: Author
    basis: Basis
    basis_claimed: Basis | None = None
    confidence: float
    # The registry's words (issue 47: an imported "secret" was no level, and every later read
    # that ranks sensitivities failed); a kind's shape here, its name against the registry on import.
    sensitivity: Sensitivity
    kind: Kind
    cardinality: Cardinality
    said_at: Timestamp
    effective_date: EffectiveDate | None = None
    hold_id: str | None = None
    reviewed_by: str | None = None        # the reviewer who accepted the held candidate, and why
    review_reason: str | None = None
    cause: int | None = None              # seq of the Redacted event that recorded it again
    restates: int | None = None           # ... and the seq of the statement it records again
    # True when the encoder failed during the dedup meaning check: decided by the exact rules, and
    # the check is owed (a `MeaningChecked` of this fact records it run again)
    unchecked: bool | None = None


class MeaningChecked(Decided):
    """The meaning check an encoder failure deferred (`FactObserved.unchecked`), run again for the
    fact it opened (`fact_id`).  `by_fact_id`: the open fact of the key it only restates (rule
    `same_meaning` or `same_form`): the fact's statements count towards that one, as they would
    have had the check run, and the fact closes `rejected`; None (rule `meaning_retry`): it is a
    value of its own, and nothing changes."""

    type: Literal["MeaningChecked"] = "MeaningChecked"
    by_fact_id: str | None = None
    cause: int | None = None


class FactReinforced(Decided):
    """A restatement of an open fact's value.  It carries its own key, value and basis (not only
    the fact it counts towards), so it can be decided again after that fact's observation is gone."""

    type: Literal["FactReinforced"] = "FactReinforced"
    session: str
    evidence_event: str
    quote: str
    author: Author
    basis: Basis
    confidence: float
    said_at: Timestamp
    subject: str
    predicate: str
    value: str
    effective_date: EffectiveDate | None = None
    basis_claimed: Basis | None = None
    hold_id: str | None = None            # a reviewer accepted a held candidate as this
    reviewed_by: str | None = None
    review_reason: str | None = None
    cause: int | None = None              # seq of the Redacted event, for a compensating event
    restates: int | None = None
    observed_as: str | None = None        # see `CandidateRejected.observed_as`


class FactSuperseded(Decided):
    type: Literal["FactSuperseded"] = "FactSuperseded"
    by_fact_id: str | None = None
    reason: str
    valid_to: Timestamp | None = None
    cause: int | None = None


class FactDisputed(Decided):
    type: Literal["FactDisputed"] = "FactDisputed"
    disputes: str
    cause: int | None = None            # seq of the Redacted event, for a compensating event


class FactRetracted(Decided):
    """A negation that closed an open fact; self-contained like `FactReinforced`."""

    type: Literal["FactRetracted"] = "FactRetracted"
    session: str
    evidence_event: str
    quote: str
    author: Author
    basis: Basis
    said_at: Timestamp
    subject: str
    predicate: str
    value: str
    effective_date: EffectiveDate | None = None
    confidence: float | None = None       # as the candidate proposed it
    basis_claimed: Basis | None = None
    hold_id: str | None = None            # a reviewer accepted a held negation as this
    reviewed_by: str | None = None
    review_reason: str | None = None
    cause: int | None = None
    restates: int | None = None


class FactNegated(Decided):
    """A fact just opened by a statement learnt after a negation of its value that was said
    later (at `valid_to`): in said order the negation retracted it, so it closes `retracted`
    then.  A decision, not a statement: the negation's own event says it, and names no seq here
    (re-decision after a forget records both before either has one; `why` finds the negation by
    its key, value and time in `key_negations`)."""

    type: Literal["FactNegated"] = "FactNegated"
    valid_to: Timestamp
    hold_id: str | None = None            # the statement it closes was a reviewer's accept
    reviewed_by: str | None = None
    review_reason: str | None = None
    cause: int | None = None


class DisputeResolved(Decided):
    """A dispute settled: `winner_id` becomes current, every `loser_ids` fact closes as `loser_state`.

    A reviewer's judgement whose dispute does not arise after a forget is kept with rule
    `reviewer_unsettled`, no winner and no losers (it changes nothing), so that a later forget in
    which the dispute arises again applies it."""

    type: Literal["DisputeResolved"] = "DisputeResolved"
    outcome: Literal["accept", "reject"]
    winner_id: str | None = None
    loser_ids: list[str] = []
    loser_state: Literal["superseded", "rejected"] = "superseded"
    resolved_by: str
    reason: str
    valid_to: Timestamp | None = None
    cause: int | None = None
    restates: int | None = None
    subject: str | None = None            # the key of a judgement kept settling nothing (rule
    predicate: str | None = None          # `reviewer_unsettled`), whose fact may not exist now


class FactReinstated(Decided):
    type: Literal["FactReinstated"] = "FactReinstated"
    cause: int
    reason: str = Reason.REDACTION


class FactSplit(Decided):
    """A statement learnt late was said between two statements of the fact (`fact_id`): its
    statements said up to `at` become a new fact (`split_id`), closed then, as `superseded` by the
    late value (`by_fact_id`) or `retracted` by a late negation (`early_state`); the fact holds
    from its first statement after `at`, named here (it becomes the fact's first statement), with
    the authority of the statements it keeps (`basis`, the base `confidence`) and the new fact
    with that of the others (`early_basis`, `early_confidence`)."""

    type: Literal["FactSplit"] = "FactSplit"
    split_id: str
    by_fact_id: str | None = None         # None: a negation said then (`early_state` retracted)
    early_state: Literal["superseded", "retracted"] = "superseded"
    at: Timestamp
    said_at: Timestamp
    session: str
    evidence_event: str
    quote: str
    author: Author
    basis: Basis
    confidence: float
    early_basis: Basis
    early_confidence: float
    subject: str
    predicate: str
    cause: int | None = None


class CandidateRejected(Body):
    type: Literal["CandidateRejected"] = "CandidateRejected"
    reason: str
    rule: str
    candidate: StoredCandidate
    fact_id: str | None = None
    hold_id: str | None = None
    basis_claimed: Basis | None = None
    reviewed_by: str | None = None        # the reviewer who rejected it (`reason` is theirs), or who
    review_reason: str | None = None      # accepted it into a rejection (`review_reason` is theirs)
    registry_sha256: str = ""
    cause: int | None = None
    restates: int | None = None
    # The fact this statement observed when it was first recorded, kept when re-decision records
    # it as something else: a later re-decision that makes it an observation again gives the fact
    # back its id, so a reviewer's judgement of that fact applies again.
    observed_as: str | None = None


class CandidateHeld(Body):
    type: Literal["CandidateHeld"] = "CandidateHeld"
    hold_id: str
    reason: str
    candidate: StoredCandidate
    registry_sha256: str = ""
    cause: int | None = None
    restates: int | None = None


class SessionIngested(Body):
    type: Literal["SessionIngested"] = "SessionIngested"
    session: str
    watermark: str
    watermark_at: Timestamp | None = None
    events_read: int
    counts: dict[str, int] = {}
    extractor: str
    model: str | None = None
    prompt_sha256: str | None = None
    digest: str | None = None
    registry_sha256: str = ""
    event_ids: list[str] | None = None     # the ids read, when what is new is decided by id (ADK)
    cause: int | None = None
    restates: int | None = None


class IngestFailed(Body):
    type: Literal["IngestFailed"] = "IngestFailed"
    session: str
    error: str
    extractor: str
    model: str | None = None
    source: str | None = None
    attempts: int = 1
    cause: int | None = None
    restates: int | None = None


class Redacted(Body):
    """A right-to-forget or retention action.  No personal content: a scope hash, never the id.

    It lives in the partition `(app, "_erasures")` (`_all` for a retention run across apps), so
    it never carries a user id and survives the erasure of the partition it scrubbed.
    `session_hashes` / `fact_hashes` name what was forgotten whole (see `ledger/forget/scope.py`), so a
    forgotten session can be refused later and a repeated request is a no-op, not an error.
    """

    type: Literal["Redacted"] = "Redacted"
    scope_kind: Literal["user", "session", "fact", "predicate", "sensitivity", "retention"]
    scope_hash: str
    reason: str
    requester: str
    target_seqs: list[int]
    counts: dict[str, int] = {}
    session_hashes: list[str] = []
    fact_hashes: list[str] = []
    partitions: int = 1
    ticket: str | None = None             # an external reference (a case number), no personal data
    restated_seqs: list[int] = []         # of target_seqs, the surviving ones recorded again after it
    # sessions a fact-wide scope took every remaining event of, without forgetting them as sessions:
    # a later `forget --session` of one is a no-op (already erased), and ingestion still accepts it
    emptied_session_hashes: list[str] = []
    event_hashes: list[str] | None = None   # session events read by id (ADK) and erased with it


class CheckpointIssued(Body):
    """A tree head of the log's Merkle tree, published: what `factledger checkpoint` printed.

    Ledger-wide, so it lives in the partition `("_all", "_checkpoints")`: no app's and no person's
    (a forget never scrubs it, and it holds only hashes).  It covers the events before it
    (`tree_size` = its own seq - 1); `note` is the C2SP checkpoint exactly as printed, signed or
    not.
    """

    type: Literal["CheckpointIssued"] = "CheckpointIssued"
    origin: str
    tree_size: int
    root_hash: str                         # hex; the note carries it in base64
    note: str
    key_name: str | None = None
    key_id: str | None = None


Surface = Literal["library", "adk", "mcp", "web", "cli"]      # where a serve left the ledger


class ServedFact(BaseModel):
    """One fact a serve handed out: its id, the partition it came from when that is not the
    serve's own (a `_domain` fact), the seqs of the events that had established its value by
    then, and what the text said of it that the log alone does not (`unconfirmed`: not confirmed
    since, `ask`: ask the user to confirm; both worked out from the clock at the serve)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    fact_id: str
    seqs: list[int] = []
    user: str | None = None
    unconfirmed: bool = False
    ask: bool = False


class FactsServed(Body):
    """A serve: text holding facts handed to a model or a person (docs/audit.md, "What the agent
    was shown").  It lives in the partition served (`user`; `users` lists every partition read,
    `_domain` included), so a forget of that user finds it.  No value and no quote: the facts by
    id, the text by its sha256, the query by a keyed hash (`query` in clear only where the
    deployment opts in).  `head_seq` is the log's head the read saw, so `served show` can
    re-render the text from the log as it stood.  A forget of a served fact records it again
    without `text_sha256`, `query_sha256` and `query` (`cause`, `restates`)."""

    type: Literal["FactsServed"] = "FactsServed"
    users: list[str]
    caller: str
    surface: Surface
    tool: str = "recall"                   # what was served: recall | facts | history | why | page
    clearance: str
    facts: list[ServedFact] = []
    held: list[str] | None = None          # held candidates a review page showed, by hold id
    withheld: dict[str, int] = {}
    limit: int | None = None               # the recall limit the block's withheld line names
    text_sha256: str | None = None
    query_sha256: str | None = None
    query: str | None = None
    head_seq: int
    served_at: Timestamp                   # when the text left (a copy a forget records keeps it)
    cause: int | None = None
    restates: int | None = None


EventBody = Annotated[
    FactObserved | FactReinforced | FactSuperseded | FactDisputed | FactRetracted | FactNegated
    | DisputeResolved | FactReinstated | FactSplit | MeaningChecked
    | CandidateRejected | CandidateHeld | SessionIngested | IngestFailed
    | Redacted | CheckpointIssued | FactsServed,
    Field(discriminator="type"),
]
# The type names, in the union's order, read from it: one list to keep; and each one's model.
MODELS: dict[str, type[Body]] = {
    name: member for member in get_args(get_args(EventBody)[0])
    for name in get_args(member.model_fields["type"].annotation)
}
EVENT_TYPES: tuple[str, ...] = tuple(MODELS)
# The names as attributes, so that every other module writes `EVENT.FactObserved`, never the string:
# a misspelt type is an AttributeError where it is written, not a query that silently finds nothing.
EVENT = SimpleNamespace(**{name: name for name in EVENT_TYPES})
event_adapter: TypeAdapter = TypeAdapter(EventBody, config=ConfigDict(defer_build=True))   # as Body


def parse_body(data: dict) -> Body:
    """Validate a stored body against the catalogue (for import and verification, not replay)."""
    return event_adapter.validate_python(data)
