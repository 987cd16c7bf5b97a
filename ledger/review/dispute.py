"""A reviewer's settlement of a dispute, turned into a `DisputeResolved` body.

Accepting a fact makes it the key's current value and closes everything it was in conflict with;
rejecting one closes it, and if it was the current value the strongest challenger takes its place.
`settlement` is the pure rule (the key's open facts in, bodies out); the live ledger and
re-decision after a forget both call it, so a reviewer's judgement is applied the same way by both.
"""

from __future__ import annotations

from collections.abc import Callable

from factledger.ledger.domain.decide import OpenFact, strongest
from factledger.ledger.domain.events import Body, DisputeResolved, FactDisputed
from factledger.ledger.domain.outcome import Outcome
from factledger.ledger.errors import LedgerError
from factledger.ledger.review import said
from factledger.ledger.unit import UnitOfWork
from factledger.ledger.vocabulary.words import Rule
from factledger.projections.current import key_open_facts, open_fact_key


def resolve(work: UnitOfWork, fact_id: str, accept: bool, by: str, reason: str,
            check: Callable[[object, tuple, list[dict]], None] | None = None) -> Outcome:
    """The live ledger's settlement, on the key's open facts as `facts_current` holds them; the
    outcome's summary names the key, the value settled, whose it is and the seqs written.
    `check(conn, key, facts)`, when given, raises unless those rows are what the log says (the
    facade passes `ledger.audit.served`'s checks: a forged row is never settled on)."""
    if not by.strip() or not reason.strip():
        raise LedgerError("resolve needs --by and --reason")
    with work.transaction():
        key = open_fact_key(work.conn, fact_id)
        if key is None:
            raise LedgerError(f"no open fact {fact_id!r} (only a current or disputed fact can be resolved)")
        app, user, subject, predicate = key
        facts = [OpenFact(*row) for row in key_open_facts(work.conn, app, user, subject, predicate)]
        if check is not None:
            check(work.conn, key, [dict(fact_id=f.fact_id, app=app, user=user, subject=subject,
                                        predicate=predicate, value=f.value, basis=f.basis, status=f.status,
                                        said_at=f.said_at) for f in facts])
        bodies = settlement(facts, fact_id, accept, by, reason, app, user, work.registry.sha256)
        seqs = [work.append(body).seq for body in bodies]
    values = {f.fact_id: f.value for f in facts}
    winner = bodies[0].winner_id or next((f.fact_id for f in facts if f.status == "current" and f.fact_id != fact_id),
                                         None)
    summary = said.resolved(app, user, subject, predicate, values[fact_id], fact_id, accept,
                            values.get(winner) if winner else None, seqs)
    return Outcome("resolve", fact_id, bodies[0].outcome, bodies[0].rule, seqs, summary)


def settlement(facts: list[OpenFact], fact_id: str, accept: bool, by: str, reason: str, app: str,
               user: str, registry_sha: str) -> list[Body]:
    """What a reviewer's accept or reject of `fact_id` does to its key, whose open facts (in the
    order they were opened) are `facts`.  Raises `LedgerError` if the fact is not open or the key
    is not in dispute."""
    target = next((f for f in facts if f.fact_id == fact_id), None)
    if target is None:
        raise LedgerError(f"no open fact {fact_id!r} (only a current or disputed fact can be resolved)")
    others = [f for f in facts if f.fact_id != fact_id]
    if target.status != "disputed" and not any(o.status == "disputed" for o in others):
        raise LedgerError(f"fact {fact_id} is not in dispute")
    common = dict(app=app, user=user, fact_id=fact_id, rule=Rule.REVIEWER, resolved_by=by.strip(),
                  reason=reason.strip(), registry_sha256=registry_sha)
    if accept:
        return [DisputeResolved(outcome="accept", winner_id=fact_id,
                                loser_ids=[o.fact_id for o in others],
                                loser_state="rejected" if target.status == "current" else "superseded",
                                valid_to=target.said_at, **common)]
    challengers = [o for o in others if o.status == "disputed"]
    if target.status != "current" or not challengers:
        return [DisputeResolved(outcome="reject", loser_ids=[fact_id], loser_state="rejected",
                                **common)]
    heir = strongest(challengers).fact_id
    rest = [FactDisputed(app=app, user=user, fact_id=o.fact_id, rule=Rule.REVIEWER, disputes=heir,
                         registry_sha256=registry_sha) for o in challengers if o.fact_id != heir]
    return [DisputeResolved(outcome="reject", winner_id=heir, loser_ids=[fact_id],
                            loser_state="rejected", **common)] + rest
