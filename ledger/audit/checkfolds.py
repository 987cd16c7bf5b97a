"""The write path's key checks, their folds of the log kept across transactions.

Before a batch decides, every stored open fact of its keys is compared with the log's fold of
that fact (`served.check_keys_rows`).  Folding every fact's events again in every transaction
cost a batch a share that grew with a fact's statements, so a fact's fold is kept, with the seqs
of the events it folded (the fact's and those of the facts a dispute or a split links in) and the
chain hash at the last of them.  A later check reads only which seqs touch those facts now
(`fact_events`, an index read, no bodies) and the chain hashes at the kept last seqs: the same
seqs, the fold is the log's; more, all after the last one kept, only those events are read,
checked against their commitments and folded on; anything else (a seq gone or earlier, a hash
that moved, a new event that links in another fact) folds the fact afresh.  So another
connection's appends are seen, a rolled-back or replaced log shows as a hash that is not there,
and a forget (a receipt in the app's or every app's erasure partition) drops them all.  What a
kept fold cannot see is a body edited in place under an unchanged seq: `verify` finds that by the
chain, as for the reads' kept folds (docs/decisions.md).  The row compared is always the one
read now: a projection row forged after a fold was kept is still caught.
"""

from __future__ import annotations

import threading
from itertools import islice

from factledger.ledger.audit.served import _EVENTS, _TOUCHED, MAX_LINKED, _by_leaf, _event, _lookup
from factledger.ledger.domain.events import EVENT
from factledger.ledger.store.reads import hash_at, partition_marks
from factledger.ledger.vocabulary.words import ALL_APPS, ERASURES_USER
from factledger.projections.factbatch import FactBatch
from factledger.projections.history import HISTORY_COLUMNS

MAX_CHECK_KEPT = 32_768     # facts whose folds one ledger keeps (the least recently checked go first)

_FACT_ID = HISTORY_COLUMNS.index("fact_id")
# each event with its chain hash (what the kept folds are checked against)
_EVENTS_HASHED = _EVENTS.replace(" FROM {table}", ", hash FROM {table}")
_LINKING = (EVENT.FactDisputed, EVENT.MeaningChecked, EVENT.FactSplit)


class _Fold:
    """One checked fact's fold: the facts it folded (`ids`), the seqs of their events and the last
    of them, and the fold's state (the facts' snapshots and intervals, `FactBatch.snaps` and
    `.rows`; held bare, not as a `FactBatch`, so that tens of thousands of them stay light)."""

    __slots__ = ("ids", "seqs", "last", "snaps", "rows")

    def __init__(self, ids: set[str], seqs: set[int], batch: FactBatch) -> None:
        self.ids, self.seqs, self.last = ids, seqs, max(seqs)
        self.snaps, self.rows = batch.snaps, batch.rows

    def intervals(self, fact_id: str) -> list[dict]:
        return [dict(zip(HISTORY_COLUMNS, row)) for row in self.rows if row[_FACT_ID] == fact_id]

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
        self.lock = threading.Lock()

    def clear(self) -> None:
        """Drop every kept fold (a forget, a replay: no forgotten value stays in memory)."""
        with self.lock:
            self.folds.clear()
            self.guards.clear()
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
                self.mark = None
            for p in wanted:
                self.guards[p] = marks.get(p)

    def intervals(self, conn, ids: list[str], table: str,
                  where: dict[str, tuple[str, str]] | None = None) -> dict[str, list[dict]]:
        """fact id -> its intervals as the log gives them (`served._expected`'s), from the kept
        folds where the log has not moved under them, else folded (and kept).  Only after
        `guard` in the same transaction.  `where`: fact id -> its (app, user), which names its
        leaf on a partitioned PostgreSQL ledger (`_Reads`)."""
        with self.lock:                               # taken out while in use; put back when done
            kept = {f: self.folds.pop(f) for f in ids if f in self.folds}
        afresh = [f for f in ids if f not in kept]
        hashes: dict[int, str] = {}
        reads = _Reads(conn, where or {})
        if kept:
            afresh += _carry_on(reads, kept, table, hashes)
        if afresh:
            kept.update(_fold_each(reads, afresh, table, hashes))
        with self.lock:
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
        return {f: fold.intervals(f) for f, fold in kept.items()}


