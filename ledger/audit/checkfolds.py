"""The write path's key checks, their folds of the log kept across transactions.

Before a batch decides, every stored open fact of its keys is compared with the log's fold of
that fact (`served.check_keys_rows`).  Folding every fact's events again in every transaction
cost a batch a share that grew with a fact's statements, so a fact's fold is kept, with the seqs
of the events it folded (the fact's and those of the facts a dispute or a split links in) and the
chain hash at the last of them.  A later check reads only which seqs after the last one kept
touch those facts now (`fact_events`, an index read, no bodies), after `guard` found the chain
hash at the last event any kept fold read where it was: only those events are read, checked
against their commitments and folded on; a new event that links in another fact folds the fact
afresh.  So another connection's appends are seen, a rolled-back or replaced log shows as a hash
that is not there, and a forget (a receipt in the app's or every app's erasure partition) drops
them all.  What a kept fold cannot see is a body edited in place under an unchanged seq: `verify`
finds that by the chain, as for the reads' kept folds (docs/decisions.md).  Each key's last
check is kept too (below, "the keys' checks kept"): a later batch compares only the rows whose
fact the log touched since or whose digest moved, so a projection row forged after a check was
kept is still caught.
"""

from __future__ import annotations

import threading
from itertools import islice

from factledger.ledger.audit.served import _EVENTS_HASHED as _EVENTS
from factledger.ledger.audit.served import _TOUCHED_ALL as _TOUCHED
from factledger.ledger.audit.served import CHUNK, MAX_LINKED, _event, _marks, _named, links_in
from factledger.ledger.store.reads import hash_at, partition_marks, partitions_bodies_from
from factledger.ledger.vocabulary.words import ALL_APPS, ERASURES_USER
from factledger.projections.factbatch import _RECORDED_TO, FactBatch
from factledger.projections.history import HISTORY_COLUMNS

MAX_CHECK_KEPT = 32_768     # facts whose folds one ledger keeps (the least recently checked go first)
MAX_KEYS_KEPT = 32_768      # keys whose last check one ledger keeps (the least recently checked go first)
KEEP_KEYS = True            # whether keys' checks are kept at all (docs/performance.md measures both)

_FACT_ID = HISTORY_COLUMNS.index("fact_id")


class _Fold:
    """One checked fact's fold: the facts it folded (`ids`), the seqs of their events and the last
    of them, and the fold's state (the facts' snapshots and intervals, `FactBatch.snaps` and
    `.rows`; held bare, not as a `FactBatch`, so that tens of thousands of them stay light)."""

    __slots__ = ("ids", "seqs", "last", "snaps", "rows")

    def __init__(self, ids: set[str], seqs: set[int], batch: FactBatch) -> None:
        self.ids, self.seqs, self.last = ids, seqs, max(seqs)
        self.snaps, self.rows = batch.snaps, batch.rows

    def intervals(self, fact_id: str, open_only: bool = False) -> list[dict]:
        return [dict(zip(HISTORY_COLUMNS, row)) for row in self.rows
                if row[_FACT_ID] == fact_id and not (open_only and row[_RECORDED_TO] is not None)]

    def fold_on(self, events: list) -> None:
        """Fold these events (all after `last`) on from the kept state, as one `FactBatch.fold`
        of every event would have."""
        batch = FactBatch()
        batch.snaps, batch.rows = self.snaps, self.rows
        for row in self.rows:              # a fact's last interval is its open row, the one before it closed
            fact_id = row[_FACT_ID]
            previous = batch.open_rows.get(fact_id)
            if previous is not None:
                batch.closed[fact_id] = previous
            batch.open_rows[fact_id] = row
        batch.fold(events)
        self.seqs.update(e.seq for e in events)
        self.last = max(self.seqs)


