"""Read queries over the projections, returning rows with the public field names (FACT_FIELDS).

Two paths, kept apart on purpose: the current-state path reads `facts_current`; the historical
path (`--as-of`, `--valid-at`, `history`) reads `fact_history`, where every closed value is
labelled with its state and dates, so a superseded value is never served as current.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

import orjson

from factledger.ledger.domain.confidence import effective_confidence
from factledger.ledger.domain.eventrow import body_of
from factledger.ledger.errors import LedgerError
from factledger.ledger.store import reads as logread
from factledger.ledger.vocabulary.clock import normalise_time, parse_time
from factledger.projections.factcolumns import FACT_FIELDS
from factledger.projections.provenance import touching

HISTORY_FIELDS = FACT_FIELDS + ("state", "valid_from", "valid_to", "recorded_from",
                                "recorded_to", "ended_by", "reason")
_STORED = [f for f in FACT_FIELDS if f not in ("effective_confidence", "status")]
_TRUE_STATES = ("current", "disputed", "superseded", "retracted")


def _fact(row: sqlite3.Row, now: datetime, status_column: str = "status") -> dict:
    fact = {name: row[name] for name in _STORED}
    fact["status"] = row[status_column]
    fact["disputes"] = orjson.loads(row["disputes"])
    fact["effective_confidence"] = effective_confidence(row["confidence"], row["confirmed_at"], now)
    return {name: fact[name] for name in FACT_FIELDS}


def _key_filter(subject: str | None, predicate: str | None, registry=None) -> tuple[str, list]:
    sql, args = "", []
    if subject:
        sql += " AND subject = ?"
        args.append(subject)
    if predicate:
        spec = registry.resolve(predicate) if registry else None
        sql += " AND predicate = ?"
        args.append(spec.name if spec else predicate)
    return sql, args


def facts(conn: sqlite3.Connection, app: str, user: str, *, now: datetime,
          subject: str | None = None, predicate: str | None = None, as_of: str | None = None,
          valid_at: str | None = None, include_sensitive: bool = False, registry=None,
          kinds: tuple[str, ...] | None = None) -> list[dict]:
    """Open facts now; or, with `as_of` / `valid_at`, what was believed / true at that time;
    `kinds`: only facts of those kinds."""
    where, args = _key_filter(subject, predicate, registry)
    if kinds:
        where += f" AND kind IN ({', '.join('?' for _ in kinds)})"
        args.extend(kinds)
    if not include_sensitive:
        where += " AND sensitivity != 'health'"
    if as_of is None and valid_at is None:
        rows = _named(conn).execute(
            "SELECT * FROM facts_current WHERE app = ? AND user = ?" + where +
            " ORDER BY subject, predicate, said_at, fact_id", [app, user, *args]).fetchall()
        return [_fact(r, now) for r in rows]
    return _bitemporal(conn, app, user, where, args, as_of, valid_at)


def _named(conn: sqlite3.Connection) -> sqlite3.Cursor:
    """A cursor whose rows are `sqlite3.Row` (by name); the connection's own factory stays as it is."""
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    return cursor


def _bitemporal(conn, app, user, where, args, as_of, valid_at) -> list[dict]:
    sql = "SELECT * FROM fact_history WHERE app = ? AND user = ?" + where
    params = [app, user, *args]
    if as_of is not None:
        at = normalise_time(as_of)
        sql += " AND recorded_from <= ? AND (recorded_to IS NULL OR recorded_to > ?)"
        params += [at, at]
    else:
        sql += " AND recorded_to IS NULL"
    if valid_at is not None:
        at = normalise_time(valid_at)
        states = _TRUE_STATES
        sql += " AND valid_from <= ? AND (valid_to IS NULL OR valid_to > ?)"
        params += [at, at]
    else:
        states = ("current", "disputed")
    sql += f" AND state IN ({', '.join('?' for _ in states)})"
    params += list(states)
    rows = conn.execute(sql.replace("SELECT *", f"SELECT {_HISTORY_SELECT}", 1) +   # tuples, in that order
                        " ORDER BY subject, predicate, said_at, fact_id", params).fetchall()
    result = _history_rows(rows, parse_time(as_of or valid_at))
    return _latest_readings(result) if valid_at is not None else result


# `--as-of` / `--valid-at` read tuples, not sqlite3.Row (a long history returns hundreds of rows,
# and name lookups on Row were most of the call): the columns of `_history_row`'s dict, in its
# key order, without effective_confidence (computed) and with `cardinality` last.
_HISTORY_SELECT = ", ".join(["state" if f == "status" else f for f in FACT_FIELDS
                             if f != "effective_confidence"]
                            + list(HISTORY_FIELDS[len(FACT_FIELDS):]) + ["cardinality"])
_HISTORY_KEYS = HISTORY_FIELDS + ("_cardinality",)
_EFFECTIVE = FACT_FIELDS.index("effective_confidence")
_CONFIDENCE = FACT_FIELDS.index("confidence")
_CONFIRMED = FACT_FIELDS.index("confirmed_at") - 1          # before effective_confidence is in
_DISPUTES = FACT_FIELDS.index("disputes")
assert _CONFIDENCE < _EFFECTIVE <= _CONFIRMED < _DISPUTES


