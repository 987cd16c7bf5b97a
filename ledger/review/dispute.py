"""A reviewer's settlement of a dispute, turned into a `DisputeResolved` body.

Accepting a fact makes it the key's current value and closes everything it was in conflict with;
rejecting one closes it, and if it was the current value the strongest challenger takes its place.
`settlement` is the pure rule (the key's open facts in, bodies out); the live ledger and
re-decision after a forget both call it, so a reviewer's judgement is applied the same way by both.
"""

from __future__ import annotations

import sqlite3

from factledger.ledger.domain.decide import OpenFact, strongest
from factledger.ledger.domain.events import Body, DisputeResolved, FactDisputed
from factledger.ledger.errors import LedgerError
from factledger.ledger.vocabulary.words import Rule
from factledger.projections.current import key_open_facts, open_fact_key


def resolution(conn: sqlite3.Connection, fact_id: str, accept: bool, by: str, reason: str,
               registry_sha: str) -> list[Body]:
    """The live ledger's settlement: the key's open facts as `facts_current` holds them."""
    if not by.strip() or not reason.strip():
        raise LedgerError("resolve needs --by and --reason")
    key = open_fact_key(conn, fact_id)
    if key is None:
        raise LedgerError(f"no open fact {fact_id!r} (only a current or disputed fact can be resolved)")
    app, user, subject, predicate = key
    facts = [OpenFact(*row) for row in key_open_facts(conn, app, user, subject, predicate)]
    return settlement(facts, fact_id, accept, by, reason, app, user, registry_sha)


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
