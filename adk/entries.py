"""Facts out as google-adk `MemoryEntry`s, and `MemoryEntry`s in as candidates.

Out: google-adk's load-memory tool hands whole entries to the model (the content *and*
`custom_metadata`, serialised as the tool's answer), so everything in an entry is text a model
reads.  The content is the recall block's line for the fact; every string in the metadata goes
through the same renderer (`render.literal`: a plain word stays bare, anything else becomes an
escaped quoted string with no line break, tag or control character in it).  Numbers stay numbers.

In: `add_memory` entries become candidates for the validator and the decision table.  A field a
caller sets in `custom_metadata` is checked for its type here, strictly: `negated: "false"` is a
string, not a boolean, and is refused rather than guessed at (`booleans.strict_bool`).
"""

from __future__ import annotations

import hashlib

from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from factledger.adk.errors import InvalidMemory
from factledger.adk.partition import caller_id, unescape
from factledger.ledger.domain.candidate import MAX_QUOTE, MAX_VALUE, Candidate, make_candidate
from factledger.ledger.errors import InvalidId, LedgerError
from factledger.ledger.recall import render
from factledger.ledger.service import FACT_FIELDS
from factledger.ledger.vocabulary.booleans import strict_bool
from factledger.ledger.vocabulary.words import AUTHORS

UNREVIEWED_PREDICATE = "adk_memory_note"   # not in any registry: such entries are held for review
PROVENANCE_FIELDS = tuple(f for f in FACT_FIELDS if f not in ("app", "user", "effective_date")) + (
    "relevance", "recency", "score", "unconfirmed_since", "ask_to_confirm")


def safe(value):
    """A metadata value as the model may read it: strings rendered, numbers and None kept."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [safe(v) for v in value]
    return render.literal(str(value))


def metadata(fact: dict) -> dict:
    shown = dict(fact)
    if isinstance(shown.get("session"), str):
        shown["session"] = unescape(shown["session"])      # the caller's own session id
    return {k: safe(shown.get(k)) for k in PROVENANCE_FIELDS}


def memory_entries(facts: list[dict]) -> list[MemoryEntry]:
    """One entry per fact; a disputed fact's text shows every side of the conflict."""
    by_id = {f["fact_id"]: f for f in facts}
    out = []
    for fact in facts:
        partners = [by_id[d] for d in fact.get("disputes") or () if d in by_id]
        text = render.line([fact, *partners]).removeprefix("- ")
        out.append(MemoryEntry(
            id=fact["fact_id"], author="memory", timestamp=fact["said_at"],
            content=types.Content(role="user", parts=[types.Part(text=render.ENTRY_PREFIX + text)]),
            custom_metadata=metadata(fact)))
    return out


WITHHELD_ID = "withheld"


def withheld_entry(withheld: dict[str, int], limit: int | None) -> MemoryEntry:
    """The entry that tells the model facts were kept back, how many and why (never their
    values), so an answer without them is not taken for a record that is silent.  Its id names
    no fact (`delete_memory` of it finds nothing); `custom_metadata` holds the counts by reason."""
    return MemoryEntry(
        id=WITHHELD_ID, author="memory",
        content=types.Content(role="user", parts=[types.Part(text=render.withheld_line(withheld, limit))]),
        custom_metadata={"fact_id": None, "predicate": None, "withheld": dict(withheld)})


def candidate(app: str, user: str, entry: MemoryEntry, shared: dict, now: str) -> Candidate:
    """One entry as a candidate; `app` and `user` are partition names already."""
    meta = {**shared, **(entry.custom_metadata or {})}
    text = " ".join(p.text for p in (entry.content.parts or []) if p.text) if entry.content else ""
    value = meta.get("value")
    if value is None:
        value = " ".join(text.split())[:MAX_VALUE]
    if not isinstance(value, str) or not value.strip():
        raise InvalidMemory("a memory entry needs text, or a custom_metadata value that is text")
    # surrogatepass: text that is not valid Unicode is refused below, in the words of its field
    digest = hashlib.sha256(f"{entry.id}|{text}|{sorted(map(str, meta.items()))}".encode(
        "utf-8", "surrogatepass")).hexdigest()[:16]
    author = entry.author if entry.author in AUTHORS else ("agent" if entry.author else "user")
    basis = meta.get("basis") or ("verified" if author == "document" else
                                  "stated" if author == "user" else "inferred")
    session = meta.get("session")
    try:
        return make_candidate(
            app=app, user=user, subject=meta.get("subject") or "user",
            predicate=meta.get("predicate") or UNREVIEWED_PREDICATE, value=value,
            quote=str(meta.get("quote") or text or value)[:MAX_QUOTE],
            session=caller_id(session, "custom_metadata.session") if session is not None
            else f"_adk_memory_{digest}",
            evidence_event=str(meta.get("evidence_event") or entry.id or f"adk-memory-{digest}"),
            said_at=entry.timestamp or now, author=author, basis=basis,
            negated=strict_bool(meta.get("negated"), "custom_metadata.negated", default=False),
            confidence=meta.get("confidence"), effective_date=meta.get("effective_date"),
            kind=meta.get("kind"), sensitivity=meta.get("sensitivity"))
    except (InvalidMemory, InvalidId):
        raise
    except LedgerError as exc:
        raise InvalidMemory(f"memory entry {render.literal(entry.id or '')}: {exc}") from None
