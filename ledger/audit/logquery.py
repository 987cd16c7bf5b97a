"""The event log as an auditor reads it: filtered in SQL, streamed a row at a time.

`factledger log` on a million events must not build the result in memory, so this is a generator
over one cursor.  Each row carries the predicate and value its body names (None for events that
name none, or once redacted), so a table shows what an event was about without opening its body.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from factledger.ledger.domain.eventrow import body_of
from factledger.ledger.store.eventlog import equal_filters
from factledger.ledger.vocabulary.clock import normalise_time
from factledger.ledger.vocabulary.ids import normalise_optional
from factledger.projections.history import FACTS_OF_PREDICATE, fact_label
from factledger.projections.provenance import SEQS_OF_FACT, seqs_of_facts

KEYS = ("seq", "event_id", "type", "app", "user", "recorded_at", "body", "commitment",
        "prev_hash", "hash", "redacted_by")


def iter_log(conn: sqlite3.Connection, *, app: str | None = None, user: str | None = None,
             type: str | None = None, after: int = 0, limit: int | None = None,
             predicate: str | None = None, session: str | None = None, fact: str | None = None,
             since: str | None = None, until: str | None = None) -> Iterator[dict]:
    """Events in seq order matching every filter given; `since` inclusive, `until` exclusive."""
    sql = ("SELECT e.seq, e.event_id, e.type, e.app, e.user, e.recorded_at, e.body, e.commitment,"
           " e.prev_hash, e.hash, e.redacted_by FROM events e WHERE e.seq > ?")
    # every id in its one spelling, as the library's other read paths take it
    app, user = normalise_optional(app, "app"), normalise_optional(user, "user")
    session, fact = normalise_optional(session, "session"), normalise_optional(fact, "fact id")
    where, args = equal_filters(**{"e.app": app, "e.user": user, "e.type": type})
    sql += where
    args = [after, *args]
    if predicate is not None:
        sql += (" AND (json_extract(e.body, '$.predicate') = ? OR json_extract(e.body,"
                f" '$.candidate.predicate') = ? OR e.seq IN ({seqs_of_facts(FACTS_OF_PREDICATE)}))")
        args += [predicate, predicate, predicate]
    if session is not None:
        sql += " AND json_extract(e.body, '$.session') = ?"
        args.append(session)
    if fact is not None:
        sql += f" AND e.seq IN ({SEQS_OF_FACT})"
        args.append(fact)
    if since is not None:
        sql += " AND e.recorded_at >= ?"
        args.append(normalise_time(since))
    if until is not None:
        sql += " AND e.recorded_at < ?"
        args.append(normalise_time(until))
    sql += " ORDER BY e.seq"
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    known: dict[str, tuple] = {}
    for row in conn.execute(sql, args):
        item = dict(zip(KEYS, row))
        item["body"] = body = body_of(item["body"])
        item["predicate"], item["value"] = _about(conn, body, known)
        yield item


def _about(conn: sqlite3.Connection, body: dict | None, known: dict) -> tuple:
    """(predicate, value) an event is about: its own, its candidate's, or its fact's."""
    if not body:
        return None, None
    if "predicate" in body:
        return body["predicate"], body.get("value")
    candidate = body.get("candidate")
    if isinstance(candidate, dict) and "predicate" in candidate:
        return candidate.get("predicate"), candidate.get("value")
    fact_id = body.get("fact_id") or body.get("winner_id")
    if not fact_id:
        return None, None
    if fact_id not in known:
        known[fact_id] = fact_label(conn, fact_id) or (None, None)
    return known[fact_id]