def _history_rows(rows: list[tuple], now: datetime) -> list[dict]:
    """What `_history_row` gives for each row (same keys, same order, same values); the effective
    confidence is computed once per (confidence, confirmed_at) of the call."""
    effective: dict[tuple, float] = {}
    out = []
    for row in rows:
        values = list(row)
        key = (values[_CONFIDENCE], values[_CONFIRMED])
        found = effective.get(key)
        if found is None:
            found = effective[key] = effective_confidence(key[0], key[1], now)
        values.insert(_EFFECTIVE, found)
        values[_DISPUTES] = orjson.loads(values[_DISPUTES])
        out.append(dict(zip(_HISTORY_KEYS, values)))
    return out


def _latest_readings(rows: list[dict]) -> list[dict]:
    """At a point in valid time a series key holds one reading: the latest one before it."""
    latest: dict[tuple, dict] = {}
    out = []
    for row in rows:
        if row.get("_cardinality") == "series":
            key = (row["subject"], row["predicate"])
            if key not in latest or (row["effective_date"] or "") >= (latest[key]["effective_date"] or ""):
                latest[key] = row
        else:
            out.append(row)
    out += latest.values()
    for row in out:
        row.pop("_cardinality", None)
    return sorted(out, key=lambda r: (r["subject"], r["predicate"], r["said_at"], r["fact_id"]))


def _history_row(row: sqlite3.Row, now: datetime) -> dict:
    out = _fact(row, now, status_column="state")
    for name in HISTORY_FIELDS[len(FACT_FIELDS):]:
        out[name] = row[name]
    out["_cardinality"] = row["cardinality"]
    return out


def history(conn: sqlite3.Connection, app: str, user: str, *, subject: str | None = None,
            predicate: str | None = None, registry=None, now: datetime | None = None) -> list[dict]:
    """Every interval of every fact of the partition: the audit view, closed values labelled."""
    where, args = _key_filter(subject, predicate, registry)
    rows = _named(conn).execute(
        "SELECT * FROM fact_history WHERE app = ? AND user = ?" + where +
        " ORDER BY subject, predicate, said_at, fact_id, from_seq", [app, user, *args]).fetchall()
    result = [_history_row(r, now or parse_time(r["recorded_from"])) for r in rows]
    for row in result:
        row.pop("_cardinality")
    return result


def why(conn: sqlite3.Connection, fact_id: str, *, now: datetime) -> dict:
    """A fact's whole provenance: what said it, and every event that touched it, in order."""
    row = _named(conn).execute("SELECT * FROM fact_history WHERE fact_id = ? AND recorded_to IS NULL",
                               (fact_id,)).fetchone()
    if row is None:
        raise LedgerError(f"no fact {fact_id!r} in this ledger")
    fact = _fact(row, now, status_column="state")
    fact["valid_from"], fact["valid_to"] = row["valid_from"], row["valid_to"]
    touched = touching(conn, fact_id)
    rows = logread.rows_at(conn, [seq for seq, _role in touched])
    events = []
    for seq, role in touched:
        event_id, type_, recorded_at, body = rows[seq]
        events.append({"seq": seq, "event_id": event_id, "type": type_, "role": role,
                       "recorded_at": recorded_at, "body": body_of(body)})
    return {"fact": fact, "events": events}


def stats(conn: sqlite3.Connection) -> dict:
    one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
    facts_total = one("SELECT COUNT(DISTINCT fact_id) FROM fact_history")
    fact_events = one("SELECT COUNT(DISTINCT seq) FROM fact_events")
    log = logread.counts(conn)
    return {
        "events": log["events"],
        "facts": facts_total,
        "open_facts": one("SELECT COUNT(*) FROM facts_current"),
        "current_facts": one("SELECT COUNT(*) FROM facts_current WHERE status = 'current'"),
        "disputed_facts": one("SELECT COUNT(*) FROM facts_current WHERE status = 'disputed'"),
        "held_candidates": one("SELECT COUNT(*) FROM review_queue WHERE status = 'open'"),
        "partitions": log["partitions"],
        "redacted_events": log["redacted"],
        "events_per_fact": round(fact_events / facts_total, 3) if facts_total else 0.0,
        "events_by_type": log["by_type"],
    }


def key_kind(conn: sqlite3.Connection, app: str, user: str, predicate: str) -> str | None:
    """The kind the partition's facts of an open key were recorded with (None if it has none):
    a later statement of the key that names no kind is decided under the same kind's rules."""
    for table in ("facts_current", "fact_history"):
        row = conn.execute(f"SELECT kind FROM {table} WHERE app = ? AND user = ? AND predicate = ? LIMIT 1",
                           (app, user, predicate)).fetchone()
        if row is not None:
            return row[0]
    return None
