"""The store's boundary: what the rest of the ledger needs from a database backend.

Two backends implement it, SQLite (a file) and PostgreSQL (a `postgresql://` URL), each behind an
`Engine` that `ledger/store/engines.py` picks from the location; both return the same
`EventStore` on a connection that speaks the store's SQL, and the contract suites
(`tests/store/contract.py`, `tests/ledger/contract.py`) run on both.  A backend brings the
transaction discipline (one writer with the tail read under the lock; one consistent snapshot
for reads), the append-only guard, and runs the projections' one SQL text (PostgreSQL through
`ledger/store/postgres/dialect.py`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from factledger.ledger.domain.eventrow import Event
from factledger.ledger.domain.events import Body
from factledger.ledger.vocabulary.clock import Clock


class ProjectionTables(Protocol):
    """What making a schema whole needs from the projections (`projections.runner.Projector`):
    their DDL, the tables it makes and the indexes this version dropped.  Passed in, so the store
    below the projections never imports them."""

    schema: str
    all_tables: tuple[str, ...]
    obsolete_indexes: tuple[str, ...]


class EventLog(Protocol):
    """The append-only, hash-chained log and the transaction boundary around it."""

    conn: Any                      # the DB-API connection the projections and the reads share
    schema: str                    # the log's own DDL (idempotent)

    def transaction(self, partitions=None) -> AbstractContextManager[EventLog]:
        """One writer at a time (of these (app, user) partitions, where the engine locks them, and
        in the chain's one order); every event appended inside commits together or not at all."""

    def append(self, body: Body | dict) -> Event:
        """Append one event inside `transaction()`: canonical body, salt, commitment, link (a
        dict: the body as `ledger.domain.dumped` built it, already validated)."""

    def buffered(self) -> AbstractContextManager[None]:
        """Hold the rows appended inside and write them with one statement when it ends."""

    def closing(self) -> None:
        """Inside `transaction()`, before its closing writes: the engine may send them and the
        COMMIT together (PostgreSQL's pipeline)."""

    def write_pending(self) -> None:
        """Write what `buffered()` holds now (before a read of the log's new rows)."""

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


class Engine(Protocol):
    """One database engine, everything the ledger needs from it in particular
    (`ledger/store/sqlite/engine.py`, `ledger/store/postgres/engine.py`); `ledger/store/engines.py`
    picks one from a location.  Nothing above the store tests which engine it has."""

    kind: str                      # the engine as reports name it ("sqlite", "postgresql")
    name: str                      # for people
    server: bool                   # a server's database (by URL), not a file of this machine

    def describe(self, location: str | os.PathLike, conn: Any = None) -> str:
        """The location for messages (no password), with what the open connection adds."""

    def prepare(self, location: str | os.PathLike, create: bool) -> list[str]:
        """Before opening: refuse what must not be opened; notes on what was tightened."""

    def open(self, location: str | os.PathLike, clock: Clock, busy_timeout: float = 5.0,
             synchronous: str = "FULL", create: bool = True, read_only: bool = False) -> EventLog:
        """Connect and return the log on the connection (`read_only`: one that cannot write)."""

    def scan_reader(self, location: str | os.PathLike, clock: Clock) -> EventLog:
        """A read-only log for a process that reads much of it while another process holds the
        write lock and keeps it still (a replay worker, `projections/parallel.py`): `open(...,
        read_only=True)`, tuned for reading far and wide."""

    def attach(self, store: EventLog, location: str | os.PathLike, synchronous: str,
               read_only: bool = False) -> Any:
        """What the open log needs beside it (SQLite: its WAL checkpointer), or None."""

    def ensure_schema(self, store: EventLog, projector: ProjectionTables, clock: Clock,
                      mode: str = "write") -> tuple[bool, list[str]]:
        """Make the schema whole: (refold, report of what was restored).  `mode` "read": change
        nothing and report what differs; "repair": also put back what is altered."""

    def schema_problems(self, store: EventLog, projector: ProjectionTables) -> list[str]:
        """Each table, index and guard missing or altered now, and each object the ledger did not create."""

    def foreign_objects(self, store: EventLog, projector: ProjectionTables) -> list[str]:
        """Each table, index, trigger, view (or rule, function) the ledger did not create, in words."""

    def attach_live(self, conn: Any, fresh: Any) -> bool:
        """Attach the open ledger read-only to an in-memory SQLite database as `live`, if it can."""

    def same_rows(self, fresh: Any, table: str) -> bool:
        """Whether `live.table` holds exactly `main.table`'s rows (after `attach_live`)."""

    def integrity_check(self, conn: Any) -> Any:
        """The engine's check of the log's storage, started now; `.result()` is a problem or None."""

    def guard_problems(self, conn: Any) -> list[str]:
        """Each append-only guard missing or altered now, and each repair recorded."""

    def purge(self, conn: Any, vacuum: bool | None = None, tables: tuple[str, ...] = (),
              checkpointer: Any = None, partitions: tuple[tuple[str, str], ...] | None = None) -> dict:
        """After a forget's commit: make the scrub physical; the receipt's `purge`.  `vacuum`:
        None is the engine's default, True the most it can do, False the least.  `partitions`:
        the (app, user) partitions the forget changed (None: not known, all of the ledger), so an
        engine that keeps partitions apart need only clean those."""

    def after_rebuild(self, conn: Any, tables: tuple[str, ...], jobs: int = 1) -> None:
        """After a full replay's commit: tidy what rewriting every row of `tables` left (the
        engine's dead row versions), so the next reads and the next forget do not pay for it;
        with up to `jobs` processes, as the replay folded with (`replay --jobs N`)."""

    def image_loader(self, conn: Any) -> AbstractContextManager[Callable[[bytes, Sequence[str]], None]]:
        """Within a transaction on `conn`: a function that writes the named tables' rows of a
        serialized SQLite database (a parallel replay's folded share) into `conn`'s tables, in
        the image's row order (`ledger/store/images.py`)."""

    def residue(self, conn: Any, location: str) -> dict:
        """Where copies of forgotten bytes may still be: `places` (and the engine's `settings`)."""

    def standby(self, conn: Any) -> dict | None:
        """How far a read-only replica has replayed its primary's log, or None where `conn` is
        not on one (a primary, a file)."""
        ...

    def holds(self, location: str | os.PathLike) -> bool:
        """Whether the location exists yet (SQLite: the file; PostgreSQL: the schema), before a
        command that may create it; `remove` undoes only what such a command created."""

    def owned_paths(self, location: str | os.PathLike, conn: Any = None) -> list[str]:
        """The files and folders of this machine that hold the ledger's data (SQLite: the file
        and its -wal, -shm, -journal; PostgreSQL: the data directory and tablespaces, when the
        open `conn` may read where they are): no output file may be written over them."""

    def remove(self, location: str | os.PathLike) -> None:
        """Remove a location a failed command just created (SQLite: the file and its -wal, -shm,
        -journal; PostgreSQL: the schema, with what was put in it), leaving nothing behind."""


class Backend(Protocol):
    """Opens an `EventLog` on a location (a file path for SQLite, a DSN for a server)."""

    def __call__(self, location: str | os.PathLike, clock: Clock, busy_timeout: float = 5.0,
                 synchronous: str = "FULL") -> EventLog: ...