class CheckFolds:
    """One ledger's kept folds for its write path's key checks (see the module docstring)."""

    def __init__(self, limit: int = MAX_CHECK_KEPT) -> None:
        self.limit = limit
        self.folds: dict[str, _Fold] = {}            # fact id -> its fold, least recently used first
        self.guards: dict[tuple[str, str], tuple | None] = {}   # erasure partition -> its mark then
        # (seq, chain hash) of the last event any kept fold read: the hash there chains every
        # event before it, so the same hash says the log under every kept fold is the one folded
        # (a rolled-back write or another file shows as a hash that is not there)
        self.mark: tuple[int, str] | None = None
        self.keys: dict[tuple, _KeyState] = {}       # key -> its last check, least recently used first
        self.links: dict[str, set[str]] | None = None   # filled by `intervals` while a check keeps keys
        self.lock = threading.Lock()

    def clear(self) -> None:
        """Drop every kept fold (a forget, a replay: no forgotten value stays in memory)."""
        with self.lock:
            self.folds.clear()
            self.guards.clear()
            self.keys.clear()
            self.mark = None

    def guard(self, conn, apps) -> None:
        """Drop every kept fold if an erasure partition of these apps (or of every app) moved since
        the folds were kept (a forget, by any connection, may have scrubbed the bodies folded), or
        the log no longer holds the last event they read."""
        wanted = list(dict.fromkeys([(ALL_APPS, ERASURES_USER), *((app, ERASURES_USER) for app in apps)]))
        marks = partition_marks(conn, wanted)
        with self.lock:
            mark = self.mark
        moved = mark is not None and hash_at(conn, mark[0]) != mark[1]
        with self.lock:
            if moved or any(p in self.guards and self.guards[p] != marks.get(p) for p in wanted):
                self.folds.clear()
                self.guards.clear()
                self.keys.clear()
                self.mark = None
            for p in wanted:
                self.guards[p] = marks.get(p)

    def plan_keys(self, conn, items: list, past: list) -> KeyPlan:
        """`plan_keys` (below): which of a batch's keys a kept check carries on."""
        return plan_keys(self, conn, items, past)

    def keep_key(self, key: tuple, mark, open_: tuple[str, ...], past: tuple[str, ...], deps: tuple[str, ...],
                 links: dict[str, tuple[str, ...]], rows: dict[str, bytes]) -> None:
        """Keep one key's check (once the batch's check passed)."""
        with self.lock:
            self.keys.pop(key, None)
            self.keys[key] = _KeyState(mark, open_, past, deps, links, rows)
            excess = len(self.keys) - MAX_KEYS_KEPT
            if excess > 0:
                for old in list(islice(self.keys, excess)):
                    del self.keys[old]

    def intervals(self, conn, ids: list[str], table: str, open_only: bool = False) -> dict[str, list[dict]]:
        """fact id -> its intervals as the log gives them (`served._expected`'s), from the kept
        folds where the log has not moved under them, else folded (and kept).  Only after
        `guard` in the same transaction.  `open_only`: only its open intervals (a fact the log
        holds with none open maps to an empty list)."""
        with self.lock:                               # taken out while in use; put back when done
            kept = {f: self.folds.pop(f) for f in ids if f in self.folds}
        afresh = [f for f in ids if f not in kept]
        hashes: dict[int, str] = {}
        if kept:
            afresh += _carry_on(conn, kept, table, hashes)
        if afresh:
            kept.update(_fold_each(conn, afresh, table, hashes))
        with self.lock:
            if self.links is not None:
                self.links.update((f, fold.ids) for f, fold in kept.items())
            for fact_id, fold in kept.items():
                self.folds[fact_id] = fold
            excess = len(self.folds) - self.limit
            if excess > 0:
                for fact_id in list(islice(self.folds, excess)):
                    del self.folds[fact_id]
            if hashes:
                last = max(hashes)
                if self.mark is None or last > self.mark[0]:
                    self.mark = (last, hashes[last])
        return {f: fold.intervals(f, open_only) for f, fold in kept.items()}


