"""What happened to a fact, in words: what replaced, disputed or retracted it, and who resolved it.

`why` lists every event that touched a fact; an auditor also needs the other side of each event
(the value that replaced it, with its session, quote and time) and the reviewer who settled a
dispute, without running a second query per event.  This adds one `related` entry per such event.
"""

from __future__ import annotations

import sqlite3

from factledger.projections.history import latest_statement


def _fact(conn: sqlite3.Connection, fact_id: str | None) -> dict:
    row = latest_statement(conn, fact_id) if fact_id else None
    if row is None:
        return {"fact_id": fact_id, "value": None, "session": None, "quote": None, "said_at": None,
                "author": None}
    value, session, quote, said_at, author = row
    return {"fact_id": fact_id, "value": value, "session": session, "quote": quote,
            "said_at": said_at, "author": author}


def related(conn: sqlite3.Connection, fact_id: str, events: list[dict]) -> list[dict]:
    """One entry per event that links this fact to another fact, a statement or a reviewer."""
    out = []
    for e in events:
        body, kind, role = e["body"] or {}, e["type"], e["role"]
        entry: dict | None = None
        if kind == "FactSuperseded" and role == "subject" and body.get("by_fact_id"):
            entry = {"relation": "replaced by", **_fact(conn, body["by_fact_id"])}
        elif kind == "FactSuperseded" and role == "replacement":
            entry = {"relation": "replaced", **_fact(conn, body.get("fact_id"))}
        elif kind == "FactDisputed" and role == "subject":
            entry = {"relation": "disputes", **_fact(conn, body.get("disputes"))}
        elif kind == "FactDisputed" and role == "disputed":
            entry = {"relation": "disputed by", **_fact(conn, body.get("fact_id"))}
        elif kind == "FactRetracted":
            entry = {"relation": "retracted by", "fact_id": None, "value": None,
                     "session": body.get("session"), "quote": body.get("quote"),
                     "said_at": body.get("said_at"), "author": body.get("author")}
        elif kind == "DisputeResolved":
            other = body.get("winner_id") if body.get("winner_id") != fact_id else None
            entry = {"relation": f"dispute resolved ({body.get('outcome')})", **_fact(conn, other),
                     "resolved_by": body.get("resolved_by"), "reason": body.get("reason")}
        elif kind == "FactReinstated":
            entry = {"relation": "reinstated after erasure", "fact_id": None, "value": None,
                     "session": None, "quote": None, "said_at": None, "author": None,
                     "receipt_seq": body.get("cause")}
        elif body.get("hold_id") and body.get("reviewed_by"):
            entry = {"relation": "accepted from review", "fact_id": None, "value": None,
                     "session": None, "quote": None, "said_at": None, "author": None,
                     "resolved_by": body.get("reviewed_by"), "reason": body.get("review_reason")}
        if entry is not None:
            entry.update(seq=e["seq"], type=kind, recorded_at=e["recorded_at"])
            out.append(entry)
    return out
