"""What recall keeps between calls about a scope: its rows, and what is derived from them once.

Why: at a thousand facts a call spent most of its time re-reading the same rows, re-counting
TF-IDF and decoding the same vectors.  So a scope's rows, lexical index and meaning matrix are
kept, keyed by the ledger (its first event's hash) and the log's head.  Why it is safe: every
change recall could see is an append, which moves the head, and the first call at a new head
drops what was kept; only a flushed position is kept; what is kept is the ledger's (`KeptScopes`),
dropped whole by its forget; a serve record (`advance`) changes nothing recall reads; at most
`MAX_SCOPES` scopes, least recently used dropped first.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict

from factledger.ledger.domain.textindex import TextMemo
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


# What a scope's rows are kept under, in one statement (recall reads it on every call): the ledger
# (its first event's hash), the log's head (seq and hash), and how far the projections have folded.
_KEY = f"SELECT {FIRST_HASH}, {LAST_SEQ}, {LAST_HASH}, {FOLDED_TO}"


def _key(conn: sqlite3.Connection) -> tuple[str, int, str, int]:
    """An empty log gives ('', 0, '', position)."""
    first, seq, hash_, position = conn.execute(_KEY).fetchone()
    return first or "", seq or 0, hash_ or "", -1 if position is None else position


class KeptScopes:
    """What one ledger (its `UnitOfWork`) keeps for recall: at most `MAX_SCOPES` scopes, least
    recently used dropped first.  Held by the ledger, not the process: two ledgers in one process
    keep apart, and a forget in one drops only what that one kept."""

    def __init__(self) -> None:
        self.texts = TextMemo()                   # the text index's memo (ledger/domain/textindex.py)
        self._kept: OrderedDict[tuple, ScopeMemo] = OrderedDict()
        self._heads: dict[str, tuple] = {}        # ledger -> the head its kept scopes were read at
        self._lock = threading.Lock()

    def scope(self, conn: sqlite3.Connection, app: str, users: list[str], as_of: str | None = None) -> ScopeMemo:
        """The scope's rows (`projections.recall.scope_rows`), kept or read now; call inside the
        read transaction the recall runs in."""
        if as_of is not None:
            return ScopeMemo(recall_reads.scope_rows(conn, app, users, as_of))
        ledger, seq, hash_, position = _key(conn)
        if not ledger or position != seq:
            return ScopeMemo(recall_reads.scope_rows(conn, app, users))
        now_head = (seq, hash_)
        key = (ledger, now_head, app, tuple(users))
        kept, heads = self._kept, self._heads
        with self._lock:
            if heads.get(ledger) != now_head:
                self._drop_ledger(ledger)
                heads[ledger] = now_head
            memo = kept.get(key)
            if memo is not None:
                kept.move_to_end(key)
                return memo
        memo = ScopeMemo(recall_reads.scope_rows(conn, app, users))
        with self._lock:
            if heads.get(ledger) == now_head:
                memo = kept.setdefault(key, memo)
                kept.move_to_end(key)
                while len(kept) > MAX_SCOPES:
                    kept.popitem(last=False)
                if len(heads) > 4 * MAX_SCOPES:
                    known = {k[0] for k in kept}
                    for other in [k for k in heads if k not in known]:
                        del heads[other]
        return memo

    def advance(self, conn: sqlite3.Connection, before: tuple[int, str], appended: int = 1) -> None:
        """This ledger has just appended `appended` events that change nothing recall reads (serve
        records: ledger/audit/access.py) on the head `before`: what was kept at `before` is kept at
        the head after them, if that is still the head and folded; else nothing is carried over."""
        ledger, seq, hash_, position = _key(conn)
        if not ledger or position != seq or seq != before[0] + appended:
            return
        with self._lock:
            if self._heads.get(ledger) != before:
                return
            self._heads[ledger] = (seq, hash_)
            for key in [k for k in self._kept if k[0] == ledger and k[1] == before]:
                self._kept[(ledger, (seq, hash_), *key[2:])] = self._kept.pop(key)

    def _drop_ledger(self, ledger: str) -> None:
        for key in [k for k in self._kept if k[0] == ledger]:
            del self._kept[key]

    def memos(self) -> list[ScopeMemo]:
        """What is kept now (for tests)."""
        with self._lock:
            return list(self._kept.values())

    def forget(self) -> None:
        """Drop everything kept, the text index's memo included: a forget must leave no fact's
        text or vector in this ledger's memory."""
        with self._lock:
            self._kept.clear()
            self._heads.clear()
            self.texts.clear()
