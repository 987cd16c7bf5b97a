"""An event as everything downstream of the store reads it, and the one decoder of a stored row.

The store writes rows; the projections, the rebuild, the log and the export read them.  They all
decode through `decode` so a stored row means the same thing to every reader.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import NamedTuple

import orjson

from factledger.ledger.domain.events import EVENT

# The envelope and the body, in the order `decode` takes them.
EVENT_COLUMNS = "seq, event_id, type, app, user, recorded_at, body"
# The statements that close a review-queue item when they carry its `hold_id` (a reviewer's
# accept, or their rejection).  Every other event of the accept's decision (`FactNegated`) carries
# the hold too, for `why` and a forget, but the item closes with the statement.
CLOSES_HOLD = (EVENT.FactObserved, EVENT.FactReinforced, EVENT.FactRetracted, EVENT.CandidateRejected)


@dataclass(frozen=True)
class Event:
    """An event as the fold sees it: envelope plus the decoded body (None once redacted)."""

    seq: int
    event_id: str
    type: str
    app: str
    user: str
    recorded_at: str
    body: dict | None


def decode(row) -> Event:
    """A row selected as `EVENT_COLUMNS` (a tuple or a sqlite3.Row) as an `Event`."""
    seq, event_id, type_, app, user, recorded_at, body = row
    return Event(seq, event_id, type_, app, user, recorded_at, body_of(body))


def body_of(stored: str | bytes | None) -> dict | None:
    """A stored body column as the dict it holds; None once redacted (the column is NULL)."""
    return orjson.loads(stored) if stored is not None else None


# An `Event` as a plain tuple, for a rebuild that decodes every row of the log (a frozen dataclass
# costs a `__setattr__` a field to build): the same fields, read the same way.
EventTuple = NamedTuple("EventTuple", [(f.name, f.type) for f in fields(Event)])


def partitions_of(rows) -> Iterator[list[EventTuple]]:
    """Rows selected as `EVENT_COLUMNS` in `(app, user, seq)` order, decoded, one list a partition."""
    new, loads = tuple.__new__, orjson.loads
    events: list = []
    app = user = None
    for seq, event_id, type_, row_app, row_user, recorded_at, body in rows:
        if row_user != user or row_app != app:
            if events:
                yield events
            events, app, user = [], row_app, row_user
        events.append(new(EventTuple, (seq, event_id, type_, row_app, row_user, recorded_at,
                                       None if body is None else loads(body))))
    if events:
        yield events
