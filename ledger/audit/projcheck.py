"""`verify`'s check of what reads serve: every projection against a rebuild from the log.

The chain walk (`ledger.audit.verify`) vouches for the log; the reads serve from the projection
tables (current facts, history intervals, the provenance index, the recall index, the review
queue, sessions, erasures, vectors, the Merkle tree).  This folds the whole log again into a
database in memory (`Projector.rebuild`, the fold `replay` runs) and compares each table with the
live one, row by row on the table's primary key, naming the first row that disagrees: a row the
log does not give, a row it gives that is missing, or the columns that differ (never their
values, which may be a health fact the caller is not cleared for).
"""

from __future__ import annotations

import sqlite3
from functools import partial

from factledger.ledger.errors import ProjectionMismatch
from factledger.ledger.semantic import embedder as encoders
from factledger.ledger.store.engines import engine_of
from factledger.projections.base import OPEN_FACTS
from factledger.projections.vectors import vector_width


def projection_problem(conn, projector, vectors: bool = False) -> tuple[list[str], dict | None]:
    """(the tables checked, the first disagreement or None).  A disagreement is a dict: table,
    row (the key columns and their values), problem (a sentence naming them).

    `fact_vectors` is rebuilt as to which open facts have a vector, under which keys and which
    encoder; the vectors themselves are recomputed only with `vectors` (an embedding per open
    fact: most of a full check's time at 100k events, docs/performance.md), and otherwise taken
    as stored.  A vector only ranks facts; what a fact says is checked either way."""
    fresh = sqlite3.connect(":memory:", isolation_level=None, uri=True)
    stand_in = next((p for p in projector.projections if getattr(p, "name", None) == "vectors"), None)
    if stand_in is not None and not vectors:
        stand_in.rebuild_partition = partial(_stored_vectors, conn, encoders.identity())
    try:
        projector.create(fresh)
        fresh.execute("BEGIN")
        projector.rebuild(fresh, source=conn)
        fresh.execute("COMMIT")
        tables = list(projector.all_tables)
        # The live file attached, read-only, to the rebuilt database when the engine can lend it
        # (a SQLite file; PostgreSQL's rows are compared row by row): a table that agrees is then
        # found so inside SQLite, no row becoming a Python object; only one that does not is
        # read row by row, on the caller's own connection and snapshot, to name its first
        # disagreement (or to find none: a writer may have committed between the two reads).
        engine = engine_of(conn)
        attached = engine.attach_live(conn, fresh)
        for table in tables:
            if attached and engine.same_rows(fresh, table):
                continue
            found = _first_difference(conn, fresh, table)
            if found is not None:
                return tables, found
        return tables, None
    finally:
        fresh.close()
        if stand_in is not None and "rebuild_partition" in vars(stand_in):
            del stand_in.rebuild_partition


def check_partitions(conn, projector, partitions, tables: tuple[str, ...]) -> None:
    """Raise `ProjectionMismatch` unless each of `tables` holds, for each (app, user) of
    `partitions`, exactly the rows a fold of that partition's events gives: what an action serves
    from a projection that `served` does not check fact by fact (a partition's sessions and their
    digests, the erasure receipts) is checked so before it leaves.  The cost is a fold of those
    partitions' events into a database in memory, not of the log."""
    partitions = sorted(set(partitions))
    if not partitions:
        return
    fresh = sqlite3.connect(":memory:", isolation_level=None, uri=True)
    stand_in = next((p for p in projector.projections if getattr(p, "name", None) == "vectors"), None)
    if stand_in is not None:
        stand_in.rebuild_partition = partial(_stored_vectors, conn, encoders.identity())
    try:
        projector.create(fresh)
        fresh.execute("BEGIN")
        for app, user in partitions:
            projector.rebuild(fresh, source=conn, app=app, user=user)
        fresh.execute("COMMIT")
        for table in tables:
            columns = [row[1] for row in fresh.execute(f"PRAGMA table_info({table})")]
            listed = ", ".join(columns)
            for app, user in partitions:
                sql = f"SELECT {listed} FROM {table} WHERE app = ? AND user = ?"
                live = sorted(_plain(conn.execute(sql, (app, user)).fetchall()), key=repr)
                rebuilt = sorted(fresh.execute(sql, (app, user)).fetchall(), key=repr)
                if [tuple(r) for r in live] != rebuilt:
                    raise ProjectionMismatch(table, None, None, f"its rows of {app}/{user} are not what the log gives")
    finally:
        fresh.close()
        if stand_in is not None and "rebuild_partition" in vars(stand_in):
            del stand_in.rebuild_partition


