"""Folds of one partition's events that an action reads instead of a projection row, kept.

Ingestion's forgotten-session check, its watermark and the ADK service's erased event ids act on
what the receipts and the ingestions recorded; a projection row is any writer's to delete, so
these read the log (each body checked against its commitment) and compare the projection's answer
with it (`projections.erasures`, `projections.sessions`).  A fold is kept per partition with the
(seq, chain hash) of the last event it read: the log is append-only and the hash chains every
event before it, so the next read folds only what was appended since, and a different log (a
rolled-back write, another file) shows as a hash that is not there.  `guards` are partitions whose
movement means the folded bodies may have changed (a receipt: a forget scrubbed events): the fold
then starts again.  Only hashes, ids and seqs are kept, never a value.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from factledger.ledger.store.reads import (
    hash_at,
    hashes_at,
    partition_events_after,
    partition_mark,
    partition_marks,
    partitions_events_after,
)

# Kept folds, the least recently used dropped first: a batch of the bench's writes touches about
# a thousand partitions, each folded twice (the two negation types), and comes back to a user ten
# batches later, so the bound holds some tens of thousands (each a mark, a guard and a few digests).
MAX_KEPT = 32_768
_LOCK = threading.Lock()
_KEPT: dict[tuple, tuple] = {}


def _keep(key: tuple, value: tuple) -> None:
    """Keep one fold (under `_LOCK`), dropping the least recently kept past `MAX_KEPT`."""
    _KEPT.pop(key, None)
    _KEPT[key] = value
    if len(_KEPT) > MAX_KEPT:
        del _KEPT[next(iter(_KEPT))]


def folded(conn, name: str, app: str, user: str, type_: str, table: str, empty: Callable[[], object],
           step: Callable[[object, object], None], copy: Callable[[object], object],
           guards: tuple[tuple[str, str], ...] = ()):
    """The state `step(state, event)` folds from the partition's `type_` events (bodies checked)."""
    mark = partition_mark(conn, app, user)
    guarded = tuple(partition_mark(conn, a, u) for a, u in guards)
    key = (name, app, user)
    with _LOCK:
        kept = _KEPT.get(key)
    after, state = 0, None
    if kept is not None:
        kept_mark, kept_guards, kept_state = kept
        if kept_guards == guarded and kept_mark == mark:
            return kept_state
        if kept_guards == guarded and kept_mark is not None and mark is not None and mark[0] > kept_mark[0] \
                and hash_at(conn, kept_mark[0]) == kept_mark[1]:
            after, state = kept_mark[0], copy(kept_state)
    if state is None:
        state = empty()
    if mark is not None:
        for event in partition_events_after(conn, app, user, after, type_, table):
            step(state, event)
    with _LOCK:
        _keep(key, (mark, guarded, state))
    return state


def forget_kept() -> None:
    """Drop every kept fold (after a forget: no forgotten session id stays in memory)."""
    with _LOCK:
        _KEPT.clear()


def folded_many(conn, name: str, partitions: list[tuple[str, str]], type_: str, table: str,
                empty: Callable[[], object], step: Callable[[object, object], None],
                copy: Callable[[object], object], guards: Callable[[str], tuple[tuple[str, str], ...]],
                marks: dict | None = None) -> dict[tuple[str, str], object]:
    """`folded` for many partitions in a few statements (a batch's keys): the marks of all of
    them and of their guards (`guards(app)`) in one read per `MARKS` partitions, the events each
    stale fold lacks in one more, their bodies checked as `folded` checks them.  The same states
    and the same kept folds as one `folded` call per partition.  `marks`: those partitions' and
    guards' marks, when the caller read them (`partition_marks`) for several folds."""
    wanted = list(dict.fromkeys(partitions))
    guard_of = {app: guards(app) for app in dict.fromkeys(a for a, _u in wanted)}
    if marks is None:
        marks = partition_marks(conn, list(dict.fromkeys([*wanted, *(g for gs in guard_of.values() for g in gs)])))
    out: dict[tuple[str, str], object] = {}
    stale: list[tuple[tuple[str, str], int, object, tuple]] = []
    behind: list[tuple[tuple[str, str], tuple, tuple, object]] = []    # kept, the partition moved on
    for app, user in wanted:
        mark = marks.get((app, user))
        guarded = tuple(marks.get(g) for g in guard_of[app])
        with _LOCK:
            kept = _KEPT.get((name, app, user))
        if kept is not None:
            kept_mark, kept_guards, kept_state = kept
            if kept_guards == guarded and kept_mark == mark:
                out[(app, user)] = kept_state
                with _LOCK:
                    _keep((name, app, user), kept)
                continue
            if kept_guards == guarded and kept_mark is not None and mark is not None and mark[0] > kept_mark[0]:
                behind.append(((app, user), mark, guarded, kept))
                continue
        stale.append(((app, user), 0, empty(), (mark, guarded)))
    # the chain hash at each kept fold's last seq, for all of them in one read per `MARKS`: the
    # same hash, the fold goes on from there; another (a rolled-back write, another file), afresh
    hashes = hashes_at(conn, [kept[0][0] for _p, _m, _g, kept in behind]) if behind else {}
    for partition, mark, guarded, (kept_mark, _g, kept_state) in behind:
        if hashes.get(kept_mark[0]) == kept_mark[1]:
            stale.append((partition, kept_mark[0], copy(kept_state), (mark, guarded)))
        else:
            stale.append((partition, 0, empty(), (mark, guarded)))
    reading = [(p, after) for p, after, _state, (mark, _g) in stale if mark is not None]
    events = partitions_events_after(conn, reading, type_, table) if reading else {}
    for partition, _after, state, (mark, guarded) in stale:
        for event in events.get(partition, ()):
            step(state, event)
        out[partition] = state
        with _LOCK:
            _keep((name, *partition), (mark, guarded, state))
    return out