def _carry_on(conn, kept: dict[str, _Fold], table: str, hashes: dict[int, str]) -> list[str]:
    """Bring the kept folds up to the log (in place); the fact ids that must be folded afresh
    (taken out of `kept`).  `hashes` hears the chain hash of each event read."""
    # only the seqs after the earliest kept last one: the log under a kept fold is the one it
    # folded (`guard` checked the chain hash at the last event read), so what can have come is
    # later; a fact's old events are not read again however many it has
    last_of: dict[str, int] = {}
    for fold in kept.values():
        for f in fold.ids:
            last_of[f] = min(last_of.get(f, fold.last), fold.last)
    facts = sorted(last_of, key=last_of.__getitem__)
    touching: dict[str, list[int]] = {}
    for start in range(0, len(facts), CHUNK):
        chunk = facts[start:start + CHUNK]
        for fact_id, seq in conn.execute(_TOUCHED + _marks(chunk) + " AND seq > ?",
                                         [*chunk, last_of[chunk[0]]]):
            touching.setdefault(fact_id, []).append(seq)
    afresh: list[str] = []
    new_of: dict[str, list[int]] = {}
    for fact_id, fold in kept.items():
        new = sorted({seq for f in fold.ids for seq in touching.get(f, ()) if seq > fold.last})
        if new:
            new_of[fact_id] = new
    if new_of:
        wanted = sorted({seq for seqs in new_of.values() for seq in seqs})
        events = {}
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start:start + CHUNK]
            for seq, *row, hash_ in conn.execute(_EVENTS + _marks(chunk), chunk):
                events[seq], hashes[seq] = _event(seq, row, table), hash_
        for fact_id, new in new_of.items():
            fold = kept[fact_id]
            if any(seq not in events for seq in new):
                _event(new[0], [None] * 9, table)    # fact_events names an event the log does not hold
            if any(links_in(events[seq], fold.ids) for seq in new):   # a new fact linked in
                afresh.append(fact_id)
                continue
            fold.fold_on([events[seq] for seq in new])
    for fact_id in afresh:
        del kept[fact_id]
    return afresh


def _fold_each(conn, ids: list[str], table: str, hashes: dict[int, str]) -> dict[str, _Fold]:
    """`served._fold` of each fact on its own (its events and those of the facts linked in), in
    the same few statements for all of them; a fact the log gives no event is left out."""
    events: dict[int, object] = {}
    touching: dict[str, list[int]] = {}
    linked = {root: {root} for root in ids}
    wanted = {root: [root] for root in ids}
    while wanted:
        reading = [f for f in dict.fromkeys(f for fs in wanted.values() for f in fs) if f not in touching]
        pairs: list[tuple[str, int]] = []
        for start in range(0, len(reading), CHUNK):
            chunk = reading[start:start + CHUNK]
            pairs += conn.execute(_TOUCHED + _marks(chunk), chunk).fetchall()
        for fact_id in reading:
            touching[fact_id] = []
        for fact_id, seq in pairs:
            touching[fact_id].append(seq)
        seqs = sorted({seq for _f, seq in pairs if seq not in events})
        for start in range(0, len(seqs), CHUNK):
            chunk = seqs[start:start + CHUNK]
            for seq, *row, hash_ in conn.execute(_EVENTS + _marks(chunk), chunk):
                events[seq], hashes[seq] = _event(seq, row, table), hash_
        for seq in seqs:
            if seq not in events:
                _event(seq, [None] * 9, table)       # fact_events names an event the log does not hold
        more: dict[str, list[str]] = {}
        for root, facts in wanted.items():
            seen = linked[root]
            found: list[str] = []
            for fact_id in facts:
                for seq in touching[fact_id]:
                    found += links_in(events[seq], seen)
            found = [f for f in dict.fromkeys(found) if f not in seen]
            if found and len(seen) <= MAX_LINKED:
                seen.update(found)
                more[root] = found
        wanted = more
    out: dict[str, _Fold] = {}
    for root in ids:
        seqs = sorted({seq for f in linked[root] for seq in touching.get(f, ())})
        if not seqs:
            continue
        batch = FactBatch()
        batch.fold(events[seq] for seq in seqs)
        if any(row[_FACT_ID] == root for row in batch.rows):
            out[root] = _Fold(linked[root], set(seqs), batch)
    return out


