"""The store's boundary: what the rest of the ledger needs from a database backend.

SQLite is the one backend today (`ledger/store.py: EventStore`, opened by `open_sqlite`).  A
second one (PostgreSQL is planned) implements `EventLog` and a `Backend` that opens it, and runs
the contract suite in `tests/store_contract.py` (`tests/test_store_contract.py` lists the
backends it runs against).  What a second backend also brings, beside the log itself:

- the transaction discipline: `transaction()` is one writer at a time with the tail read under
  the lock (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: a transaction holding an advisory lock), and
  `snapshot()` is one consistent read (SQLite: a deferred read transaction in WAL; PostgreSQL:
  `REPEATABLE READ`);
- the append-only guard (SQLite: triggers, `ledger/triggers.py`; PostgreSQL: a rule or a
  trigger and a role without DELETE or UPDATE);
- the projections' SQL: each projection owns its DDL (`schema`) and its statements, written in
  the subset both backends share (`?` placeholders become the driver's, `INSERT OR REPLACE`
  becomes `ON CONFLICT DO UPDATE`); `docs/decisions.md` lists what is SQLite-only today.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol

from .eventrow import Event
from .events import Body
from .timeutil import Clock


class EventLog(Protocol):
    """The append-only, hash-chained log and the transaction boundary around it."""

    conn: Any                      # the DB-API connection the projections and the reads share
    schema: str                    # the log's own DDL (idempotent)

    def transaction(self) -> AbstractContextManager[EventLog]:
        """One writer at a time; every event appended inside commits together or not at all."""

    def append(self, body: Body) -> Event:
        """Append one event inside `transaction()`: canonical body, salt, commitment, link."""

    @property
    def last_seq(self) -> int:
        """Seq of the last event appended in the open transaction (0 outside one)."""

    def head(self) -> tuple[int, str]:
        """(seq, hash) of the last event; (0, GENESIS) for an empty log."""

    def events(self, app: str | None = None, user: str | None = None, after: int = 0) -> Iterator[Event]:
        """The log (or one partition of it) in seq order, streamed."""

    def snapshot(self) -> AbstractContextManager[None]:
        """One consistent read of several statements."""

    def on_append(self, callback: Callable[[Event], None]) -> None: ...

    def on_commit(self, callback: Callable[[], None]) -> None: ...

    def before_begin(self, callback: Callable[[], None]) -> None: ...


class Backend(Protocol):
    """Opens an `EventLog` on a location (a file path for SQLite, a DSN for a server)."""

    def __call__(self, location: str | os.PathLike, clock: Clock, busy_timeout: float = 5.0,
                 synchronous: str = "FULL") -> EventLog: ...
