"""The shape every row of the events table must have, checked before anything trusts a row.

The chain vouches for an event's envelope and commitment, not for how SQLite stores each column:
a salt rewritten as TEXT or INTEGER, a body stored as a BLOB, or `redacted_by` set on a live row
are edits the chain cannot see by itself.  The first made `verify` crash; the last passed
`verify`, `replay --check` and `import` and then made every later forget of that user fail on the
table's trigger (it refuses to change `redacted_by` once set).  `verify` checks each row as it
walks the chain (`column_problem`); `replay --check` runs `first_bad_row`, the same rules in SQL.

The rules, per column: `seq` INTEGER; `event_id`, `type`, `app`, `user`, `recorded_at` TEXT;
`commitment`, `prev_hash`, `hash` TEXT of 64 lower-case hex digits; `body` TEXT (a JSON object)
or NULL; `salt` BLOB or NULL; `redacted_by` INTEGER or NULL.  A live row (body present) has a
salt and no `redacted_by`; a scrubbed row has neither body nor salt, and `redacted_by` names a
`Redacted` event whose `target_seqs` holds the row's seq.
"""

from __future__ import annotations

import sqlite3

import orjson

from factledger.ledger.domain.events import EVENT
from factledger.ledger.store.engines import engine_of

COLUMNS = ("seq", "event_id", "type", "app", "user", "recorded_at", "body", "salt", "commitment",
           "prev_hash", "hash", "redacted_by")
TEXT_COLUMNS = ("event_id", "type", "app", "user", "recorded_at", "commitment", "prev_hash", "hash")
HEX_COLUMNS = ("commitment", "prev_hash", "hash")
_SQLITE_TYPE = {int: "INTEGER", float: "REAL", str: "TEXT", bytes: "BLOB", type(None): "NULL"}


def column_problem(row: dict) -> str | None:
    """What is wrong with the storage types of one row (column name -> value), or None."""
    def kind(value) -> str:
        return _SQLITE_TYPE.get(type(value), type(value).__name__)

    if type(row["seq"]) is not int:
        return f"seq is {kind(row['seq'])}, not INTEGER"
    for name in TEXT_COLUMNS:
        if type(row[name]) is not str:
            return f"{name} is {kind(row[name])}, not TEXT"
    if row["body"] is not None and type(row["body"]) is not str:
        return f"body is {kind(row['body'])}, not TEXT or NULL"
    if row["salt"] is not None and type(row["salt"]) is not bytes:
        return f"salt is {kind(row['salt'])}, not BLOB or NULL"
    if row["redacted_by"] is not None and type(row["redacted_by"]) is not int:
        return f"redacted_by is {kind(row['redacted_by'])}, not INTEGER or NULL"
    return None


# One scan of the log, in SQL (replay --check): the first row breaking a rule above.
_HEX = "length({c}) = 64 AND NOT {c} GLOB '*[^0-9a-f]*'"
FIRST_BAD_ROW = f"""
SELECT seq, CASE
    WHEN typeof(seq) != 'integer' THEN 'seq is not INTEGER'
    {' '.join(f"WHEN typeof({c}) != 'text' THEN '{c} is not TEXT'" for c in TEXT_COLUMNS)}
    {' '.join(f"WHEN NOT ({_HEX.format(c=c)}) THEN '{c} is not lower-case hex'" for c in HEX_COLUMNS)}
    WHEN typeof(body) NOT IN ('text', 'null') THEN 'body is not TEXT or NULL'
    WHEN typeof(salt) NOT IN ('blob', 'null') THEN 'salt is not BLOB or NULL'
    WHEN typeof(redacted_by) NOT IN ('integer', 'null') THEN 'redacted_by is not INTEGER or NULL'
    WHEN body IS NOT NULL AND redacted_by IS NOT NULL THEN 'a live event has redacted_by set'
    WHEN body IS NOT NULL AND salt IS NULL THEN 'a live event has no salt'
    WHEN body IS NOT NULL AND NOT json_valid(body) THEN 'body is not JSON'
    WHEN body IS NOT NULL AND json_type(body) != 'object' THEN 'body is not a JSON object'
    WHEN body IS NULL AND (salt IS NOT NULL OR redacted_by IS NULL)
        THEN 'body is missing but the event was not redacted'
    END AS problem
FROM events WHERE problem IS NOT NULL ORDER BY seq LIMIT 1
"""


# The same scan on PostgreSQL, whose typed columns already refuse a value of another type.
FIRST_BAD_ROW_PG = f"""
SELECT seq, problem FROM (SELECT seq, CASE
    {' '.join(f"WHEN {c} !~ '^[0-9a-f]{{64}}$' THEN '{c} is not lower-case hex'" for c in HEX_COLUMNS)}
    WHEN body IS NOT NULL AND redacted_by IS NOT NULL THEN 'a live event has redacted_by set'
    WHEN body IS NOT NULL AND salt IS NULL THEN 'a live event has no salt'
    WHEN body IS NULL AND (salt IS NOT NULL OR redacted_by IS NULL)
        THEN 'body is missing but the event was not redacted'
    END AS problem FROM events) AS checked
WHERE problem IS NOT NULL ORDER BY seq LIMIT 1
"""
_FIRST_BAD_ROW = {"sqlite": FIRST_BAD_ROW, "postgresql": FIRST_BAD_ROW_PG}    # by `Engine.kind`
_REDACTIONS = {"sqlite": "typeof(body) = 'text' AND json_valid(body)", "postgresql": "body IS NOT NULL"}
_SCRUBBED = {"sqlite": "typeof(redacted_by) = 'integer'", "postgresql": "redacted_by IS NOT NULL"}


def first_bad_row(conn: sqlite3.Connection) -> tuple[int, str] | None:
    """(seq, problem) of the first row whose shape breaks the rules, or None."""
    backend = engine_of(conn).kind
    found = conn.execute(_FIRST_BAD_ROW[backend]).fetchone()
    bad = [(found[0], found[1])] if found else []
    named: dict[int, set] = {}
    for seq, body in conn.execute(f"SELECT seq, body FROM events WHERE type = '{EVENT.Redacted}' AND "
                                  + _REDACTIONS[backend]):
        try:
            targets = orjson.loads(body).get("target_seqs") if body.lstrip().startswith("{") else None
        except orjson.JSONDecodeError:
            targets = None
        named[seq] = {t for t in targets if type(t) is int} if isinstance(targets, list) else set()
    for seq, by in conn.execute("SELECT seq, redacted_by FROM events WHERE body IS NULL AND "
                                + _SCRUBBED[backend] + " ORDER BY seq"):
        if seq not in named.get(by, ()):
            bad.append((seq, "scrubbed without a Redacted event naming it"))
            break
    return min(bad) if bad else None
