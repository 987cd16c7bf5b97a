"""The decision table: what a validated candidate does to its key.

`decide` is pure: it sees the candidate, the key's open facts and the predicate's spec, and
returns a `Decision`.  It never reads the database and never writes events; the ledger turns the
decision into events, and projections fold those events without ever calling `decide` again, so a
replay reproduces what the ledger believed whatever this table says today.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .candidate import Candidate, value_key
from .confidence import BASIS_RANK
from .registry import PredicateSpec
from .vocabulary import DecisionAction

# The rules under which this table rejects a candidate (reasons nothing_to_retract,
# insufficient_authority, older_than_current, already_counted; `late_arrival` only in logs written
# before late statements were backfilled).  Only these rejections are
# decisions about a key's state; re-decision (ledger/redecide.py) replays them, and never a
# validator's, a session validator's or a reviewer's rejection.
REJECTING_RULES = frozenset({"negation", "late_arrival", "same_value", "series_duplicate",
                             "late_same_value", "earlier_same_value"})


@dataclass(frozen=True)
class OpenFact:
    """What the table needs to know about a fact that is `current` or `disputed`."""

    fact_id: str
    value: str
    basis: str
    status: str
    said_at: str
    sessions: frozenset[str] = frozenset()
    effective_date: str | None = None
    valid_to: str | None = None              # a closed fact's end in valid time (None: open)
    confirmed_at: str | None = None          # its latest statement's said_at
    said: tuple[tuple[str, str, int], ...] | None = None   # (said_at, session, seq) of each statement

    @property
    def reading_date(self) -> str:
        return self.effective_date or self.said_at[:10]


@dataclass(frozen=True)
class Decision:
    action: DecisionAction
    rule: str
    reason: str = ""
    target: OpenFact | None = None           # the existing fact the action is about
    closes: tuple[OpenFact, ...] = ()        # open facts that close with this decision
    settles: bool = False                    # a reinforcement that settles a dispute
    promotes: OpenFact | None = None         # a challenger that becomes current (incumbent retracted)
    redisputes: tuple[OpenFact, ...] = ()    # other challengers, now disputing the promoted one
    until: OpenFact | None = None            # backfill: the next known value, which ends the new one
    cuts: OpenFact | None = None             # backfill: the closed fact whose valid time it cuts short
    valid_to: str | None = None              # backfill: when the new fact stopped holding
    splits: OpenFact | None = None           # backfill: the fact said before and again after it
    resumes: tuple[str, str, int] | None = None   # ... its first statement after (said_at, session, seq)


def decide(candidate: Candidate, open_facts: Iterable[OpenFact], spec: PredicateSpec,
           restates: tuple[OpenFact | None, str | None] = (None, None),
           past: Iterable[OpenFact] = ()) -> Decision:
    """`open_facts`: the key's open facts in key order (the order they were opened, `facts_current`
    rowid order); a list, or a view that also answers `same(value_key)` (projections/keyindex.py)
    so that a key holding thousands of values is not scanned for each candidate.  Only a `one`
    key's decisions look at every open fact.  `restates`: the open fact the candidate says again
    in other words and the rule that found it (`ledger.semantic.dedup.same_meaning`, the semantic
    extra), or (None, None).  `past`: the key's closed facts that held it for a while (superseded
    or retracted, with their `valid_to`); read only when a `one` key hears a statement said before
    its current fact (Row 5b, `backfill`), so it may be a lazy iterable."""
    rank = BASIS_RANK[candidate.basis]
    wanted = value_key(candidate.value)
    lookup = getattr(open_facts, "same", None)
    same = lookup(wanted) if lookup is not None else [f for f in open_facts if value_key(f.value) == wanted]

    # Row 1: negation retracts an open fact of the same value, if the source has the authority.
    if candidate.negated:
        if spec.cardinality == "series" and candidate.effective_date:
            same = [f for f in same if f.reading_date == candidate.effective_date[:10]]
        earlier = spec.cardinality == "one" and all(candidate.said_at < f.said_at for f in same)
        if earlier and (late := late_negation(candidate, past)) is not None:
            return late
        if not same:
            return Decision("reject", "negation", "nothing_to_retract")
        target = latest(same)
        if BASIS_RANK[target.basis] > rank:
            return Decision("reject", "negation", "insufficient_authority", target)
        if candidate.said_at < target.said_at:
            return Decision("reject", "negation", "older_than_current", target)
        if spec.cardinality == "one" and (cut := split(candidate, target)) is not None:
            return cut                                # Row 5c: said between two statements of it
        challengers = ([f for f in open_facts if f.status == "disputed" and f is not target]
                       if spec.cardinality == "one" else [])
        if target.status == "current" and challengers:
            heir = strongest(challengers)
            return Decision("retract", "negation", "retracted", target, promotes=heir,
                            redisputes=tuple(f for f in challengers if f is not heir))
        return Decision("retract", "negation", "retracted", target)

    # Row 2: a series keeps every dated reading; only value + unit + date is a duplicate.
    if spec.cardinality == "series":
        day = (candidate.effective_date or candidate.said_at)[:10]
        for fact in same:
            if fact.reading_date == day:
                return _reinforce(candidate, fact, open_facts, "series_duplicate")
        return Decision("insert", "series_reading", "new_reading")

    # Row 3: the same value is already open: reinforce it (once per session).  Said before the
    # fact's first statement, it becomes that first statement (`many`), or, on a `one` key, it is
    # history first (Row 5b decides where it falls).
    if same:
        fact = next((f for f in same if f.status == "current"), same[0])
        earlier = (fact.status == "current" and candidate.said_at < fact.said_at
                   and candidate.session not in fact.sessions)
        if earlier and spec.cardinality == "many":
            return Decision("backfill", "earlier_same_value", "held_earlier", fact)
        if not (earlier and spec.cardinality == "one"):
            return _reinforce(candidate, fact, open_facts, "same_value")

    # Row 3b: another wording of an open value (ledger/semantic/dedup.py guards when).
    if restates[0] is not None and not candidate.negated:
        return _reinforce(candidate, restates[0], open_facts, restates[1])

    # Row 4: nothing open for the key (or values accumulate): a new fact.
    if spec.cardinality == "many":
        return Decision("insert", "many_accumulates", "new_value")
    current = next((f for f in open_facts if f.status == "current"), None)
    if current is None:
        return Decision("insert", "new_key", "new_value")

    # Row 5: `one` with a different current value (or the same value, said before it).
    if not same and rank < BASIS_RANK[current.basis]:
        return Decision("dispute", "lower_authority", "lower_authority_than_current", current)
    if candidate.said_at < current.said_at:
        return backfill(candidate, current, past)     # Row 5b: history, never what is current
    if (cut := split(candidate, current)) is not None:
        return cut                                    # Row 5c: said between two statements of it
    return Decision("supersede", "newer_value", "superseded", current, closes=tuple(open_facts))


def strongest(facts: list[OpenFact]) -> OpenFact:
    """The challenger with the most authority, then the latest said: who inherits a key.

    Ties go to the fact opened last (`facts` in the order the key's facts were opened), never to
    an id: ids are random, and a ledger fed the same statements must decide the same way (forget
    compares itself with one that never heard the forgotten statements)."""
    return max(reversed(facts), key=lambda f: (BASIS_RANK[f.basis], f.said_at))


def latest(facts: list[OpenFact]) -> OpenFact:
    """The latest said; a tie goes to the fact opened last (see `strongest`)."""
    return max(reversed(facts), key=lambda f: f.said_at)


def _reinforce(candidate: Candidate, fact: OpenFact, open_facts: list[OpenFact], rule: str) -> Decision:
    if candidate.session in fact.sessions:
        return Decision("reject", rule, "already_counted", fact)
    if fact.status == "disputed":
        current = next((f for f in open_facts if f.status == "current"), None)
        if current is None or BASIS_RANK[candidate.basis] >= BASIS_RANK[current.basis]:
            losers = tuple(f for f in open_facts if f.fact_id != fact.fact_id)
            return Decision("reinforce", rule + "_settles_dispute", "dispute_settled", fact,
                            closes=losers, settles=True)
    return Decision("reinforce", rule, "reinforced", fact)


# Row 5b: a statement said before the current fact of a `one` key.  It is history: it cannot
# change what is current, so it is recorded where it falls in valid time, as if it had arrived in
# order.  The key's valid-time line is its closed facts and its current one; what the statement
# meets there decides, and `docs/decisions.md` ("Late arrivals") says which orders are equivalent.

def backfill(candidate: Candidate, current: OpenFact, past: Iterable[OpenFact]) -> Decision:
    t, wanted = candidate.said_at, value_key(candidate.value)
    line = [f for f in past if f.status in ("superseded", "retracted")] + [current]
    held = covering(line[:-1], t)
    if held is not None and value_key(held.value) == wanted:
        # the value held then: it says it again, a reinforcement (in the past)
        return _reinforce(candidate, held, [], "late_same_value")
    if held is not None and BASIS_RANK[candidate.basis] >= BASIS_RANK[held.basis]:
        if (cut := split(candidate, held)) is not None:
            return cut
    after = min((f for f in line if f.said_at > t), key=lambda f: f.said_at)
    cuts = held if held is not None and BASIS_RANK[candidate.basis] >= BASIS_RANK[held.basis] else None
    if value_key(after.value) == wanted:
        # the next value is this one: it held from this earlier statement on
        if candidate.session in after.sessions:
            return Decision("reject", "earlier_same_value", "already_counted", after)
        return Decision("backfill", "earlier_same_value", "held_earlier", after, cuts=cuts)
    return Decision("backfill", "backfill", "backfilled", after, until=after, cuts=cuts, valid_to=after.said_at)


def split(candidate: Candidate, held: OpenFact) -> Decision | None:
    """Row 5c: a value said while `held` held it, with a statement of `held` said after it.  In
    said order that statement would have come after this value, as a new fact of its own: so
    `held` is split in two, the part before ends at this value, which holds until that statement,
    and `held` holds again from there (the part it keeps, with its id, status and end).  A
    negation of `held`'s value said there splits it the same way, the part before `retracted`."""
    t = candidate.said_at
    if held.said is None or held.confirmed_at is None or held.confirmed_at <= t:
        return None
    later = [s for s in held.said if s[0] > t]
    if not later or all(s[0] > t for s in held.said):
        return None
    first = min(later, key=lambda s: (s[0], arrival(s[2])))
    if candidate.negated:                 # the part before is retracted then; no new value
        return Decision("retract", "late_negation", "split", held, splits=held, resumes=first)
    return Decision("backfill", "backfill", "split", held, until=held, splits=held, valid_to=first[0],
                    resumes=first)


def arrival(seq: int) -> tuple[int, int]:
    """The order statements were recorded in: log seqs, then (re-decision's statements, folded
    before they are appended) negative seqs in the order they were folded."""
    return (0, seq) if seq > 0 else (1, -seq)


def late_negation(candidate: Candidate, past: Iterable[OpenFact]) -> Decision | None:
    """A negation said while a closed fact of its value held: that fact's valid time ends then."""
    wanted = value_key(candidate.value)
    held = covering([f for f in past if f.status in ("superseded", "retracted")], candidate.said_at)
    if held is None or value_key(held.value) != wanted:
        return None
    if BASIS_RANK[held.basis] > BASIS_RANK[candidate.basis]:
        return Decision("reject", "negation", "insufficient_authority", held)
    return split(candidate, held) or Decision("retract", "late_negation", "retracted_in_the_past", held)


def covering(facts: Iterable[OpenFact], t: str) -> OpenFact | None:
    """The closed fact whose valid time holds `t` (the latest said, if several overlap)."""
    found = [f for f in facts if f.said_at <= t and (f.valid_to is None or t < f.valid_to)]
    return latest(found) if found else None
