"""A key's state as `decide` reads it, gathered in one place for the live ledger and re-decision.

`decide` reads three things of a key: its open facts (a `keyindex.KeyView`), its past (the closed
facts that held it, read only for a late statement) and the negations of a value it has heard.
The live ledger reads them from the open transaction (`StoredKey`: the facts fold's batch and
`key_negations`); re-decision from the key folded in memory (`ledger.forget.redecide.KeyFold`,
seeded from `StoredPartition`).  Both are a `KeyState`, and `decide_key` is the one call that
asks the dedup question and the table with it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Protocol

from factledger.ledger.domain.candidate import Candidate
from factledger.ledger.domain.decide import Decision, Negation, OpenFact, decide
from factledger.ledger.registry.predicates import PredicateSpec
from factledger.ledger.semantic.dedup import UNCHECKED, key_matrix, restated_by
from factledger.ledger.store.reads import statement_bodies
from factledger.projections import vectors
from factledger.projections.current import KEY_SNAPSHOTS
from factledger.projections.factstate import decode
from factledger.projections.history import KEY_PAST
from factledger.projections.keyindex import KeyView
from factledger.projections.negations import key_negations


class KeyState(Protocol):
    """What `decide` reads of one key."""

    def view(self) -> KeyView:
        """Its open facts, in key order, by value."""

    def past(self) -> Iterable[OpenFact]:
        """Its closed facts that held it, in said order (may be lazy: read only when iterated)."""

    def negations(self, wanted: str) -> list[Negation]:
        """The negations of one value (by value key) the key has heard."""


def decide_key(candidate: Candidate, spec: PredicateSpec, key: KeyState,
               stored_vectors: Callable[[], tuple]) -> Decision:
    """Decide `candidate` on `key`: first does it only restate an open value in other words
    (`ledger.semantic.dedup.restated_by`; `stored_vectors()`: the key's stored vectors, as
    `key_matrix` gives them), then the table."""
    view = key.view()
    restates = restated_by(candidate, spec, view, stored_vectors)
    decision = decide(candidate, view, spec, restates, past=key.past(), negations=key.negations)
    if restates[1] == UNCHECKED and decision.action == "insert":
        return replace(decision, unchecked=True)      # the new fact's meaning check is owed
    return decision


class StoredKey:
    """A key as the open transaction has it: the facts fold's batch (`key_view`, `key_past` of the
    projector) and the negations it keeps, each value's read once."""

    def __init__(self, projector, conn: sqlite3.Connection, app: str, user: str, subject: str,
                 predicate: str) -> None:
        self._projector, self._conn = projector, conn
        self._key = (app, user, subject, predicate)
        self._heard: dict[str, list[Negation]] = {}

    def view(self) -> KeyView:
        return self._projector.key_view(self._conn, *self._key)

    def past(self) -> Iterable[OpenFact]:
        return self._projector.key_past(self._conn, *self._key)

    def negations(self, wanted: str) -> list[Negation]:
        if wanted not in self._heard:
            self._heard[wanted] = self._projector.negations_of(self._conn, *self._key, wanted)
        return self._heard[wanted]


class StoredPartition:
    """A partition's keys as stored (projections flushed): what re-decision seeds a key's fold
    with (`ledger.forget.restate`), and where it appends."""

    def __init__(self, conn: sqlite3.Connection, app: str, user: str, append: Callable) -> None:
        self._conn, self.app, self.user = conn, app, user
        self.append = append

    def key_snapshots(self, subject: str, predicate: str) -> list[dict]:
        """The key's open facts in stored order, then its closed ones that held it."""
        args = (self.app, self.user, subject, predicate)
        return [decode(row) for sql in (KEY_SNAPSHOTS, KEY_PAST) for row in self._conn.execute(sql, args)]

    def key_negations(self, subject: str, predicate: str) -> list[tuple[str, Negation]]:
        return key_negations(self._conn, self.app, self.user, subject, predicate)

    def key_vectors(self, predicate: str) -> tuple:
        return key_matrix(vectors.key_vectors(self._conn, self.app, self.user, predicate))

    def statements(self, seqs: list[int]) -> dict[int, dict]:
        return statement_bodies(self._conn, seqs)
