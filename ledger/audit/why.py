"""What happened to a fact, in words: what replaced, disputed or retracted it, and who resolved it.

`why` lists every event that touched a fact; an auditor also needs the other side of each event
(the value that replaced it, with its session, quote and time) and the reviewer who settled a
dispute, without running a second query per event.  This adds one `related` entry per such event.
"""

from __future__ import annotations

import sqlite3

from factledger.ledger.domain.eventrow import CLOSES_HOLD
from factledger.ledger.domain.events import EVENT
from factledger.ledger.store.reads import statement_bodies
from factledger.ledger.vocabulary.words import Rule
from factledger.projections.history import latest_statement
from factledger.projections.negations import negation_ending


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
    late = any(e["type"] == EVENT.FactObserved and (e["body"] or {}).get("rule") == Rule.BACKFILL for e in events)
    for e in events:
        body, kind, role = e["body"] or {}, e["type"], e["role"]
        entry: dict | None = None
        if kind == EVENT.FactSplit:
            out += [dict(entry, seq=e["seq"], type=kind, recorded_at=e["recorded_at"])
                    for entry in _split(conn, role, body)]
            continue
        if body.get("rule") in _LATE:
            entry = _late(conn, kind, role, body, late)
        elif kind == EVENT.FactSuperseded and role == "subject" and body.get("by_fact_id"):
            entry = {"relation": "replaced by", **_fact(conn, body["by_fact_id"])}
        elif kind == EVENT.FactSuperseded and role == "replacement":
            entry = {"relation": "replaced", **_fact(conn, body.get("fact_id"))}
        elif kind == EVENT.FactDisputed and role == "subject":
            entry = {"relation": "disputes", **_fact(conn, body.get("disputes"))}
        elif kind == EVENT.FactDisputed and role == "disputed":
            entry = {"relation": "disputed by", **_fact(conn, body.get("fact_id"))}
        elif kind == EVENT.FactRetracted:
            entry = {"relation": "retracted by", "fact_id": None, "value": None,
                     "session": body.get("session"), "quote": body.get("quote"),
                     "said_at": body.get("said_at"), "author": body.get("author")}
        elif kind == EVENT.FactNegated:
            entry = _negation(conn, fact_id, body)
        elif kind == EVENT.DisputeResolved:
            other = body.get("winner_id") if body.get("winner_id") != fact_id else None
            entry = {"relation": f"dispute resolved ({body.get('outcome')})", **_fact(conn, other),
                     "resolved_by": body.get("resolved_by"), "reason": body.get("reason")}
        elif kind == EVENT.MeaningChecked and body.get("by_fact_id"):
            entry = ({"relation": "restates (its statements count there)", **_fact(conn, body["by_fact_id"])}
                     if role == "subject" else
                     {"relation": "restated by (its statements count here)", **_fact(conn, body.get("fact_id"))})
        elif kind == EVENT.FactReinstated:
            entry = {"relation": "reinstated after erasure", "fact_id": None, "value": None,
                     "session": None, "quote": None, "said_at": None, "author": None,
                     "receipt_seq": body.get("cause")}
        if kind in CLOSES_HOLD and body.get("hold_id") and body.get("reviewed_by"):
            entry = _reviewed(entry, body)
        if entry is not None:
            entry.update(seq=e["seq"], type=kind, recorded_at=e["recorded_at"])
            out.append(entry)
    return out


def _reviewed(entry: dict | None, body: dict) -> dict:
    """A statement a reviewer accepted from the queue (a value, a negation, a reading): who, and why."""
    review = {"resolved_by": body["reviewed_by"], "reason": body.get("review_reason")}
    if entry is None:
        return {"relation": "accepted from review", "fact_id": None, "value": None, "session": None,
                "quote": None, "said_at": None, "author": None, **review}
    return {**entry, "relation": f"{entry['relation']} (accepted from review)", **review}


def _negation(conn: sqlite3.Connection, fact_id: str, body: dict) -> dict:
    """A fact learnt late, retracted by a negation the ledger had heard first: that negation."""
    seq = negation_ending(conn, fact_id, body["valid_to"])
    said = statement_bodies(conn, [seq]).get(seq, {}) if seq is not None else {}
    said = said.get("candidate", said)
    return {"relation": "retracted by a negation heard before it", "fact_id": None, "value": None,
            "session": said.get("session"), "quote": said.get("quote"),
            "said_at": said.get("said_at", body.get("valid_to")), "author": said.get("author")}


# Decisions about a statement said before the key's current fact (decide's Row 5b, "backfill").
_LATE = (Rule.BACKFILL, Rule.EARLIER_SAME_VALUE, Rule.LATE_SAME_VALUE, Rule.LATE_NEGATION)


def _split(conn: sqlite3.Connection, role: str, body: dict) -> list[dict]:
    """A fact split by a value said between two of its statements (decide's Row 5c)."""
    if role == "split" and body.get("by_fact_id") is None:   # retracted by a negation learnt late
        return [{"relation": "split from (held again later)", **_fact(conn, body.get("fact_id"))}]
    if role == "split":                  # the part before: a fact of its own, closed then
        return [{"relation": "cut short by a value learnt late", **_fact(conn, body.get("by_fact_id"))},
                {"relation": "split from (held again later)", **_fact(conn, body.get("fact_id"))}]
    if role == "subject" and body.get("by_fact_id") is None:
        return [{"relation": "held again after a retraction learnt late", **_fact(conn, body.get("split_id"))}]
    if role == "subject":                # the fact that holds again from its next statement
        return [{"relation": "held again after a value learnt late", **_fact(conn, body.get("by_fact_id"))}]
    if role == "replacement":            # the value learnt late
        return [{"relation": "cut short the value before it", **_fact(conn, body.get("split_id"))}]
    return []


def _late(conn: sqlite3.Connection, kind: str, role: str, body: dict, late: bool) -> dict | None:
    """In words for the two sides of a backfill: the value learnt late, and the ones around it."""
    said = {"fact_id": None, "value": None, "session": body.get("session"), "quote": body.get("quote"),
            "said_at": body.get("said_at"), "author": body.get("author")}
    if kind == EVENT.FactSuperseded and role == "subject":
        if late:            # this fact was learnt late: it held until the next known value
            return {"relation": "learnt late, held until", **_fact(conn, body.get("by_fact_id"))}
        return {"relation": "cut short by a value learnt late", **_fact(conn, body.get("by_fact_id"))}
    if kind == EVENT.FactSuperseded and role == "replacement":
        backfilled = _fact(conn, body.get("fact_id"))
        relation = "cut short the value before it" if late else "followed a value learnt late"
        return {"relation": relation, **backfilled}
    if kind == EVENT.FactReinforced and body.get("rule") == Rule.EARLIER_SAME_VALUE:
        return {"relation": "said earlier, learnt late (holds from then)", **said}
    if kind == EVENT.FactReinforced:
        return {"relation": "said again while it held, learnt late", **said}
    if kind == EVENT.FactRetracted:
        return {"relation": "retracted while it held, learnt late", **said}
    return None
