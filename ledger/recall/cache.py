"""What recall keeps between calls about a scope: its rows, and what is derived from them once.

Why keep anything: at a thousand open facts per user, a call spent most of its time reading the
same thin rows again, cutting and counting the same documents for TF-IDF, and decoding the same
vector BLOBs, none of which changes until the ledger does.  So a scope's rows, its lexical index
(per clearance and registry) and its meaning matrix (per encoder and registry) are kept, keyed by
the ledger (its first event's hash: the same for every connection to one ledger file, different
for any other ledger) and the log's head (seq and hash, read inside the call's read transaction).

Why this is safe:
- every change to what recall reads is an append (an observation, a review decision, a forget's
  `Redacted` event, another process's write), so it changes the head, and the first call that
  sees a new head for a ledger drops everything kept for that ledger; the hashes make a key mean
  one log, so a file recreated at the same ledger is never mistaken for the old one;
- an entry is kept only when the projections' position equals the head (inside a write whose
  projections are not flushed yet, the rows are read and used once, not kept);
- a forget in this process drops everything at once (`forget_cached`, with the text index's
  memo), so no forgotten fact's text or vector stays in this process's memory; another
  process's forget drops it here at this process's next recall on that ledger;
- an empty ledger and a recall `--as-of` are not kept;
- at most `MAX_SCOPES` scopes are kept, least recently used dropped first.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict

from factledger.ledger.store.reads import FIRST_HASH, LAST_HASH, LAST_SEQ
from factledger.projections import recall as recall_reads
from factledger.projections.runner import FOLDED_TO

MAX_SCOPES = 8
_MISSING = object()


class ScopeMemo:
    """One scope's rows and what has been derived from them (`derived`), for as long as the head
    they were read at is the ledger's head."""

    def __init__(self, rows: list[tuple]):
        self.rows = rows
        self._derived: dict = {}
        self._lock = threading.Lock()

    def derived(self, key, build):
        """The value kept under `key`, built by `build()` the first time it is asked for."""
        value = self._derived.get(key, _MISSING)
        if value is _MISSING:
            value = build()
            with self._lock:
                self._derived.setdefault(key, value)
        return value


_KEPT: OrderedDict[tuple, ScopeMemo] = OrderedDict()
_HEADS: dict[str, tuple] = {}            # ledger -> the head its kept scopes were read at
_LOCK = threading.Lock()


# What a scope's rows are kept under, in one statement (recall reads it on every call): the ledger
# (its first event's hash), the log's head (seq and hash), and how far the projections have folded.
_KEY = f"SELECT {FIRST_HASH}, {LAST_SEQ}, {LAST_HASH}, {FOLDED_TO}"


def _key(conn: sqlite3.Connection) -> tuple[str, int, str, int]:
    """An empty log gives ('', 0, '', position)."""
    first, seq, hash_, position = conn.execute(_KEY).fetchone()
    return first or "", seq or 0, hash_ or "", -1 if position is None else position


def scope(conn: sqlite3.Connection, app: str, users: list[str], as_of: str | None = None) -> ScopeMemo:
    """The scope's rows (`projections.recall.scope_rows`), kept or read now; call inside the read
    transaction the recall runs in."""
    if as_of is not None:
        return ScopeMemo(recall_reads.scope_rows(conn, app, users, as_of))
    ledger, seq, hash_, position = _key(conn)
    if not ledger or position != seq:
        return ScopeMemo(recall_reads.scope_rows(conn, app, users))
    now_head = (seq, hash_)
    key = (ledger, now_head, app, tuple(users))
    with _LOCK:
        if _HEADS.get(ledger) != now_head:
            _drop_ledger(ledger)
            _HEADS[ledger] = now_head
        memo = _KEPT.get(key)
        if memo is not None:
            _KEPT.move_to_end(key)
            return memo
    memo = ScopeMemo(recall_reads.scope_rows(conn, app, users))
    with _LOCK:
        if _HEADS.get(ledger) == now_head:
            memo = _KEPT.setdefault(key, memo)
            _KEPT.move_to_end(key)
            while len(_KEPT) > MAX_SCOPES:
                _KEPT.popitem(last=False)
            if len(_HEADS) > 4 * MAX_SCOPES:
                kept = {k[0] for k in _KEPT}
                for other in [k for k in _HEADS if k not in kept]:
                    del _HEADS[other]
    return memo


def _drop_ledger(ledger: str) -> None:
    for key in [k for k in _KEPT if k[0] == ledger]:
        del _KEPT[key]


def forget_cached() -> None:
    """Drop everything kept: a forget must leave no fact's text or vector in this process."""
    with _LOCK:
        _KEPT.clear()
        _HEADS.clear()