# --- the keys' checks kept --------------------------------------------------------------------
# A batch's check of a key compared every stored fact it read (its open facts and its past) with
# the log's fold of that fact, and read the key's intervals and its partition's fact ids to find
# the facts the log holds on the key: the whole key, every batch.  So what a check found is kept
# per key (`_KeyState`): the partition's mark then, the facts the log holds open and closed on
# the key (`open`, `past`), the facts whose events can change the key (`deps`: every fact filed
# under it or named in its partition with no row, and those a dispute, rewording or split links
# in: `links`), and a digest of each row read (every column).  A later batch reads the rows as
# before (the decision needs them), then the partition's events after the kept mark (the log
# itself, the kept event's hash checked: another connection's writes are seen, a moved log is
# not trusted).  The facts those events touch on the key (an event touches it when it names its
# subject and predicate, as the observation that puts a fact on a key does, or a fact of `deps`;
# with it every fact of the key whose fold links one it names) are folded and put in the key's
# sets as the log now says; every row whose fact was touched or whose digest moved is compared
# with its fold; the rows' ids must be the sets'.  A row forged after the check was kept has
# another digest and is compared; a row put back as it was when kept, after the log moved its
# fact, is compared too (the fact was touched).  An event with no body (a redaction), a forget or
# a replay drops the kept keys.


class _KeyState:
    """One key's last check (see above).  Tuples and dicts of strings and bytes, which the
    garbage collector stops tracking: tens of thousands of kept keys cost it nothing."""

    __slots__ = ("mark", "open", "past", "deps", "links", "rows")

    def __init__(self, mark, open_: tuple[str, ...], past: tuple[str, ...], deps: tuple[str, ...],
                 links: dict[str, tuple[str, ...]], rows: dict[str, bytes]) -> None:
        self.mark, self.open, self.past, self.deps, self.links, self.rows = mark, open_, past, deps, links, rows


class KeyPlan:
    """A batch's keys split in two: those a kept check carries on (`kept`: key -> its state, and
    `touched`: key -> the facts the log touched since), and the rest, checked in full."""

    def __init__(self) -> None:
        self.keep = False
        self.marks: dict[tuple[str, str], tuple[int, str]] = {}
        self.kept: dict[tuple, _KeyState] = {}
        self.touched: dict[tuple, set[str]] = {}


def _touching(body: dict | None, key: tuple, deps: set[str], links: dict[str, tuple[str, ...]]) -> set[str] | None:
    """The facts of a key an event touches (empty: none), or None if it cannot tell (no body)."""
    if body is None:
        return None
    named = set(_named(body))
    if not (body.get("subject") == key[2] and body.get("predicate") == key[3]) and not named & deps:
        return set()
    return named | {f for f, linked in links.items() if not named.isdisjoint(linked)}


def plan_keys(folds: CheckFolds, conn, items: list, past: list) -> KeyPlan:
    """Which of a batch's keys (`served.check_keys_rows`'s `items` and `past`) a kept check
    carries on.  Only for a fresh read (every key's past read with it, nothing changed yet in
    the transaction: what was read is what is stored)."""
    plan = KeyPlan()
    changed_of = {key: changed for key, _facts, _ids, changed in past}
    if not KEEP_KEYS or not items or any(changed_of.get(key, True) for key, _facts, _ids in items):
        return plan
    plan.keep = True
    keys = [key for key, _facts, _ids in items]
    plan.marks = partition_marks(conn, list(dict.fromkeys(key[:2] for key in keys)))
    with folds.lock:
        states = {key: folds.keys.pop(key) for key in keys if key in folds.keys}
    moved: dict[tuple[str, str], int] = {}
    for key, state in states.items():
        now = plan.marks.get(key[:2])
        if now is not None and now != state.mark:
            moved[key[:2]] = min(moved.get(key[:2], state.mark[0]), state.mark[0])
    events = partitions_bodies_from(conn, list(moved.items())) if moved else {}
    for key, state in states.items():
        now = plan.marks.get(key[:2])
        if now is None:
            continue
        touched: set[str] | None = set()
        if now != state.mark:
            after = events.get(key[:2], [])
            if next((h for seq, h, _body in after if seq == state.mark[0]), None) != state.mark[1]:
                continue                    # the log under the kept check is not the one now
            deps = set(state.deps)
            for seq, _h, body in after:
                found = _touching(body, key, deps, state.links) if seq > state.mark[0] else set()
                if found is None:
                    touched = None
                    break
                touched |= found
        if touched is not None:
            plan.kept[key] = state
            plan.touched[key] = touched
    return plan
