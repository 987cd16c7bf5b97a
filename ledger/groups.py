"""The ledger's grouped reads: what the shells ask beside the supported API (docs/api.md), kept
off `Ledger`'s own names.  `ledger.erased` (what erasures left), `ledger.serves` (the serve
record), `ledger.notices` (why an answer is empty), `ledger.lookup` (one fact, key or session, as
pages and tools need it).  Each method calls the ledger's private one of the same name."""

from __future__ import annotations

from factledger.ledger.store.errors import storage_errors_at_the_door


def _through(name: str):
    def call(self, *args, **kwargs):
        return getattr(self._ledger, "_" + name)(*args, **kwargs)
    call.__name__ = call.__qualname__ = name
    return call


class _Group:
    names: tuple[str, ...] = ()

    def __init__(self, ledger):
        self._ledger = ledger

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in cls.names:
            setattr(cls, name, _through(name))


@storage_errors_at_the_door
class Erased(_Group):
    """What erasures left: receipts by subject, ticket or fact, forgotten ids, reinstatements."""
    names = ("already_erased_at", "erased_event_ids", "fact_erasure", "is_forgotten_fact", "is_forgotten_session",
             "is_forgotten_user", "receipt_seqs", "receipt_tickets", "reinstatements", "session_erased_until")


@storage_errors_at_the_door
class Serves(_Group):
    """The serve record: recording a serve, and reading what was served."""
    names = ("record_recall", "record_recalls", "record_serve", "served_counts", "served_fact_classes", "served_show")


@storage_errors_at_the_door
class Notices(_Group):
    """Why an answer is empty: an unknown partition or session, a time before the first event."""
    names = ("partition_notice", "session_notice", "first_recorded_at", "key_kind", "meaning_index")


@storage_errors_at_the_door
class Lookup(_Group):
    """One fact, key, session or partition, as a page or a tool needs it; clearance masks."""
    names = ("fact_interval", "fact_observed_in", "fact_relations", "fact_sensitivity", "key_current",
             "disputed_by_key", "held_class", "cleared_why", "clearance_mask", "session_ingestions",
             "session_state", "user_sessions", "ingest_queue", "partition_summaries", "open_disputes")