def _stored_vectors(live, identity: str | None, conn, events, state: dict) -> None:
    """The vectors projection's rebuild of a partition (`projections.vectors`), with each open
    fact's vector read from the live table instead of computed (b"" where it has none)."""
    open_facts = state[OPEN_FACTS]
    if not open_facts or identity is None:
        return
    seqs = sorted(s["observed_seq"] for s in open_facts.values())
    stored: dict[int, bytes] = {}
    width = vector_width()
    for start in range(0, len(seqs), 500):
        chunk = seqs[start:start + 500]
        # a vector of another width than the encoder's is not taken as stored: the rebuilt row
        # then differs from the live one, and plain `verify` names it (a recall would refuse it)
        stored.update((seq, bytes(vector)) for seq, vector in live.execute(
            f"SELECT seq, vector FROM fact_vectors WHERE seq IN ({', '.join('?' for _ in chunk)})", chunk)
            if len(bytes(vector)) == width)
    conn.executemany("INSERT OR REPLACE INTO fact_vectors VALUES (?,?,?,?,?,?,?)", sorted(
        (s["observed_seq"], s["fact_id"], s["app"], s["user"], s["predicate"], identity,
         stored.get(s["observed_seq"], b"")) for s in open_facts.values()))


def _first_difference(conn, fresh: sqlite3.Connection, table: str) -> dict | None:
    info = fresh.execute(f"PRAGMA table_info({table})").fetchall()
    columns = [row[1] for row in info]
    key = [row[1] for row in sorted(info, key=lambda r: r[5]) if row[5]] or columns
    listed = ", ".join(columns)
    # The common case, a table that agrees, compared as two lists in key order (one C-level
    # comparison, no per-row Python work); only a table that does not is keyed row by row to
    # name its first disagreement (an engine whose order differs lands there too, and agrees).
    ordered = f"SELECT {listed} FROM {table} ORDER BY {', '.join(key)}"
    if _plain(conn.execute(ordered).fetchall()) == fresh.execute(ordered).fetchall():
        return None
    live, rebuilt = _keyed(conn, table, listed, columns, key), _keyed(fresh, table, listed, columns, key)
    if live == rebuilt:
        return None
    for k in sorted(set(live) | set(rebuilt), key=repr):
        a, b = live.get(k), rebuilt.get(k)
        if a == b:
            continue
        named = dict(zip(key, k))
        where = ", ".join(f"{name} {value}" for name, value in named.items() if name in _SHOWN_KEYS) \
            or ", ".join(named)
        if a is None:
            what = "a row the log gives is missing"
        elif b is None:
            what = "a row the log does not give"
        else:
            if len(a) != len(b):
                what = f"{len(a)} rows where the log gives {len(b)}"
            else:
                differ = sorted({c for ra, rb in zip(a, b) for c, x, y in zip(columns, ra, rb) if x != y})
                what = f"{', '.join(differ)} not what the log gives"
        return {"table": table, "row": {n: v for n, v in named.items() if n in _SHOWN_KEYS},
                "problem": f"{table} ({where}): {what}"}
    return None


# Key columns a message may show (ids and seqs; a row keyed on its values is named by its columns).
_SHOWN_KEYS = ("fact_id", "seq", "from_seq", "role", "hold_id", "session", "app", "user", "level",
               "idx", "index", "position", "name", "kind", "hash", "event_seq", "redaction_seq")


def _plain(rows: list) -> list[tuple]:
    """Rows as tuples with BLOBs as bytes (PostgreSQL's driver gives memoryviews and its own row
    type), so that they compare equal to SQLite's."""
    if rows and any(isinstance(v, memoryview) for v in rows[0]):
        return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in rows]
    return rows


def _keyed(conn, table: str, listed: str, columns: list[str], key: list[str]) -> dict:
    """key -> the sorted rows with that key (one, for a table with a primary key); rows as
    tuples, BLOBs as bytes (PostgreSQL's driver gives memoryviews)."""
    rows = _plain(conn.execute(f"SELECT {listed} FROM {table}").fetchall())
    positions = [columns.index(k) for k in key]
    if len(positions) == 1:
        p = positions[0]
        out = {}
        for row in rows:
            if out.setdefault((row[p],), [row])[0] is not row:
                out[(row[p],)].append(row)
    else:
        out = {}
        for row in rows:
            out.setdefault(tuple(row[p] for p in positions), []).append(row)
    for found in out.values():
        if len(found) > 1:
            found.sort(key=repr)
    return out
