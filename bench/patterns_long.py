"""`python -m bench.patterns_long [KB]`: the patterns extractor on one long user message.

One user turn of about KB kilobytes in which every clause names an allergy, so the extractor
finds thousands of matches in one message and must find the sentence around each.  Finding each
sentence used to rescan the message from its start (quadratic: 54 KB with 3,000 matches took
26 s); it is now a binary search over sentence ends found once.  Prints seconds and matches.
"""

from __future__ import annotations

import sys
import time

from factledger.ledger.ingest.extractor import Context
from factledger.ledger.ingest.patterns import PatternsExtractor
from factledger.ledger.ingest.session import Session, SessionEvent, tail
from factledger.ledger.registry.predicates import load_registry


def _word(n: int) -> str:
    letters = ""
    for _ in range(4):
        n, r = divmod(n, 26)
        letters += chr(ord("a") + r)
    return letters


def long_message(kilobytes: int) -> str:
    """Sentences without full stops, each naming a different allergen (no two de-duplicate)."""
    parts, size, n = [], 0, 0
    while size < kilobytes * 1024:
        part = f"I'm allergic to {_word(n)} and "
        parts.append(part)
        size += len(part)
        n += 1
    return "".join(parts)


def main(kilobytes: int = 144) -> None:
    text = long_message(kilobytes)
    session = Session(id="s", app="a", user="u", events=(
        SessionEvent(id="e1", author="user", said_at="2026-01-01T00:00:00.000000Z", text=text),))
    context = Context("a", "u", load_registry())
    started = time.perf_counter()
    found = PatternsExtractor().extract(tail(session, None), context).proposals
    seconds = time.perf_counter() - started
    allergy = context.registry.predicates["allergy"]
    matches = sum(1 for rule in allergy.rules for _ in rule.finditer(text))
    print(f"patterns extractor, one {kilobytes} KB user message, {matches} matches: "
          f"{seconds:.3f} s ({len(found)} proposals after de-duplication)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 144)
