"""A reviewer's settlement of a dispute, turned into a `DisputeResolved` body.

Accepting a fact makes it the key's current value and closes everything it was in conflict with;
rejecting one closes it, and if it was the current value the strongest challenger takes its place.
"""

from __future__ import annotations

import sqlite3

from .decide import OpenFact, strongest
from .errors import LedgerError
from .events import Body, DisputeResolved, FactDisputed


def resolution(conn: sqlite3.Connection, fact_id: str, accept: bool, by: str, reason: str,
               registry_sha: str) -> list[Body]:
    if not by.strip() or not reason.strip():
        raise LedgerError("resolve needs --by and --reason")
    row = conn.execute("SELECT app, user, subject, predicate, status, said_at FROM facts_current"
                       " WHERE fact_id = ?", (fact_id,)).fetchone()
    if row is None:
        raise LedgerError(f"no open fact {fact_id!r} (only a current or disputed fact can be resolved)")
    app, user, subject, predicate, status, said_at = row
    others = conn.execute(
        "SELECT fact_id, status, basis, said_at FROM facts_current WHERE app = ? AND user = ?"
        " AND subject = ? AND predicate = ? AND fact_id != ?",
        (app, user, subject, predicate, fact_id)).fetchall()
    in_dispute = status == "disputed" or any(o[1] == "disputed" for o in others)
    if not in_dispute:
        raise LedgerError(f"fact {fact_id} is not in dispute")
    common = dict(app=app, user=user, fact_id=fact_id, rule="reviewer", resolved_by=by.strip(),
                  reason=reason.strip(), registry_sha256=registry_sha)
    if accept:
        return [DisputeResolved(outcome="accept", winner_id=fact_id,
                                loser_ids=[o[0] for o in others],
                                loser_state="rejected" if status == "current" else "superseded",
                                valid_to=said_at, **common)]
    challengers = [OpenFact(o[0], "", o[2], o[1], o[3]) for o in others if o[1] == "disputed"]
    if status != "current" or not challengers:
        return [DisputeResolved(outcome="reject", loser_ids=[fact_id], loser_state="rejected",
                                **common)]
    heir = strongest(challengers).fact_id
    rest = [FactDisputed(app=app, user=user, fact_id=o.fact_id, rule="reviewer", disputes=heir,
                         registry_sha256=registry_sha) for o in challengers if o.fact_id != heir]
    return [DisputeResolved(outcome="reject", winner_id=heir, loser_ids=[fact_id],
                            loser_state="rejected", **common)] + rest
