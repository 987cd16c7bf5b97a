"""After a forget on PostgreSQL: VACUUM the tables the scrub touched, and say what it left.

A VACUUM cannot remove a row version an open snapshot may still see, so each table is vacuumed
again for about a second while any are left, and what is still held back is counted in the
receipt (`held_back`, read from VACUUM VERBOSE's own report) rather than claimed purged.  On a
partitioned ledger only the leaves holding the forgotten partitions are vacuumed.  The
projections' leaves skip their indexes (`INDEX_CLEANUP OFF`: the cost follows the pages the
scrub dirtied, not the leaf; the index entries left point at dead line pointers no scan returns,
and the receipt and `residue` say so); the log's leaves keep theirs (`INDEX_CLEANUP ON`,
`PARALLEL 0`), since the dead line pointers `OFF` leaves made every later forget read more of
the leaf.  `vacuum_rebuilt` vacuums a full replay's churn.  Why and the measurements:
docs/decisions.md, "PostgreSQL partitioning"; docs/performance.md.
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor

from factledger.ledger.errors import LedgerError
from factledger.ledger.store.postgres.backend import connect
from factledger.ledger.store.postgres.partitions import leaves_of
from factledger.ledger.store.postgres.statistics import reanalyze, vacuum_catalog

INDEX_ENTRIES = "left until a VACUUM cleans the indexes"   # the receipt's word on them (above)
# The receipt's word on a plain VACUUM's bytes: it frees the old versions' space, never zeroes it.
BYTES_LEFT = "remain in freed page space until the next VACUUM FULL (`forget --vacuum`, or the operator's)"
# `ledger_meta` key set while a forget's rewrite is owed (a plain VACUUM, or a table whose lock a
# FULL could not have), cleared by a forget that rewrote every table; `residue` reads it.
DEFERRED_KEY = "vacuum_deferred"
# How long a forget's VACUUM FULL waits for a table's lock: past it the table gets a plain VACUUM
# and the receipt says so; waiting on a long reader would queue every other reader behind it.
FULL_LOCK_WAIT = "5s"
ATTEMPTS = 40              # about two seconds: past the statistics' one-second flush interval
PAUSE_S = 0.05

_FINISHED = re.compile(r'finished vacuuming "(?:[^"]*?\.)?([^."]+)\.([^."]+)"')
_HELD = re.compile(r"(\d+) are dead but not yet removable")
_LOG_LEAF = re.compile(r"events_p\d+")       # a leaf of the partitioned log (partitions.leaf)


def vacuum_tables(conn, tables, full: bool = False, attempts: int = ATTEMPTS, partitions=None) -> dict:
    """VACUUM each table, outside any transaction, again while dead row versions remain;
    `held_back` counts those still there at the end.  FULL rewrites each table into new files
    once (it reports no dead rows to check, and a second rewrite would cost as much again), the
    default after a forget (`PostgresEngine.purge`).
    `partitions` ((app, user) pairs): of a partitioned table only the leaves holding them.  A
    table whose lock FULL cannot have within FULL_LOCK_WAIT gets the plain pass instead
    (`not_rewritten`)."""
    tables = tuple(tables)
    targets = list(tables)
    parent = {}
    if partitions is not None:
        leaves, plain = leaves_of(conn, tables, partitions)
        parent = {name: name.rsplit("_p", 1)[0] for name in leaves}
        targets = plain + leaves
    if full:
        # of a partitioned table only the leaves holding `partitions`: every old row version the
        # scrub left is there (ledger/forget/erase.py, `changed_partitions`)
        busy = _rewrite(conn, targets)
        result = {"vacuumed": True, "full": True, "tables": len(tables)}
        if parent:
            result["leaves"] = len(parent)
        if busy:
            result = vacuum_tables(conn, busy, attempts=attempts)
            result.update(tables=len(tables), not_rewritten=list(dict.fromkeys(parent.get(t, t) for t in busy)))
        return _statistics(conn, tables, result, full)
    pending, left = tuple(targets), {}
    for _attempt in range(max(1, attempts)):
        left = vacuum_pass(conn, pending)
        pending = tuple(t for t in pending if left.get(t))
        if not pending:
            break
        time.sleep(PAUSE_S)
    result = {"vacuumed": True, "full": False, "tables": len(tables), "index_entries": INDEX_ENTRIES,
              "bytes": BYTES_LEFT}
    if parent:
        result["leaves"] = len(parent)
    if pending:
        result["held_back"] = sum(left[t] for t in pending)
        result["held_back_tables"] = list(dict.fromkeys(parent.get(t, t) for t in pending))
    return _statistics(conn, tables, result, full)


def _rewrite(conn, tables) -> list[str]:
    """VACUUM FULL each table, waiting at most FULL_LOCK_WAIT for its lock; the tables it could
    not have (a long transaction held them), to be vacuumed plainly instead."""
    import psycopg

    busy = []
    wait = conn.raw.execute("SHOW lock_timeout").fetchone()[0]
    conn.raw.execute("SELECT set_config('lock_timeout', %s, false)", (FULL_LOCK_WAIT,))
    try:
        for table in tables:
            try:
                conn.raw.execute(f"VACUUM (FULL) {table}")
            except psycopg.errors.LockNotAvailable:
                busy.append(table)
    finally:
        conn.raw.execute("SELECT set_config('lock_timeout', %s, false)", (wait,))
    return busy


def mark_deferred(conn, deferred: bool) -> None:
    """Record whether a rewrite is owed (`DEFERRED_KEY`), for `residue`; a ledger without
    `ledger_meta` (made by an early version) records nothing."""
    if conn.raw.execute("SELECT to_regclass(%s)", (f'"{conn.schema}".ledger_meta',)).fetchone()[0] is None:
        return
    if deferred:
        conn.raw.execute("INSERT INTO ledger_meta (key, value) VALUES (%s, 'true') ON CONFLICT (key) DO NOTHING",
                         (DEFERRED_KEY,))
    else:
        conn.raw.execute("DELETE FROM ledger_meta WHERE key = %s", (DEFERRED_KEY,))


def deferred(conn) -> bool:
    """Whether a forget's rewrite is owed (`mark_deferred`)."""
    if conn.raw.execute("SELECT to_regclass(%s)", (f'"{conn.schema}".ledger_meta',)).fetchone()[0] is None:
        return False
    return conn.raw.execute("SELECT 1 FROM ledger_meta WHERE key = %s", (DEFERRED_KEY,)).fetchone() is not None


