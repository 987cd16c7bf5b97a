"""Statements learnt out of the order they were said: where each falls in its key's valid time.

A statement said before what the key already knows is history: it cannot change what is current,
so it is recorded where it falls in valid time, as if it had arrived in order (decide's Rows 5b
and 5c).  And a statement learnt after a negation of its value that was said later opens a fact
that negation retracted, in said order, at the negation's time (`denied`), whatever its row.
`docs/decisions.md` ("Late arrivals") says which orders are equivalent.

A `one` key's valid-time line is its closed facts (superseded or retracted) and its current one;
a `many` value's is the facts of that value, open or closed (values of a `many` key do not end
one another, only negations end them).
"""

from __future__ import annotations

from collections.abc import Iterable

from factledger.ledger.domain.candidate import Candidate, value_key
from factledger.ledger.domain.confidence import BASIS_RANK
from factledger.ledger.domain.decision import Decision, Negation, Negations, OpenFact, latest, reinforce
from factledger.ledger.vocabulary.words import Reason, Rule

PAST_STATES = ("superseded", "retracted")


def placed(candidate: Candidate, current: OpenFact | None, past: Iterable[OpenFact],
           negations: Negations) -> Decision:
    """A `one` key's statement of a value said before its current fact (Row 5b), or on a key
    with nothing open but a past (Row 4): the closed fact that held when it was said (`held`)
    and the first fact said after it (`after`) decide."""
    t, wanted = candidate.said_at, value_key(candidate.value)
    closed = [f for f in past if f.status in PAST_STATES]
    held = covering(closed, t)
    if held is not None and value_key(held.value) == wanted:
        # the value held then: it says it again, a reinforcement (in the past)
        return reinforce(candidate, held, [], Rule.LATE_SAME_VALUE)
    cuts = held if held is not None and BASIS_RANK[candidate.basis] >= BASIS_RANK[held.basis] else None
    if cuts is not None and (cut := split(candidate, cuts, negations)) is not None:
        return cut
    line = closed + ([current] if current is not None else [])
    after = min((f for f in line if f.said_at > t), key=lambda f: f.said_at, default=None)
    if after is None:                 # nothing said after it: it holds from now on
        ends = denied(candidate, negations, None)
        return Decision("insert", Rule.NEW_KEY, Reason.NEGATED_LATER if ends else Reason.NEW_VALUE, cuts=cuts,
                        negated_at=ends)
    return before(candidate, after, cuts, negations)


def placed_many(candidate: Candidate, line: list[OpenFact], negations: Negations) -> Decision:
    """A `many` value's statement that its open fact (if any) does not hold: said before it, or
    with no open fact of the value but a past of it (`line`: the facts of this value)."""
    t = candidate.said_at
    held = covering([f for f in line if f.status in PAST_STATES], t)
    if held is not None:
        return reinforce(candidate, held, [], Rule.LATE_SAME_VALUE)
    after = min((f for f in line if f.said_at > t), key=lambda f: f.said_at, default=None)
    if after is None:
        ends = denied(candidate, negations, None)
        return Decision("insert", Rule.MANY_ACCUMULATES, Reason.NEGATED_LATER if ends else Reason.NEW_VALUE,
                        negated_at=ends)
    return before(candidate, after, None, negations)


def before(candidate: Candidate, after: OpenFact, cuts: OpenFact | None, negations: Negations) -> Decision:
    """The statement was said before `after`, the next fact of its line: that fact held from
    this earlier statement on if it has this value; else (or if a negation of the value was said
    in between) the statement is a fact of its own, closed when `after` (or the negation) came."""
    ends = denied(candidate, negations, after.said_at)
    if ends is not None:
        return Decision("backfill", Rule.BACKFILL, Reason.NEGATED_LATER, cuts=cuts, negated_at=ends)
    if value_key(after.value) == value_key(candidate.value):
        if candidate.session in after.sessions:
            return Decision("reject", Rule.EARLIER_SAME_VALUE, Reason.ALREADY_COUNTED, after)
        return Decision("backfill", Rule.EARLIER_SAME_VALUE, Reason.HELD_EARLIER, after, cuts=cuts)
    return Decision("backfill", Rule.BACKFILL, Reason.BACKFILLED, after, until=after, cuts=cuts, valid_to=after.said_at)


def split(candidate: Candidate, held: OpenFact, negations: Negations) -> Decision | None:
    """Row 5c: a value said while `held` held it, with a statement of `held` said after it.  In
    said order that statement would have come after this value, as a new fact of its own: so
    `held` is split in two, the part before ends at this value, which holds until that statement
    (or a negation of it said before then), and `held` holds again from there (the part it keeps,
    with its id, status and end).  A negation of `held`'s value said there splits it the same way,
    the part before `retracted`."""
    t = candidate.said_at
    if held.said is None or held.confirmed_at is None or held.confirmed_at <= t:
        return None
    later = [s for s in held.said if s[0] > t]
    if not later or all(s[0] > t for s in held.said):
        return None
    first = min(later, key=lambda s: (s[0], arrival(s[2])))
    if candidate.negated:                 # the part before is retracted then; no new value
        return Decision("retract", Rule.LATE_NEGATION, Reason.SPLIT, held, splits=held, resumes=first)
    ends = denied(candidate, negations, first[0])
    return Decision("backfill", Rule.BACKFILL, Reason.SPLIT, held, until=held, splits=held, valid_to=first[0],
                    resumes=first, negated_at=ends)


def arrival(seq: int | None) -> tuple[int, int]:
    """The order statements were recorded in: log seqs, then (re-decision's statements, folded
    before they are appended) negative seqs in the order they were folded."""
    if seq is None:
        return (2, 0)
    return (0, seq) if seq > 0 else (1, -seq)


def late_negation(candidate: Candidate, past: Iterable[OpenFact], by_value: bool = False) -> Decision | None:
    """A negation said while a closed fact of its value held: that fact's valid time ends then.
    `by_value`: a `many` key, whose values hold side by side (only this value's facts count)."""
    wanted = value_key(candidate.value)
    closed = [f for f in past if f.status in PAST_STATES and (not by_value or value_key(f.value) == wanted)]
    held = covering(closed, candidate.said_at)
    if held is None or value_key(held.value) != wanted:
        return None
    if BASIS_RANK[held.basis] > BASIS_RANK[candidate.basis]:
        return Decision("reject", Rule.NEGATION, Reason.INSUFFICIENT_AUTHORITY, held)
    return split(candidate, held, lambda _v: ()) or Decision("retract", Rule.LATE_NEGATION,
                                                             Reason.RETRACTED_IN_THE_PAST, held)


def denied(candidate: Candidate, negations: Negations, until: str | None) -> Negation | None:
    """The first negation of the candidate's value heard so far, said after it and before `until`
    (when its line's next fact was said; None: never), with at least its authority: in said order,
    that negation retracted the fact this statement opens."""
    t, rank = candidate.said_at, BASIS_RANK[candidate.basis]
    found = [n for n in negations(value_key(candidate.value))
             if t < n.said_at and (until is None or n.said_at < until) and BASIS_RANK[n.basis] >= rank]
    return min(found, key=lambda n: (n.said_at, arrival(n.seq))) if found else None


def covering(facts: Iterable[OpenFact], t: str) -> OpenFact | None:
    """The fact whose valid time holds `t` (the latest said, if several overlap)."""
    found = [f for f in facts if f.said_at <= t and (f.valid_to is None or t < f.valid_to)]
    return latest(found) if found else None
