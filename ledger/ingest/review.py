"""The review queue's two verbs: accept a held candidate under a registry predicate, or reject it.

Both are events.  Accepting runs the candidate through the normal write path (registry rules,
decision table) with its `hold_id` set, so the fact's provenance still names the session, the
evidence event and the quote, and the queue item closes when the decision is appended.
Rejecting appends `CandidateRejected` with the reviewer's reason.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import orjson

from ..candidate import make_candidate
from ..errors import LedgerError
from ..events import CandidateRejected
from ..store import equal_filters

if TYPE_CHECKING:
    from ..service import Ledger, Outcome

COLUMNS = ("hold_id", "app", "user", "held_seq", "held_at", "reason", "candidate", "status",
           "closed_seq", "closed_reason")


def _item(row) -> dict:
    item = dict(zip(COLUMNS, row))
    candidate = orjson.loads(item["candidate"])
    item["candidate"] = candidate
    for key in ("subject", "predicate", "value", "quote", "session", "evidence_event", "author"):
        item[key] = candidate.get(key)
    return item


def held_rows(conn: sqlite3.Connection, app: str | None = None, user: str | None = None,
              status: str | None = "open") -> list[dict]:
    where, args = equal_filters(app=app, user=user, status=status)
    sql = f"SELECT {', '.join(COLUMNS)} FROM review_queue WHERE 1 = 1" + where
    return [_item(row) for row in conn.execute(sql + " ORDER BY held_seq", args)]


def _open_item(conn: sqlite3.Connection, hold_id: str) -> dict:
    """The one queue item named (one indexed read), which must still be open."""
    row = conn.execute(f"SELECT {', '.join(COLUMNS)} FROM review_queue WHERE hold_id = ?",
                       (hold_id,)).fetchone() if hold_id else None
    if row is None:
        raise LedgerError(f"no held candidate {hold_id!r} (see `factledger review`)")
    item = _item(row)
    if item["status"] != "open":
        raise LedgerError(f"held candidate {hold_id} is already {item['status']}")
    return item


def _reviewer(by: str | None, reason: str | None = None) -> dict:
    """The reviewer's name and words as the events record them (absent when not given)."""
    out = {"reviewed_by": (by or "").strip()[:200], "review_reason": (reason or "").strip()[:500]}
    return {key: value for key, value in out.items() if value}


def accept(ledger: Ledger, hold_id: str, predicate: str, *, by: str | None = None,
           reason: str | None = None) -> Outcome:
    if not predicate or not predicate.strip():
        raise LedgerError("say which predicate: --as PREDICATE")
    spec = ledger.registry.resolve(predicate)
    if spec is None:
        raise LedgerError(f"{predicate!r} is not a predicate of the registry")
    with ledger.transaction():
        item = _open_item(ledger.conn, hold_id)
        fields = dict(item["candidate"], predicate=spec.name, app=item["app"], user=item["user"])
        candidate = make_candidate(**fields)
        return ledger.append_candidate(candidate, hold_id=hold_id, review=_reviewer(by, reason))


def reject(ledger: Ledger, hold_id: str, reason: str, *, by: str | None = None) -> Outcome:
    from ..service import Outcome

    if not reason or not reason.strip():
        raise LedgerError("say why: --reason R")
    with ledger.transaction():
        item = _open_item(ledger.conn, hold_id)
        event = ledger.store.append(CandidateRejected(
            app=item["app"], user=item["user"], reason=reason.strip()[:500], rule="reviewer",
            candidate=item["candidate"], hold_id=hold_id, registry_sha256=ledger.registry.sha256,
            **_reviewer(by)))
    return Outcome("reject", None, reason.strip(), "reviewer", [event.seq])