def vacuum_pass(conn, tables) -> dict[str, int]:
    """One VACUUM (VERBOSE) of the tables, one statement for the log's leaves (their indexes
    cleaned) and one for the rest (indexes skipped: see above); table -> the dead row versions it
    could not remove (its TOAST table's included), as VACUUM reported them."""
    if not tables:
        return {}
    notes: list[str] = []

    def note(diagnostic) -> None:
        notes.append(diagnostic.message_primary or "")

    log_leaves = [t for t in tables if _LOG_LEAF.fullmatch(t)]
    others = [t for t in tables if t not in log_leaves]
    conn.raw.add_notice_handler(note)
    try:
        if log_leaves:
            conn.raw.execute(f"VACUUM (VERBOSE, INDEX_CLEANUP ON, PARALLEL 0) {', '.join(log_leaves)}")
        if others:
            conn.raw.execute(f"VACUUM (VERBOSE, INDEX_CLEANUP OFF) {', '.join(others)}")
    finally:
        conn.raw.remove_notice_handler(note)
    held: dict[str, int] = {}
    current = None
    for text in notes:
        finished = _FINISHED.search(text)
        count = _HELD.search(text)
        if not finished or not count:
            continue
        schema, name = finished.groups()
        if schema != "pg_toast":
            current = name
        if current is not None:
            held[current] = held.get(current, 0) + int(count.group(1))
    unread = [t for t in tables if t not in held]
    if unread:                    # a report not read: the statistics' count instead
        held.update({t: 0 for t in unread})
        held.update(dead_rows(conn, unread))
    return {t: n for t, n in held.items() if n}


def vacuum_rebuilt(conn, tables, jobs: int = 1) -> None:
    """A plain VACUUM of the tables a full replay rewrote, once its transaction has committed (a
    VACUUM cannot run inside one: a replay inside a caller's transaction leaves it to autovacuum).

    `jobs` above 1 (`replay --jobs N`): that many sessions, each a server process of its own,
    VACUUM side by side, the tables dealt largest first to the session with the least to do.
    The VACUUM is serial time after the commit at any number of jobs; side by side it is about
    the largest table's (fact_history, half of the projections' pages) instead of all of them."""
    if not tables or conn.in_transaction:
        return
    lots = _dealt(conn, tables, jobs) if jobs > 1 else [list(tables)]
    if len(lots) == 1:
        conn.raw.execute(f"VACUUM {', '.join(lots[0])}")
        return
    mine, others = lots[0], []
    # the replay's own wait for a lock (`--busy-timeout`), not the default, in every session
    wait = conn.raw.execute("SHOW lock_timeout").fetchone()[0]
    try:
        for lot in lots[1:]:
            try:
                session = connect(conn.location, create=False)
            except LedgerError:          # no session to spare (max_connections): this one does it
                mine = mine + lot
                continue
            others.append((session, lot))
            session.raw.execute("SELECT set_config('lock_timeout', %s, false)", (wait,))
        with ThreadPoolExecutor(1 + len(others)) as pool:
            running = [pool.submit(session.raw.execute, f"VACUUM {', '.join(lot)}")
                       for session, lot in [(conn, mine), *others]]
            for done in running:
                done.result()
    finally:
        for session, _lot in others:
            session.close()


def _dealt(conn, tables, jobs: int) -> list[list[str]]:
    """The tables in at most `jobs` lots of about equal size (pages, with their indexes and a
    partitioned table's leaves), largest first into the lightest lot."""
    sizes = dict(conn.raw.execute(       # one statement; a partitioned table's own size is 0
        "SELECT t, pg_total_relation_size(t::regclass) + coalesce((SELECT sum(pg_total_relation_size(relid))"
        " FROM pg_partition_tree(t::regclass) WHERE isleaf), 0) FROM unnest(%s::text[]) AS t",
        (list(tables),)).fetchall())
    lots: list[tuple[int, list[str]]] = [(0, []) for _ in range(jobs)]
    for table in sorted(tables, key=lambda t: -sizes[t]):
        lightest = min(range(jobs), key=lambda i: lots[i][0])
        size, names = lots[lightest]
        lots[lightest] = (size + sizes[table], names + [table])
    return [names for _size, names in lots if names]


def _statistics(conn, tables, result: dict, full: bool) -> dict:
    """The touched tables' catalog statistics, sampled again where they hold text (see above)."""
    analyzed = reanalyze(conn, tables)
    if analyzed:
        result["analyzed"] = analyzed
    if full:
        vacuum_catalog(conn, full=True)
    return result


def dead_rows(conn, tables) -> dict[str, int]:
    """table -> the dead row versions its last VACUUM could not remove (its statistics)."""
    rows = conn.raw.execute(
        "SELECT relname, n_dead_tup FROM pg_stat_user_tables WHERE schemaname = %s AND relname = ANY(%s)",
        (conn.schema, list(tables))).fetchall()
    return {name: int(n) for name, n in rows if n}
