"""Re-decision: a key's statements decided again, through the live ledger's own path.

For each statement, in order: `ledger.decide.decide` against the key's state folded so far, the
events that record the decision (`ledger.plan.events_for`, or `ledger.resolve.settlement` for a
reviewer's judgement), and the fold of those events (`projections.factstate.transition`, the one
place that knows what an event means for a fact), all in memory.  Nothing here knows what a
decision does to a key: that is the live ledger's code, run again.

A forget uses it to record again what survives after the first forgotten event of a key
(`ledger.restate`); tests feed it whole histories and compare its events with the live ledger's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache

from factledger.ledger.domain.decide import Negation, OpenFact
from factledger.ledger.domain.events import Body, DisputeResolved, parse_body
from factledger.ledger.domain.late import PAST_STATES
from factledger.ledger.domain.record import Statements, events_for, stamped
from factledger.ledger.domain.statement import Resolution, Statement, heard_negation
from factledger.ledger.errors import LedgerError
from factledger.ledger.registry.predicates import PredicateSpec
from factledger.ledger.review.dispute import settlement
from factledger.ledger.store.eventlog import Event
from factledger.ledger.vocabulary.words import Rule
from factledger.projections.factstate import Snapshot, transition
from factledger.projections.keyindex import KeyIndex, KeyView, LazyPast, past_fact, said_order
from factledger.projections.keystate import decide_key


class KeyFold:
    """One key's facts folded in memory, indexed for `decide` as the live fold indexes them
    (`projections.keyindex`: open facts in the order the key first held them, and by value): a
    `projections.keystate.KeyState`, as the live ledger's `StoredKey` is."""

    def __init__(self, seed: Iterable[Snapshot] = (), stored: Statements = lambda seqs: {},
                 negations: Iterable[tuple[str, Negation]] = ()):
        self.snaps: dict[str, Snapshot] = {}
        self.heard: list[tuple[str, Negation]] = list(negations)   # the key's negations (value key, ...)
        self.bodies: dict[int, dict] = {}     # what this fold recorded, by its own (negative) seqs
        self._stored = stored                 # the statements of the seeded facts, read from the log
        self.index = KeyIndex(self.snaps)
        for snap in seed:
            self._put(dict(snap))
        self._seq = 0

    def _put(self, snap: Snapshot) -> None:
        self.snaps[snap["fact_id"]] = snap
        self.index.update(snap)

    def view(self) -> KeyView:
        return self.index.view()

    def open_facts(self) -> list[OpenFact]:
        return list(self.index.view())

    def past(self) -> LazyPast:
        """The closed facts of the key that held it (decide's `past`), in the order they were said,
        read the first time `decide` iterates them."""
        return LazyPast(lambda: [past_fact(s) for s in sorted(self.snaps.values(), key=said_order)
                                 if s["status"] in PAST_STATES])

    def negations(self, wanted: str) -> list[Negation]:
        """The negations of a value the key has heard (decide's `negations`): seeded, or folded here."""
        return [n for v, n in self.heard if v == wanted]

    def statements(self, seqs: list[int]) -> dict[int, dict]:
        """The bodies of a fact's statements (a split divides them): folded here, or stored."""
        found = {s: self.bodies[s] for s in seqs if s in self.bodies}
        stored = [s for s in seqs if s not in found]
        return {**found, **self._stored(stored)} if stored else found

    def fold(self, body: Body) -> None:
        self._seq -= 1                        # not a log seq: these events are not appended yet
        data = body.model_dump(mode="json", exclude_none=True)
        self.bodies[self._seq] = data
        event = Event(self._seq, "", data["type"], data["app"], data["user"], "", data)
        heard = heard_negation(self._seq, data["type"], data)
        if heard is not None:
            self.heard.append(heard[1:])
        for snap, _reason in transition(event, self.snaps.get):
            self._put(snap)


def redecide(statements: Iterable[Statement], spec: PredicateSpec, registry_sha: str, app: str,
             user: str, fold: KeyFold | None = None, cause: int | None = None,
             subject: str = "user", stored_vectors: Callable[[], tuple] = lambda: ({}, None)) -> list[Body]:
    """The events the live ledger would append for `statements`, one after the other, on the key
    (`subject`, `spec.name`) folded so far into `fold` (a new, empty key by default; left holding
    the key's state after them).  With `cause` (a `Redacted` seq) every body names it, and the
    body recording a statement names the statement's first record (`restates`).

    Before `decide`, the live ledger's question: does the statement only restate an open value in
    other words (`ledger.semantic.dedup.restated_by`; `stored_vectors()` is the key's stored
    vectors as `key_matrix` gives them, read once: facts decided here have none yet and are
    compared directly, as the live ledger compares the facts its own transaction opened)?

    A statement keeps the fact id it first observed: as that fact's id when it is an observation
    again, else in `observed_as`.  A reviewer's judgement whose dispute does not arise is kept (with
    `cause`) as a `DisputeResolved` that settles nothing, rule `reviewer_unsettled`: a later
    re-decision in which its statement observes that fact again, and the dispute arises, applies it."""
    fold = fold if fold is not None else KeyFold()
    out: list[Body] = []
    stored = cache(stored_vectors)            # the stored vectors do not change while this runs
    for st in statements:
        if st.resolution is not None:
            bodies = _judged(st.resolution, fold, app, user, registry_sha, subject, spec.name, cause)
        else:
            c = st.candidate
            decision = decide_key(c, spec, fold, stored)
            reuse = st.fact_id if st.fact_id is not None and st.fact_id not in fold.snaps else None
            dumps, fact_id = events_for(decision, c, spec, registry_sha, st.basis_claimed, fact_id=reuse,
                                        statements=fold.statements)
            # events_for builds the stored dicts (ledger/domain/dumped.py); re-decision hands on models
            bodies = [parse_body(b) for b in stamped(dumps, st.hold_id, dict(st.review))]
            if reuse is not None and fact_id != reuse and "observed_as" in type(bodies[0]).model_fields:
                bodies[0] = bodies[0].model_copy(update={"observed_as": reuse})
        if cause is not None:
            bodies = [_caused(b, cause, st.seq if i == 0 else None) for i, b in enumerate(bodies)]
        for body in bodies:
            fold.fold(body)
        out += bodies
    return out


def _judged(r: Resolution, fold: KeyFold, app: str, user: str, registry_sha: str, subject: str,
            predicate: str, cause: int | None) -> list[Body]:
    try:
        return settlement(fold.open_facts(), r.fact_id, r.accept, r.by, r.reason, app, user, registry_sha)
    except LedgerError:                       # the dispute it settled does not arise (now)
        if cause is None:
            return []
        return [DisputeResolved(app=app, user=user, fact_id=r.fact_id, rule=Rule.REVIEWER_UNSETTLED,
                                outcome="accept" if r.accept else "reject", resolved_by=r.by,
                                reason=r.reason, registry_sha256=registry_sha, subject=subject,
                                predicate=predicate)]


def _caused(body: Body, cause: int, restates: int | None) -> Body:
    fields = type(body).model_fields
    update = {"cause": cause} if "cause" in fields else {}
    if restates is not None and "restates" in fields:
        update["restates"] = restates
    return body.model_copy(update=update) if update else body
