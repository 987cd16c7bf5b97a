"""`serves` and `served_facts`: the serve records (`FactsServed`) as rows, for `served` and `facts --served`.

One fold, partitioned by `(app, user)` like every other: a forget's rebuild of a partition drops
the rows of the records it scrubbed and the masked copies it appends fold back in, so the counts
survive an erasure while the hashes do not.  `serves` is one row per serve (what `served` lists);
`served_facts` one row per fact a serve handed out (what `served --fact` and `facts --served`
count).  The reads of both, and of the provenance a serve records, live here too.
"""

from __future__ import annotations

import sqlite3

import orjson

from factledger.ledger.domain.eventrow import Event
from factledger.ledger.domain.events import EVENT

SCHEMA = """
CREATE TABLE IF NOT EXISTS serves (
    seq INTEGER PRIMARY KEY, app TEXT NOT NULL, user TEXT NOT NULL, served_at TEXT NOT NULL,
    caller TEXT NOT NULL, surface TEXT NOT NULL, tool TEXT NOT NULL, clearance TEXT NOT NULL,
    users TEXT NOT NULL, facts INTEGER NOT NULL, withheld TEXT NOT NULL, text_sha256 TEXT,
    query_sha256 TEXT, head_seq INTEGER NOT NULL, restates INTEGER
);
CREATE INDEX IF NOT EXISTS serves_partition ON serves (app, user, served_at);
CREATE TABLE IF NOT EXISTS served_facts (
    seq INTEGER NOT NULL, app TEXT NOT NULL, user TEXT NOT NULL, fact_id TEXT NOT NULL,
    position INTEGER NOT NULL, PRIMARY KEY (seq, position)
);
CREATE INDEX IF NOT EXISTS served_facts_fact ON served_facts (app, user, fact_id);
"""

SERVE_FIELDS = ("seq", "app", "user", "served_at", "caller", "surface", "tool", "clearance", "users",
                "facts", "withheld", "text_sha256", "query_sha256", "head_seq", "restates")


class ServesProjection:
    name = "serves"
    tables = ("serves", "served_facts")
    schema = SCHEMA
    depends_on: tuple[str, ...] = ()

    # the events `apply` acts on (a rebuild hands it no others: projections/runner.py)
    event_types = frozenset((EVENT.FactsServed,))

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        body = event.body
        if body is None or event.type != EVENT.FactsServed:
            return
        facts = body.get("facts") or []
        conn.execute(
            "INSERT OR REPLACE INTO serves VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (event.seq, event.app, event.user, body.get("served_at") or event.recorded_at, body["caller"],
             body["surface"], body.get("tool", "recall"), body["clearance"], orjson.dumps(body["users"]).decode(),
             len(facts), orjson.dumps(body.get("withheld") or {}, option=orjson.OPT_SORT_KEYS).decode(),
             body.get("text_sha256"), body.get("query_sha256"), body["head_seq"], body.get("restates")))
        conn.executemany("INSERT OR REPLACE INTO served_facts VALUES (?,?,?,?,?)",
                         [(event.seq, event.app, event.user, f["fact_id"], i) for i, f in enumerate(facts)])


def serve_rows(conn: sqlite3.Connection, app: str, user: str, *, since: str | None = None,
               until: str | None = None, caller: str | None = None, fact: str | None = None,
               surface: str | None = None) -> list[dict]:
    """The serves of one partition, oldest first, each with the ids of the facts it handed out."""
    where, args = ["s.app = ?", "s.user = ?"], [app, user]
    for column, op, value in (("served_at", ">=", since), ("served_at", "<=", until),
                              ("caller", "=", caller), ("surface", "=", surface)):
        if value is not None:
            where.append(f"s.{column} {op} ?")
            args.append(value)
    if fact is not None:
        where.append("EXISTS (SELECT 1 FROM served_facts f WHERE f.seq = s.seq AND f.fact_id = ?)")
        args.append(fact)
    rows = conn.execute(f"SELECT {', '.join('s.' + c for c in SERVE_FIELDS)} FROM serves s "
                        f"WHERE {' AND '.join(where)} ORDER BY s.seq", args).fetchall()
    out = [dict(zip(SERVE_FIELDS, row)) for row in rows]
    ids = _fact_ids(conn, [r["seq"] for r in out])
    for row in out:
        row["users"] = orjson.loads(row["users"])
        row["withheld"] = orjson.loads(row["withheld"])
        row["fact_ids"] = ids.get(row["seq"], [])
    return out


def _fact_ids(conn: sqlite3.Connection, seqs: list[int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for start in range(0, len(seqs), 500):
        chunk = seqs[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for seq, fact_id in conn.execute(f"SELECT seq, fact_id FROM served_facts WHERE seq IN ({marks}) "
                                         "ORDER BY seq, position", chunk):
            out.setdefault(seq, []).append(fact_id)
    return out


def served_counts(conn: sqlite3.Connection, app: str, users: list[str]) -> dict[str, int]:
    """fact_id -> how many serves handed it out, over the serves recorded in these partitions."""
    marks = ",".join("?" * len(users))
    return dict(conn.execute(f"SELECT fact_id, count(*) FROM served_facts WHERE app = ? AND user IN ({marks}) "
                             "GROUP BY fact_id", [app, *users]).fetchall())


def establishing_seqs(conn: sqlite3.Connection, fact_ids: list[str], upto: int) -> dict[str, list[int]]:
    """fact_id -> the seqs of the events that had touched it up to `upto` (`fact_events`): the
    provenance of the value a serve handed out."""
    out: dict[str, list[int]] = {f: [] for f in fact_ids}
    for start in range(0, len(fact_ids), 500):
        chunk = fact_ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for fact_id, seq in conn.execute(f"SELECT DISTINCT fact_id, seq FROM fact_events WHERE fact_id IN ({marks}) "
                                         "AND seq <= ? ORDER BY seq", [*chunk, upto]):
            out[fact_id].append(seq)
    return out


def fact_classes(conn: sqlite3.Connection, app: str, fact_ids: list[str]) -> dict[str, tuple[str, str, str]]:
    """fact_id -> (sensitivity, subject, predicate) as its history has it; an erased fact has none."""
    out: dict[str, tuple[str, str, str]] = {}
    ids = sorted(set(fact_ids))
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for fact_id, sensitivity, subject, predicate in conn.execute(
                f"SELECT fact_id, sensitivity, subject, predicate FROM fact_history WHERE app = ? "
                f"AND fact_id IN ({marks})", [app, *chunk]):
            out[fact_id] = (sensitivity, subject, predicate)
    return out


def drop_serves(conn: sqlite3.Connection, seqs: list[int]) -> None:
    """Remove the rows of these serve records (scrubbed by a forget outside the partitions it
    rebuilds): what a rebuild of their partitions would fold, without refolding them."""
    wanted = sorted(set(seqs))
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for table in ("served_facts", "serves"):
            conn.execute(f"DELETE FROM {table} WHERE seq IN ({marks})", chunk)
