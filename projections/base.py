"""What every projection is: tables, a fold over events, and a way to clear itself.

A projection is a read model anyone can browse (plain tables); it can be thrown away and rebuilt
from the log at any time, for the whole ledger or for one `(app, user)` partition.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from factledger.ledger.domain.eventrow import Event
from factledger.projections.factstate import Snapshot

# The key of a rebuild's shared partition state under which the facts fold leaves the partition's
# open facts at its end (fact_id -> Snapshot), for the projections that follow it.
OPEN_FACTS = "open_facts"
# ... and under this one a dict that lasts the whole rebuild, for what a projection works out once
# per rebuild rather than once per partition (whether meaning is on).
REBUILD = "rebuild"


@runtime_checkable
class Projection(Protocol):
    """What the projector calls on every projection.  One applied event by event may also name
    the event types its `apply` acts on (`event_types`, a frozenset): the live fold then hands
    it only events of those types, and a rebuild skips it for a partition that holds none of
    them, so the set must name every type `apply` acts on
    (tests/projections/test_projection_protocol.py)."""

    name: str
    tables: tuple[str, ...]        # tables this projection owns, each with app and user columns
    schema: str                    # CREATE statements
    depends_on: tuple[str, ...]    # projections whose flushed state this one reads (folded first)

    def apply(self, conn: sqlite3.Connection, event: Event) -> None: ...


@runtime_checkable
class BufferedProjection(Protocol):
    """What a `Projection` adds when it holds what events change until the projector flushes it (after each
    event, or once at the end of a batched transaction), and folds a rebuild's partition in
    memory, writing its rows through `executemany` (the projector's row buffer)."""

    def flush(self, conn: sqlite3.Connection) -> None: ...

    def discard(self) -> None: ...

    def rebuild_partition(self, conn, events: list[Event], state: dict) -> None: ...


@runtime_checkable
class WholeLogRebuild(Protocol):
    """What a `BufferedProjection` adds when a full rebuild on SQLite can write its rows from the
    log with one statement in the same database (the rows depend on each event alone): the
    projector then calls `rebuild_whole` once instead of `rebuild_partition` per partition."""

    def rebuild_whole(self, conn: sqlite3.Connection, upto: int) -> None: ...


@runtime_checkable
class LogWideProjection(Protocol):
    """A projection over the whole log in seq order (the Merkle tree): folded live with the rest,
    flushed and discarded with them, rebuilt only whole, never cleared per partition."""

    name: str
    tables: tuple[str, ...]
    schema: str
    depends_on: tuple[str, ...]
    log_wide: bool

    def apply(self, conn: sqlite3.Connection, event: Event) -> None: ...

    def flush(self, conn: sqlite3.Connection) -> None: ...

    def discard(self) -> None: ...

    def rebuild(self, conn: sqlite3.Connection, source: sqlite3.Connection | None = None,
                upto: int | None = None) -> int: ...


@runtime_checkable
class KeyReader(Protocol):
    """The projection the decision table reads a key's open facts from (the facts projection)."""

    def key_view(self, conn: sqlite3.Connection, app: str, user: str, subject: str, predicate: str,
                 check=None):
        """The key's open facts as the open transaction has them (a `projections.keyindex.KeyView`);
        `check(conn, key, stored facts, stored open ids)` vets the stored rows before they are used."""

    def minted(self, conn: sqlite3.Connection, fact_id: str) -> None:
        """A fact id minted in the open transaction (no table holds it: nothing to look up)."""

    def prefetch_keys(self, conn: sqlite3.Connection, keys, check=None) -> None:
        """Read the open facts of these keys now, in a few statements (a batch's keys up front),
        each key's stored rows vetted by `check` as `key_view`'s are."""

    def key_past(self, conn: sqlite3.Connection, app: str, user: str, subject: str, predicate: str,
                 check=None):
        """The key's closed facts that held it for a while, as the open transaction has them
        (a lazy iterable of `ledger.decide.OpenFact`; decide reads it only for a late statement);
        `check(conn, key, stored facts, stored past ids, ids changed here)` vets the stored rows."""


@runtime_checkable
class FactsFold(Protocol):
    """What a projection that follows the facts fold reads of it: the facts its last flush
    changed, each as its snapshot now and whether it was open before (live), and, in a rebuild,
    the partition's open facts left in `state[OPEN_FACTS]` by its `rebuild_partition`."""

    name: str
    flushed: list[tuple[Snapshot, bool]]


@runtime_checkable
class FollowsFacts(Protocol):
    """A projection kept from what the facts fold flushes (the recall index, the meaning vectors),
    never from reading `facts_current` back: it is handed that fold, and names it in `depends_on`."""

    facts: FactsFold


def check_order(projections: Iterable[Projection]) -> None:
    """Each projection comes after the ones it depends on (they fold and flush first), and one that
    follows the facts fold was handed the very fold this set runs before it."""
    seen: dict[str, object] = {}
    for projection in projections:
        missing = [name for name in projection.depends_on if name not in seen]
        if missing:
            raise ValueError(f"projection {projection.name} must come after {', '.join(missing)}")
        if isinstance(projection, FollowsFacts) and seen.get(projection.facts.name) is not projection.facts:
            raise ValueError(f"projection {projection.name} follows a facts fold this projector does not run")
        seen[projection.name] = projection


def clear(conn: sqlite3.Connection, projection: Projection, app: str | None = None,
          user: str | None = None) -> None:
    for table in projection.tables:
        if app is None:
            conn.execute(f"DELETE FROM {table}")
        else:
            conn.execute(f"DELETE FROM {table} WHERE app = ? AND user = ?", (app, user))
