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

from factledger.ledger.store.reads import hash_at, partition_mark, partitions_events_after

MAX_KEPT = 1024
_LOCK = threading.Lock()
_KEPT: dict[tuple, tuple] = {}


def folded(conn, name: str, app: str, user: str, type_: str, table: str, empty: Callable[[], object],
           step: Callable[[object, object], None], copy: Callable[[object], object],
           guards: tuple[tuple[str, str], ...] = ()):
    """The state `step(state, event)` folds from the partition's `type_` events (bodies checked)."""
    marks = {(app, user): (partition_mark(conn, app, user), tuple(partition_mark(conn, a, u) for a, u in guards))}
    return folded_many(conn, name, marks, type_, table, empty, step, copy)[(app, user)]


def folded_many(conn, name: str, marks: dict[tuple[str, str], tuple], type_: str | tuple[str, ...], table: str,
                empty: Callable[[], object], step: Callable[[object, object], None],
                copy: Callable[[object], object]) -> dict[tuple[str, str], object]:
    """`folded` for many partitions, each given as (app, user) -> (its mark, its guards' marks) as
    the caller read them in this transaction (`reads.partition_marks`): what each partition
    appended since its kept fold is read in one statement per few hundred partitions.  `type_` may
    name several types (folded together, in seq order)."""
    states: dict[tuple[str, str], object] = {}
    owed: dict[tuple[str, str], tuple] = {}
    for (app, user), (mark, guarded) in marks.items():
        with _LOCK:
            kept = _KEPT.get((name, app, user))
        after, state = 0, None
        if kept is not None:
            kept_mark, kept_guards, kept_state = kept
            if kept_guards == guarded and kept_mark == mark:
                states[(app, user)] = kept_state
                continue
            if kept_guards == guarded and kept_mark is not None and mark is not None and mark[0] > kept_mark[0] \
                    and hash_at(conn, kept_mark[0]) == kept_mark[1]:
                after, state = kept_mark[0], copy(kept_state)
        owed[(app, user)] = (after, empty() if state is None else state, mark, guarded)
    appended = partitions_events_after(conn, [(app, user, after) for (app, user), (after, _s, mark, _g) in owed.items()
                                              if mark is not None], type_, table)
    for partition, (_after, state, mark, guarded) in owed.items():
        for event in appended.get(partition, ()):
            step(state, event)
        states[partition] = state
        with _LOCK:
            if len(_KEPT) >= MAX_KEPT:
                _KEPT.clear()
            _KEPT[(name, *partition)] = (mark, guarded, state)
    return states


def forget_kept() -> None:
    """Drop every kept fold (after a forget: no forgotten session id stays in memory)."""
    with _LOCK:
        _KEPT.clear()
