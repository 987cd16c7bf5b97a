"""Long lists of placeholders sent to PostgreSQL as arrays, one parameter a column.

A batch's reads name many keys or ids at once: `WITH k(a, u) AS (VALUES (?,?), (?,?), ...)` and
`IN (?, ?, ...)`, written once in the SQL both engines share.  On PostgreSQL each such statement
had hundreds of parameters: psycopg parses a statement of more than 50 anew on every call (ms of
client CPU each, most of a batch's), and its text changes with the list's length, so the server
plans each anew too.  Here the rows become `SELECT * FROM unnest(?::text[], ?::text[])` and the
list `= ANY(?::text[])`: one text whatever the length, a handful of parameters.  The rows and their
order are the same (unnest keeps both); a list whose values are not all of one plain type (str,
int, float, bytes) is sent as written.  Each array goes in PostgreSQL's binary array format
(`Binary`): psycopg writes a text array in Python, a regular expression run on every element to
decide its quoting (a batch's arrays hold some 70,000 elements), and a binary one with none.
"""

from __future__ import annotations

import re
from functools import lru_cache

_ROW = r"\(\?(?:\s*,\s*\?)*\)"
# `AS (VALUES (?,..), ...)` of a WITH (never an INSERT's VALUES), or `[NOT] IN (?, ...)`
_LISTS = re.compile(rf"\bAS\s*\(\s*VALUES\s*({_ROW}(?:\s*,\s*{_ROW})*)\s*\)"
                    r"|(?<=\s)(NOT\s+)?IN\s*\(\s*(\?(?:\s*,\s*\?)*)\s*\)", re.I)
_COLUMN = re.compile(r"([\w.\"]+)\s*$")
# An IN list shorter than this is left as written (psycopg caches a statement of up to 50
# parameters); and one on `app` or `user` always, whose values PostgreSQL prunes a partitioned
# table's leaves by (an array parameter it cannot look into at planning time).
ARRAY_FROM = 16
_TYPES = {str: "text", int: "bigint", float: "double precision", bytes: "bytea"}


class Binary(list):
    """A list psycopg sends as a binary array (`backend._adapt` registers its dumper): the same
    values, with no per-element quoting to compute on the client."""


@lru_cache(maxsize=1024)
def _plan(sql: str) -> tuple[tuple[str, ...], tuple[tuple, ...]] | None:
    """The statement cut around its lists (text pieces), and what each list is: ("rows", columns,
    rows) or ("in", count, negated), each after ("plain", placeholders before it)."""
    pieces, plan, pos = [], [], 0
    for match in _LISTS.finditer(sql):
        before = sql[pos:match.start()]
        pieces.append(before)
        plan.append(("plain", before.count("?")))
        if match.group(1) is not None:
            rows = re.findall(r"\(([^)]*)\)", match.group(1))
            columns = rows[0].count("?")
            if any(row.count("?") != columns for row in rows):
                return None
            plan.append(("rows", columns, len(rows)))
        else:
            count = match.group(3).count("?")
            column = _COLUMN.search(before)
            name = column.group(1).split(".")[-1].strip('"') if column else ""
            if count < ARRAY_FROM or name in ("app", "user"):
                pieces.pop()
                plan.pop()
                continue                    # left in the text before the next list
            plan.append(("in", count, bool(match.group(2))))
        pos = match.end()
    if not plan:
        return None
    pieces.append(sql[pos:])
    return tuple(pieces), tuple(plan)


def _type(values: list) -> str | None:
    kinds = {type(v) for v in values}
    if len(kinds) != 1:
        return None
    return _TYPES.get(kinds.pop())


def rewrite(sql: str, args: tuple) -> tuple[str, tuple] | None:
    """(the statement with its lists as arrays, its arguments), or None to send it as written."""
    plan = _plan(sql)
    if plan is None:
        return None
    pieces, steps = plan
    out, new_args, at = [], [], 0
    for i, step in enumerate(steps):
        kind = step[0]
        if kind == "plain":
            out.append(pieces[i // 2])
            new_args.extend(args[at:at + step[1]])
            at += step[1]
        elif kind == "rows":
            _, columns, rows = step
            flat = args[at:at + columns * rows]
            if len(flat) != columns * rows:
                return None
            arrays = [Binary(flat[c::columns]) for c in range(columns)]
            types = [_type(a) for a in arrays]
            if None in types:
                return None
            out.append("AS (SELECT * FROM unnest(" + ", ".join(f"?::{t}[]" for t in types) + "))")
            new_args.extend(arrays)
            at += columns * rows
        else:
            _, count, negated = step
            values = Binary(args[at:at + count])
            kind_of = _type(values)
            if kind_of is None or len(values) != count:
                return None
            out.append(f"{'<> ALL' if negated else '= ANY'}(?::{kind_of}[])")
            new_args.append(values)
            at += count
    if at + pieces[-1].count("?") != len(args):
        return None
    new_args.extend(args[at:])
    out.append(pieces[-1])
    return "".join(out), tuple(new_args)
