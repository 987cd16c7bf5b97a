"""Each thing spelt once: event types, rule names and reserved partitions (issue 26, item 7)."""

from __future__ import annotations

from typing import get_args

from factledger.ledger.domain import events
from factledger.ledger.domain.events import EVENT_TYPES, EventBody


def test_event_types_are_the_unions_types():
    members = get_args(get_args(EventBody)[0])
    assert EVENT_TYPES == tuple(m.model_fields["type"].default for m in members)
    # every concrete body model of the module is in the union, and nothing else
    models = {name for name, obj in vars(events).items() if isinstance(obj, type)
              and issubclass(obj, events.Body) and "type" in obj.model_fields}
    assert set(EVENT_TYPES) == models
    assert len(set(EVENT_TYPES)) == len(EVENT_TYPES)
