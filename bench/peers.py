"""Peers, measured when installed: the `eventsourcing` library's SQLite application recorder.

It appends the same events as the ledger, in the same batches, as `StoredEvent`s: one aggregate
per fact (its `fact_id`; a partition-level id for rejections and holds), versions counted up,
the orjson body as state.  Serialising the body is inside the timed region, as it is for the raw
baseline; working out originator ids and versions is not (an application would hold them in its
aggregates).  The google-adk peer needs ingestion and lives in `bench/adk.py`.
"""

from __future__ import annotations

import time
import uuid

import orjson

_PARTITION_NS = uuid.UUID("6f1c1d2e-8d1a-4c2b-9a57-5b7f0c3e9a10")


class EventsourcingPeer:
    name = "eventsourcing"

    def __init__(self, path: str):
        from eventsourcing.persistence import StoredEvent
        from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore

        self._stored_event = StoredEvent
        self.datastore = SQLiteDatastore(str(path))
        self.recorder = SQLiteApplicationRecorder(self.datastore)
        self.recorder.create_table()
        self.versions: dict[uuid.UUID, int] = {}

    def insert(self, events: list[tuple[str, str, str, dict]]) -> float:
        plan = []
        for type_, app, user, body in events:
            fact_id = body.get("fact_id")
            oid = uuid.UUID(fact_id) if fact_id else uuid.uuid5(_PARTITION_NS, f"{app}\x00{user}")
            version = self.versions.get(oid, 0) + 1
            self.versions[oid] = version
            plan.append((oid, version, f"factledger.events:{type_}", body))
        make, dumps, sort = self._stored_event, orjson.dumps, orjson.OPT_SORT_KEYS
        t0 = time.perf_counter()
        stored = [make(originator_id=oid, originator_version=version, topic=topic,
                       state=dumps(body, option=sort)) for oid, version, topic, body in plan]
        self.recorder.insert_events(stored)
        return time.perf_counter() - t0

    def close(self) -> None:
        self.datastore.close()


def eventsourcing_peer(path: str):
    """The peer, or (None, reason) when the library is not installed."""
    try:
        return EventsourcingPeer(path), None
    except ImportError as exc:
        return None, f"eventsourcing is not installed ({exc}); pip install 'factledger[bench]'"
