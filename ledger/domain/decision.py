"""What the decision table reads and returns: a key's facts, the negations it has heard, a decision.

Kept apart from the table (`ledger.decide`) and its rules for statements learnt late
(`ledger.late`), which both build decisions, so that neither imports the other's rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from factledger.ledger.domain.candidate import Candidate
from factledger.ledger.domain.confidence import BASIS_RANK
from factledger.ledger.vocabulary.words import DecisionAction, Reason, Rule


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
class Negation:
    """A negation of a value the key has heard ("not V", said at `said_at`), whatever it did
    then: retracted a fact, or found nothing to retract.  A statement of V learnt after it but
    said before it opens a fact that this negation, in said order, retracted."""

    said_at: str
    basis: str
    seq: int | None = None                   # the statement's log seq (None: not appended yet)


# value key -> the key's negations of that value (heard so far, in any order)
Negations = Callable[[str], Iterable[Negation]]


def no_negations(_wanted: str) -> tuple[Negation, ...]:
    return ()


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
    cuts: OpenFact | None = None             # a closed fact whose valid time the new one cuts short
    valid_to: str | None = None              # backfill: when the new fact stopped holding
    splits: OpenFact | None = None           # backfill: the fact said before and again after it
    resumes: tuple[str, str, int] | None = None   # ... its first statement after (said_at, session, seq)
    negated_at: Negation | None = None       # a negation heard before, said after: the new fact ends there
    unchecked: bool = False                  # the dedup meaning check failed: a new fact records it is owed


def strongest(facts: list[OpenFact]) -> OpenFact:
    """The challenger with the most authority, then the latest said: who inherits a key.

    Ties go to the fact opened last (`facts` in the order the key's facts were opened), never to
    an id: ids are random, and a ledger fed the same statements must decide the same way (forget
    compares itself with one that never heard the forgotten statements)."""
    return max(reversed(facts), key=lambda f: (BASIS_RANK[f.basis], f.said_at))


def latest(facts: list[OpenFact]) -> OpenFact:
    """The latest said; a tie goes to the fact opened last (see `strongest`)."""
    return max(reversed(facts), key=lambda f: f.said_at)


def reinforce(candidate: Candidate, fact: OpenFact, open_facts: Iterable[OpenFact], rule: str) -> Decision:
    """The candidate says `fact`'s value again: once per session; a stronger statement of a
    disputed fact settles the dispute."""
    if candidate.session in fact.sessions:
        return Decision("reject", rule, Reason.ALREADY_COUNTED, fact)
    if fact.status == "disputed":
        open_facts = list(open_facts)
        current = next((f for f in open_facts if f.status == "current"), None)
        if current is None or BASIS_RANK[candidate.basis] >= BASIS_RANK[current.basis]:
            losers = tuple(f for f in open_facts if f.fact_id != fact.fact_id)
            return Decision("reinforce", rule + Rule.SETTLES_DISPUTE, Reason.DISPUTE_SETTLED, fact,
                            closes=losers, settles=True)
    return Decision("reinforce", rule, Reason.REINFORCED, fact)
