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

ACTIONS = ("insert", "reinforce", "supersede", "dispute", "retract", "reject", "hold")
# The rules under which this table rejects a candidate (reasons nothing_to_retract,
# insufficient_authority, older_than_current, already_counted).  Only these rejections are
# decisions about a key's state; re-decision (ledger/redecide.py) replays them, and never a
# validator's, a session validator's or a reviewer's rejection.
REJECTING_RULES = frozenset({"negation", "late_arrival", "same_value", "series_duplicate"})


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


def decide(candidate: Candidate, open_facts: Iterable[OpenFact], spec: PredicateSpec,
           restates: tuple[OpenFact | None, str | None] = (None, None)) -> Decision:
    """`open_facts`: the key's open facts in key order (the order they were opened, `facts_current`
    rowid order); a list, or a view that also answers `same(value_key)` (projections/keyindex.py)
    so that a key holding thousands of values is not scanned for each candidate.  Only a `one`
    key's decisions look at every open fact.  `restates`: the open fact the candidate says again
    in other words and the rule that found it (`ledger.semantic.dedup.same_meaning`, the semantic
    extra), or (None, None)."""
    rank = BASIS_RANK[candidate.basis]
    wanted = value_key(candidate.value)
    lookup = getattr(open_facts, "same", None)
    same = lookup(wanted) if lookup is not None else [f for f in open_facts if value_key(f.value) == wanted]

    # Row 1: negation retracts an open fact of the same value, if the source has the authority.
    if candidate.negated:
        if spec.cardinality == "series" and candidate.effective_date:
            same = [f for f in same if f.reading_date == candidate.effective_date[:10]]
        if not same:
            return Decision("reject", "negation", "nothing_to_retract")
        target = latest(same)
        if BASIS_RANK[target.basis] > rank:
            return Decision("reject", "negation", "insufficient_authority", target)
        if candidate.said_at < target.said_at:
            return Decision("reject", "negation", "older_than_current", target)
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

    # Row 3: the same value is already open: reinforce it (once per session).
    if same:
        fact = next((f for f in same if f.status == "current"), same[0])
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

    # Row 5: `one` with a different current value.
    if rank < BASIS_RANK[current.basis]:
        return Decision("dispute", "lower_authority", "lower_authority_than_current", current)
    if candidate.said_at < current.said_at:
        return Decision("reject", "late_arrival", "older_than_current", current)
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