class _Reads:
    """The folds' two lookups: which seqs touch some facts (`fact_events`), and those events with
    their chain hashes.  On a partitioned PostgreSQL ledger, facts of at most `served.LEAF_LOOKUPS`
    known partitions are read from their leaves by name (`fact_events_p3`, then `events_p3` for
    the seqs found there), as the served-fact check reads them: one table planned and probed, not
    eight; a fact with no row in its leaf and a seq its leaf's log lacks are looked up again in
    the whole table, so what is found is what the whole tables give.  Elsewhere, the whole tables."""

    def __init__(self, conn, where: dict[str, tuple[str, str]]) -> None:
        self.conn, self.where = conn, where
        self.leaf_of_seq: dict[int, str] = {}

    def touching(self, facts: list[str]) -> list[tuple[str, int]]:
        pairs: list[tuple[str, int]] = []
        for leaf, ids in _by_leaf(self.conn, facts, self.where).items():
            found = _lookup(self.conn, _TOUCHED, "fact_events", leaf, ids)
            if leaf is not None:
                for _fact_id, seq in found:
                    self.leaf_of_seq[seq] = leaf
                named = {fact_id for fact_id, _seq in found}
                rest = [f for f in ids if f not in named]
                if rest:
                    found = found + _lookup(self.conn, _TOUCHED, "fact_events", None, rest)
            pairs += found
        return [(fact_id, seq) for fact_id, seq in pairs]

    def events(self, seqs: list[int]) -> list[tuple]:
        """(seq, *columns, hash) of each event of `seqs` the log holds."""
        by_leaf: dict[str | None, list[int]] = {}
        for seq in seqs:
            by_leaf.setdefault(self.leaf_of_seq.get(seq), []).append(seq)
        rows: list[tuple] = []
        for leaf, wanted in by_leaf.items():
            found = _lookup(self.conn, _EVENTS_HASHED, "events", leaf, wanted)
            if leaf is not None and len(found) < len(wanted):
                have = {row[0] for row in found}
                found += _lookup(self.conn, _EVENTS_HASHED, "events", None, [s for s in wanted if s not in have])
            rows += found
        return rows


def _carry_on(reads: _Reads, kept: dict[str, _Fold], table: str, hashes: dict[int, str]) -> list[str]:
    """Bring the kept folds up to the log (in place); the fact ids that must be folded afresh
    (taken out of `kept`).  `hashes` hears the chain hash of each event read."""
    facts = list(dict.fromkeys(f for fold in kept.values() for f in fold.ids))
    touching: dict[str, list[int]] = {}
    for fact_id, seq in reads.touching(facts):
        touching.setdefault(fact_id, []).append(seq)
    afresh: list[str] = []
    new_of: dict[str, list[int]] = {}
    for fact_id, fold in kept.items():
        now = {seq for f in fold.ids for seq in touching.get(f, ())}
        if not fold.seqs <= now:
            afresh.append(fact_id)
            continue
        new = sorted(now - fold.seqs)
        if new and new[0] < fold.last:
            afresh.append(fact_id)
        elif new:
            new_of[fact_id] = new
    if new_of:
        wanted = sorted({seq for seqs in new_of.values() for seq in seqs})
        events = {}
        for seq, *row, hash_ in reads.events(wanted):
            events[seq], hashes[seq] = _event(seq, row, table), hash_
        for fact_id, new in new_of.items():
            fold = kept[fact_id]
            if any(seq not in events for seq in new):
                _event(new[0], [None] * 9, table)    # fact_events names an event the log does not hold
            if any(_links_out(events[seq], fold.ids) for seq in new):
                afresh.append(fact_id)
                continue
            fold.fold_on([events[seq] for seq in new])
    for fact_id in afresh:
        del kept[fact_id]
    return afresh


def _links_out(event, ids: set[str]) -> bool:
    """Whether `served._fold` would link another fact in for this event (a dispute's other
    side, a rewording's, the fact a split cut from)."""
    body = event.body
    if body is None or event.type not in _LINKING:
        return False
    if event.type == EVENT.FactSplit:
        return body.get("split_id") in ids and body.get("fact_id") not in ids
    names = ("fact_id", "disputes") if event.type == EVENT.FactDisputed else ("fact_id", "by_fact_id")
    return any(isinstance(body.get(n), str) and body[n] not in ids for n in names)


def _fold_each(reads: _Reads, ids: list[str], table: str, hashes: dict[int, str]) -> dict[str, _Fold]:
    """`served._fold` of each fact on its own (its events and those of the facts linked in), in
    the same few statements for all of them; a fact the log gives no event is left out."""
    events: dict[int, object] = {}
    touching: dict[str, list[int]] = {}
    linked = {root: {root} for root in ids}
    wanted = {root: [root] for root in ids}
    while wanted:
        reading = [f for f in dict.fromkeys(f for fs in wanted.values() for f in fs) if f not in touching]
        pairs = reads.touching(reading)
        for fact_id in reading:
            touching[fact_id] = []
        for fact_id, seq in pairs:
            touching[fact_id].append(seq)
        seqs = sorted({seq for _f, seq in pairs if seq not in events})
        for seq, *row, hash_ in reads.events(seqs):
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
                    event = events[seq]
                    body = event.body
                    if body is None:
                        continue
                    if event.type == EVENT.FactDisputed:
                        found += [f for f in (body.get("fact_id"), body.get("disputes"))
                                  if isinstance(f, str) and f not in seen]
                    elif event.type == EVENT.MeaningChecked:
                        found += [f for f in (body.get("fact_id"), body.get("by_fact_id"))
                                  if isinstance(f, str) and f not in seen]
                    elif event.type == EVENT.FactSplit and body.get("split_id") in seen \
                            and body.get("fact_id") not in seen:
                        found.append(body["fact_id"])
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
