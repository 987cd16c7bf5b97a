"""The fold for facts: how one event changes the state of the facts it touches.

This is the only place that knows what an event means for a fact.  `transition` takes an event
and a way to look up a fact's latest snapshot, and returns the new snapshots; `fact_history`
records each one as a new interval and `facts_current` keeps the open ones.  It never consults
the decision table: decisions are read from the log, not recomputed.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter

import orjson

from factledger.ledger.domain.candidate import value_key
from factledger.ledger.domain.confidence import BASIS_RANK, reinforced_confidence
from factledger.ledger.domain.eventrow import Event
from factledger.ledger.domain.events import EVENT
from factledger.ledger.vocabulary.words import OPEN_STATUSES, Rule
from factledger.projections.factcolumns import SNAPSHOT_COLUMNS

OPEN_STATES = OPEN_STATUSES
Snapshot = dict
Lookup = Callable[[str], Snapshot | None]

_DISPUTES = SNAPSHOT_COLUMNS.index("disputes")
_SESSIONS = SNAPSHOT_COLUMNS.index("sessions")
_N = len(SNAPSHOT_COLUMNS)
OPEN_FROM = "_open_from"     # a stored snapshot's note of when its open interval began (not a column)


_COLUMNS_OF = itemgetter(*SNAPSHOT_COLUMNS)


def encode(snap: Snapshot) -> list:
    """A snapshot as a row in SNAPSHOT_COLUMNS order, lists as JSON text (plain, browsable columns)."""
    row = list(_COLUMNS_OF(snap))
    disputes = snap["disputes"]
    row[_DISPUTES] = orjson.dumps(disputes).decode() if disputes else "[]"   # most are none
    row[_SESSIONS] = orjson.dumps(snap["sessions"]).decode()
    return row


def decode(row) -> Snapshot:
    """A stored row (SNAPSHOT_COLUMNS, then the open interval's recorded_from) as a snapshot."""
    snap = dict(zip(SNAPSHOT_COLUMNS, row))
    snap["disputes"] = orjson.loads(snap["disputes"])
    snap["sessions"] = orjson.loads(snap["sessions"])
    snap[OPEN_FROM] = row[_N]
    return snap


def transition(event: Event, lookup: Lookup) -> list[tuple[Snapshot, str]]:
    """New snapshots, each with the reason the fact's previous interval ended."""
    body = event.body
    if body is None:
        return []
    handler = _HANDLERS.get(event.type)
    return handler(event, body, _Changes(lookup)) if handler else []


class _Changes:
    """Snapshots touched by one event, so several edits to one fact become one interval."""

    def __init__(self, lookup: Lookup):
        self._lookup = lookup
        self._touched: dict[str, tuple[Snapshot, str]] = {}

    def get(self, fact_id: str) -> Snapshot | None:
        if fact_id in self._touched:
            return self._touched[fact_id][0]
        found = self._lookup(fact_id)
        return dict(found) if found is not None else None

    def put(self, snap: Snapshot, reason: str) -> None:
        previous = self._touched.get(snap["fact_id"])
        self._touched[snap["fact_id"]] = (snap, previous[1] if previous else reason)

    def close(self, fact_id: str, status: str, valid_to: str | None, reason: str) -> None:
        snap = self.get(fact_id)
        if snap is None or snap["status"] not in OPEN_STATES:
            return
        for other in snap["disputes"]:
            self.unlink(other, fact_id, reason)
        snap.update(status=status, valid_to=valid_to, disputes=[])
        self.put(snap, reason)

    def unlink(self, fact_id: str, gone: str, reason: str) -> None:
        snap = self.get(fact_id)
        if snap is not None and gone in snap["disputes"]:
            snap["disputes"] = [d for d in snap["disputes"] if d != gone]
            self.put(snap, reason)

    def result(self) -> list[tuple[Snapshot, str]]:
        return list(self._touched.values())


def statement(body: dict, seq: int) -> list:
    """A fact's note of one statement of it, kept in its `sessions` column: [session, said_at, seq].
    A fact is split on these (`_split`) when a value learnt late was said between two of them."""
    return [body["session"], body["said_at"], seq]


def session_names(entries: list) -> list[str]:
    """The sessions of a fact's statements (its `sessions` column)."""
    return [e[0] for e in entries]


def said_times(entries: list) -> tuple[tuple[str, str, int], ...]:
    """(said_at, session, seq) of each statement of a fact."""
    return tuple((e[1], e[0], e[2]) for e in entries)


def _observed(event: Event, body: dict, changes: _Changes):
    snap = {
        "fact_id": body["fact_id"], "app": body["app"], "user": body["user"],
        "subject": body["subject"], "predicate": body["predicate"], "value": body["value"],
        "value_key": value_key(body["value"]), "status": "current", "basis": body["basis"],
        "base_confidence": body["confidence"], "reinforcements": 0,
        "confidence": body["confidence"], "sensitivity": body["sensitivity"],
        "kind": body["kind"], "cardinality": body["cardinality"], "said_at": body["said_at"],
        "recorded_at": event.recorded_at, "effective_date": body.get("effective_date"),
        "confirmed_at": body["said_at"], "confirmed_by": body["session"],
        "session": body["session"], "evidence_event": body["evidence_event"],
        "quote": body["quote"], "author": body["author"], "disputes": [],
        "sessions": [statement(body, event.seq)], "observed_seq": event.seq, "valid_to": None,
    }
    changes.put(snap, "observed")
    return changes.result()


def _reinforced(event: Event, body: dict, changes: _Changes):
    snap = changes.get(body["fact_id"])
    if snap is None:
        return []
    if BASIS_RANK[body["basis"]] > BASIS_RANK[snap["basis"]]:
        snap["basis"] = body["basis"]
    snap["base_confidence"] = max(snap["base_confidence"], body["confidence"])
    snap["reinforcements"] += 1
    snap["confidence"] = round(reinforced_confidence(snap["base_confidence"], snap["reinforcements"]), 6)
    snap["sessions"] = snap["sessions"] + [statement(body, event.seq)]
    if body["rule"] == Rule.EARLIER_SAME_VALUE and body["said_at"] < snap["said_at"]:
        # a statement learnt late that the value held from earlier: it becomes the first one
        snap.update({k: body[k] for k in ("said_at", "session", "evidence_event", "quote", "author")})
    if body["said_at"] >= snap["confirmed_at"]:
        snap["confirmed_at"] = body["said_at"]
        snap["confirmed_by"] = body["session"]
    changes.put(snap, "reinforced")
    return changes.result()


def _disputed(event: Event, body: dict, changes: _Changes):
    challenger, incumbent = changes.get(body["fact_id"]), changes.get(body["disputes"])
    if challenger is None:
        return []
    challenger["status"] = "disputed"
    if incumbent is not None:
        challenger["disputes"] = sorted(set(challenger["disputes"]) | {incumbent["fact_id"]})
        incumbent["disputes"] = sorted(set(incumbent["disputes"]) | {challenger["fact_id"]})
        changes.put(incumbent, "disputed")
    changes.put(challenger, "disputed")
    return changes.result()


def _superseded(event: Event, body: dict, changes: _Changes):
    if body["rule"] == Rule.BACKFILL:
        _corrected(body["fact_id"], "superseded", body.get("valid_to"), changes)
    changes.close(body["fact_id"], "superseded", body.get("valid_to"), "superseded")
    return changes.result()


def _retracted(event: Event, body: dict, changes: _Changes):
    if body["rule"] == Rule.LATE_NEGATION:
        _corrected(body["fact_id"], "retracted", body["said_at"], changes)
    changes.close(body["fact_id"], "retracted", body["said_at"], "retracted")
    return changes.result()


def _negated(event: Event, body: dict, changes: _Changes):
    changes.close(body["fact_id"], "retracted", body["valid_to"], "retracted")
    return changes.result()


def _corrected(fact_id: str, status: str, valid_to: str | None, changes: _Changes) -> None:
    """A closed fact's valid time ends earlier than the ledger thought: a value said in between
    was learnt late (the decision table's backfill).  An open fact is closed as usual instead."""
    snap = changes.get(fact_id)
    if snap is None or snap["status"] in OPEN_STATES:
        return
    snap.update(status=status, valid_to=valid_to)
    changes.put(snap, "backfilled")


def _split(event: Event, body: dict, changes: _Changes):
    """A value learnt late was said between two statements of this fact: the statements said up
    to then become a fact of their own (`split_id`), closed then; this one holds from its first
    statement after (named in the body, with the authority of the statements it keeps)."""
    snap = changes.get(body["fact_id"])
    if snap is None:
        return []
    at = body["at"]
    early = [e for e in snap["sessions"] if e[1] <= at]
    late = [e for e in snap["sessions"] if e[1] > at]
    if not early or not late:
        return []
    last = max(range(len(early)), key=lambda i: (early[i][1], i))
    # the part before is a fact this event opens (its own observed_seq: the recall index and the
    # key's said order tell facts apart by it), holding the statements said up to `at`
    before = dict(snap, fact_id=body["split_id"], status=body.get("early_state", "superseded"), valid_to=at,
                  disputes=[],
                  sessions=early, confirmed_at=early[last][1], confirmed_by=early[last][0],
                  observed_seq=event.seq)
    _strength(before, body["early_basis"], body["early_confidence"])
    changes.put(before, "split")
    snap.update({k: body[k] for k in ("said_at", "session", "evidence_event", "quote", "author")})
    snap["sessions"] = late
    _strength(snap, body["basis"], body["confidence"])
    changes.put(snap, "split")
    return changes.result()


def _strength(snap: Snapshot, basis: str, base: float) -> None:
    snap.update(basis=basis, base_confidence=base, reinforcements=len(snap["sessions"]) - 1)
    n = snap["reinforcements"]
    snap["confidence"] = round(reinforced_confidence(base, n), 6) if n else base


def _resolved(event: Event, body: dict, changes: _Changes):
    for loser in body.get("loser_ids", []):
        snap = changes.get(loser)
        valid_to = body.get("valid_to") if body.get("loser_state") != "rejected" else (
            snap["said_at"] if snap else None)
        changes.close(loser, body.get("loser_state", "superseded"), valid_to, "dispute_resolved")
    winner = changes.get(body["winner_id"]) if body.get("winner_id") else None
    if winner is not None:
        winner["status"] = "current"
        changes.put(winner, "dispute_resolved")
    return changes.result()


def _reinstated(event: Event, body: dict, changes: _Changes):
    snap = changes.get(body["fact_id"])
    if snap is None:
        return []
    snap.update(status="current", valid_to=None, disputes=[])
    changes.put(snap, "reinstated")
    return changes.result()


def _meaning_checked(event: Event, body: dict, changes: _Changes):
    """A deferred meaning check found the fact only restates another open value of its key: its
    statements count towards that fact, once per session as reinforcements do (ledger/domain/
    decision.py, `reinforce`), and it closes `rejected` from when it was said: it never held as
    a value of its own.  Found a value of its own (no `by_fact_id`): nothing changes."""
    if not body.get("by_fact_id"):
        return []
    merged, kept = changes.get(body["fact_id"]), changes.get(body["by_fact_id"])
    if merged is None or kept is None or merged["status"] not in OPEN_STATES or kept["status"] not in OPEN_STATES:
        return []
    counted = set(session_names(kept["sessions"]))
    added = []
    for entry in sorted(merged["sessions"], key=lambda e: e[2]):
        if entry[0] not in counted:
            counted.add(entry[0])
            added.append(entry)
    if added:
        kept["sessions"] = sorted(kept["sessions"] + added, key=lambda e: e[2])
        if BASIS_RANK[merged["basis"]] > BASIS_RANK[kept["basis"]]:
            kept["basis"] = merged["basis"]
        _strength(kept, kept["basis"], max(kept["base_confidence"], merged["base_confidence"]))
        latest = max(added, key=lambda e: e[1])
        if latest[1] >= kept["confirmed_at"]:
            kept["confirmed_at"], kept["confirmed_by"] = latest[1], latest[0]
        changes.put(kept, "reinforced")
    changes.close(body["fact_id"], "rejected", merged["said_at"], "merged")
    return changes.result()


_HANDLERS = {
    EVENT.FactObserved: _observed,
    EVENT.FactReinforced: _reinforced,
    EVENT.FactDisputed: _disputed,
    EVENT.FactSuperseded: _superseded,
    EVENT.FactRetracted: _retracted,
    EVENT.FactNegated: _negated,
    EVENT.DisputeResolved: _resolved,
    EVENT.FactReinstated: _reinstated,
    EVENT.FactSplit: _split,
    EVENT.MeaningChecked: _meaning_checked,
}
