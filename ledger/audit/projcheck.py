"""`verify`'s check of what reads serve: every projection against a rebuild from the log.

The chain walk (`ledger.audit.verify`) vouches for the log; the reads serve from the projection
tables (current facts, history intervals, the provenance index, the recall index, the review
queue, sessions, erasures, vectors, the Merkle tree).  This folds the whole log again into a
database in memory (`Projector.rebuild`, the fold `replay` runs) and compares each table with the
live one, row by row on the table's primary key, naming the first row that disagrees: a row the
log does not give, a row it gives that is missing, or the columns that differ (never their
values, which may be a health fact the caller is not cleared for).  The vectors are the one
table checked as stored rather than refolded (`projections.vectors.check`): refolding them needs
the writer's encoder, and the verdict must not depend on the checker's install.
"""

from __future__ import annotations

import sqlite3

from factledger.ledger.errors import ProjectionMismatch
from factledger.ledger.store import reads as logread
from factledger.ledger.store.engines import engine_of
from factledger.ledger.vocabulary.progress import SILENT, Progress
from factledger.projections.vectors import TABLE as VECTORS
from factledger.projections.vectors import check as check_vectors
from factledger.projections.vectors import left_out


def projection_problem(conn, projector, vectors: bool = False,
                       progress: Progress = SILENT) -> tuple[list[str], dict | None, dict]:
    """(the tables checked, the first disagreement or None, the meaning index's state).  A
    disagreement is a dict: table, row (the key columns and their values), problem (a sentence
    naming them).

    `fact_vectors` is not rebuilt but checked as stored against the rebuilt open facts
    (`projections.vectors.check`: one row per open fact under its keys, a well-formed encoder
    identity and dimension), so the verdict is the same whatever encoder the checker has, or
    none; the vectors themselves are recomputed only with `vectors` and only where this
    install's encoder made them (an embedding per open fact: most of a full check's time at
    100k events, docs/performance.md).  A vector only ranks facts; what a fact says is checked
    either way.  `progress` hears of three stages: the rebuild (events), the comparison
    (tables), the vectors recomputed (with `vectors`)."""
    fresh = sqlite3.connect(":memory:", isolation_level=None, uri=True)
    meaning: dict = {}
    try:
        projector.create(fresh)
        fresh.execute("BEGIN")
        progress.stage("rebuilding the projections", logread.count(conn))
        with left_out(projector):
            projector.rebuild(fresh, source=conn, progress=progress.update)
        fresh.execute("COMMIT")
        tables = list(projector.all_tables)
        progress.stage("comparing them with the live tables", len(tables))
        # The live file attached, read-only, to the rebuilt database when the engine can lend it
        # (a SQLite file; PostgreSQL's rows are compared row by row): a table that agrees is then
        # found so inside SQLite, no row becoming a Python object; only one that does not is
        # read row by row, on the caller's own connection and snapshot, to name its first
        # disagreement (or to find none: a writer may have committed between the two reads).
        engine = engine_of(conn)
        attached = engine.attach_live(conn, fresh)
        for number, table in enumerate(tables):
            if table == VECTORS:
                found, meaning = check_vectors(conn, fresh, recompute=vectors, progress=progress)
                if vectors:                    # a stage of its own: the comparison goes on after it
                    progress.stage("comparing them with the live tables", len(tables) - number)
            elif attached and engine.same_rows(fresh, table):
                found = None
            else:
                found = _first_difference(conn, fresh, table)
            progress.update(1)
            if found is not None:
                return tables, found, meaning
        return tables, None, meaning
    finally:
        fresh.close()


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
    try:
        projector.create(fresh)
        fresh.execute("BEGIN")
        with left_out(projector):             # nothing is embedded: the vectors are not what is checked
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
