"""The decision table: what a validated candidate does to its key.

`decide` is pure: it sees the candidate, the key's open facts, its past and the negations it has
heard, and the predicate's spec, and returns a `Decision`.  It never reads the database and never
writes events; the ledger turns the decision into events, and projections fold those events
without ever calling `decide` again, so a replay reproduces what the ledger believed whatever this
table says today.  The rows for statements learnt out of said order are `ledger.late`.
"""

from __future__ import annotations

from collections.abc import Iterable

from factledger.ledger.domain.candidate import Candidate, value_key
from factledger.ledger.domain.confidence import BASIS_RANK
from factledger.ledger.domain.decision import (
    Decision,
    Negation,
    Negations,
    OpenFact,
    latest,
    no_negations,
    reinforce,
    strongest,
)
from factledger.ledger.domain.late import PAST_STATES, denied, late_negation, placed, placed_many, split
from factledger.ledger.registry.predicates import PredicateSpec
from factledger.ledger.vocabulary.words import Reason, Rule

__all__ = ["REJECTING_RULES", "Decision", "Negation", "OpenFact", "decide", "latest", "strongest"]

# The rules under which this table rejects a candidate (reasons nothing_to_retract,
# insufficient_authority, older_than_current, already_counted; a rewording said again in a session
# that counted it, by meaning or form, is `already_counted` too).  Only these rejections are
# decisions about a key's state; re-decision (ledger/forget/redecide.py) replays them, and never a
# validator's, a session validator's or a reviewer's rejection.
REJECTING_RULES = frozenset({Rule.NEGATION, Rule.SAME_VALUE, Rule.SERIES_DUPLICATE,
                             Rule.LATE_SAME_VALUE, Rule.EARLIER_SAME_VALUE,
                             Rule.SAME_MEANING, Rule.SAME_FORM})


def decide(candidate: Candidate, open_facts: Iterable[OpenFact], spec: PredicateSpec,
           restates: tuple[OpenFact | None, str | None] = (None, None),
           past: Iterable[OpenFact] = (), negations: Negations = no_negations) -> Decision:
    """`open_facts`: the key's open facts in key order (the order they were opened, `facts_current`
    rowid order); a list, or a view that also answers `same(value_key)` (projections/keyindex.py)
    so that a key holding thousands of values is not scanned for each candidate.  Only a `one`
    key's decisions look at every open fact.  `restates`: the open fact the candidate says again
    in other words and the rule that found it (`ledger.semantic.dedup.same_meaning`, the semantic
    extra), or (None, None).  `past`: the key's closed facts that held it for a while (superseded
    or retracted, with their `valid_to`); read only for a statement said before what the key
    holds, a negation with nothing open to retract, or a value on a key (or, `many`, of a value)
    with nothing open, so it may be a lazy iterable.  `negations(value_key)`: the negations of
    that value the key has heard (`Negation`), asked when a statement opens a fact."""
    rank = BASIS_RANK[candidate.basis]
    wanted = value_key(candidate.value)
    lookup = getattr(open_facts, "same", None)
    same = lookup(wanted) if lookup is not None else [f for f in open_facts if value_key(f.value) == wanted]

    # Row 1: negation retracts an open fact of the same value, if the source has the authority;
    # said while a closed fact of its value held, it ends that fact then (`ledger.late`).
    if candidate.negated:
        if spec.cardinality == "series" and candidate.effective_date:
            same = [f for f in same if f.reading_date == candidate.effective_date[:10]]
        earlier = spec.cardinality != "series" and all(candidate.said_at < f.said_at for f in same)
        if earlier and (late := late_negation(candidate, past, spec.cardinality == "many")) is not None:
            return late
        if not same:
            return Decision("reject", Rule.NEGATION, Reason.NOTHING_TO_RETRACT)
        target = latest(same)
        if BASIS_RANK[target.basis] > rank:
            return Decision("reject", Rule.NEGATION, Reason.INSUFFICIENT_AUTHORITY, target)
        if candidate.said_at < target.said_at:
            return Decision("reject", Rule.NEGATION, Reason.OLDER_THAN_CURRENT, target)
        if spec.cardinality != "series" and (cut := split(candidate, target, negations)) is not None:
            return cut                                # Row 5c: said between two statements of it
        challengers = ([f for f in open_facts if f.status == "disputed" and f is not target]
                       if spec.cardinality == "one" else [])
        if target.status == "current" and challengers:
            heir = strongest(challengers)
            return Decision("retract", Rule.NEGATION, Reason.RETRACTED, target, promotes=heir,
                            redisputes=tuple(f for f in challengers if f is not heir))
        return Decision("retract", Rule.NEGATION, Reason.RETRACTED, target)

    # Row 2: a series keeps every dated reading; only value + unit + date is a duplicate.
    if spec.cardinality == "series":
        day = (candidate.effective_date or candidate.said_at)[:10]
        for fact in same:
            if fact.reading_date == day:
                return reinforce(candidate, fact, open_facts, Rule.SERIES_DUPLICATE)
        return Decision("insert", Rule.SERIES_READING, Reason.NEW_READING)

    # Row 3: the same value is already open: reinforce it (once per session).  Said before the
    # fact's first statement, it is history first (`ledger.late` decides where it falls).
    if same:
        fact = next((f for f in same if f.status == "current"), same[0])
        earlier = (fact.status == "current" and candidate.said_at < fact.said_at
                   and candidate.session not in fact.sessions)
        if earlier and spec.cardinality == "many":
            return placed_many(candidate, _value_line(past, wanted, same, negations), negations)
        if not (earlier and spec.cardinality == "one"):
            return reinforce(candidate, fact, open_facts, Rule.SAME_VALUE)

    # Row 3b: another wording of an open value (ledger/semantic/dedup.py guards when).
    if restates[0] is not None and not candidate.negated:
        return reinforce(candidate, restates[0], open_facts, restates[1])

    # Row 4: nothing open for the key (or values accumulate): a new fact, unless the key's (or
    # the value's) past says where it falls.
    if spec.cardinality == "many":
        return placed_many(candidate, _value_line(past, wanted, [], negations), negations)
    current = next((f for f in open_facts if f.status == "current"), None)
    if current is None:
        if not open_facts:
            return placed(candidate, None, past, negations)
        ends = denied(candidate, negations, None)
        return Decision("insert", Rule.NEW_KEY, Reason.NEGATED_LATER if ends else Reason.NEW_VALUE, negated_at=ends)

    # Row 5: `one` with a different current value (or the same value, said before it).
    if not same and rank < BASIS_RANK[current.basis]:
        return Decision("dispute", Rule.LOWER_AUTHORITY, Reason.LOWER_AUTHORITY_THAN_CURRENT, current)
    if candidate.said_at < current.said_at:
        return placed(candidate, current, past, negations)   # Row 5b: history, never what is current
    if (cut := split(candidate, current, negations)) is not None:
        return cut                                    # Row 5c: said between two statements of it
    ends = denied(candidate, negations, None)
    return Decision("supersede", Rule.NEWER_VALUE, Reason.NEGATED_LATER if ends else Reason.SUPERSEDED, current,
                    closes=tuple(open_facts), negated_at=ends)


def _value_line(past: Iterable[OpenFact], wanted: str, same: list[OpenFact], negations: Negations) -> list[OpenFact]:
    """A `many` value's facts, open and closed.  A closed fact of a `many` key was retracted, so a
    value that no negation was ever heard of has no past: the key's past is read only if one was."""
    if not any(True for _ in negations(wanted)):
        return list(same)
    return list(same) + [f for f in past if f.status in PAST_STATES and value_key(f.value) == wanted]
