"""Which events of a google-adk session are new: decided by event id, never by timestamp.

google-adk lets an application add a session many times and send deltas in any grouping, so a
watermark is not enough: a re-sent event with a later timestamp would be read again, and a deleted
fact could come back.  An event is *seen* when an earlier ingestion listed its id; *erased* when
its session or user was forgotten after it was read (the erasure keeps a hash of each id) or
after it was said (the erasure's time is the cut: one clock for app and ledger, docs/adk.md);
everything else is new, in session order, and erased ids stay erased when re-sent.
"""

from __future__ import annotations

from factledger.ledger.ingest.session import Delta, Session
from factledger.ledger.service import Ledger


def seen_ids(ledger: Ledger, app: str, user: str, session: Session) -> set[str]:
    """Ids of this session's events that a surviving ingestion already read."""
    seen: set[str] = set()
    order = [e.id for e in session.events]
    for body in ledger.lookup.session_ingestions(app, user, session.id):
        if body.get("event_ids") is not None:
            seen.update(body["event_ids"])
        elif body["watermark"] in order:               # written without ids: up to its watermark
            seen.update(order[:order.index(body["watermark"]) + 1])
        elif body.get("watermark_at"):
            seen.update(e.id for e in session.events if e.said_at <= body["watermark_at"])
    return seen


def new_events(ledger: Ledger, session: Session, app: str, user: str) -> Delta:
    """The delta to extract: events neither seen nor erased; `read_ids` names all it accounts for."""
    seen = seen_ids(ledger, app, user, session)
    cut = ledger.erased.session_erased_until(app, user, session.id)
    erased = (ledger.erased.erased_event_ids(app, user, session.id, [e.id for e in session.events])
              if cut is not None else set())
    whole = [e for e in session.events if not e.partial]
    settled = {e.id for e in whole
               if e.id in seen or e.id in erased or (cut is not None and e.said_at <= cut)}
    fresh = [e for e in whole if e.id not in settled]
    return Delta(session=session, events=tuple(e for e in fresh if e.renderable), read=len(fresh),
                 watermark=fresh[-1] if fresh else None, previous=None,
                 earlier_ids=frozenset(settled),
                 read_ids=tuple(e.id for e in whole if e.id not in seen))
