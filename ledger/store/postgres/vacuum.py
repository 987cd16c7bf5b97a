"""After a forget on PostgreSQL: VACUUM the tables the scrub touched, and say what it left.

A VACUUM cannot remove a row version that an open transaction may still see: a reader's
snapshot, another session's long transaction, even autovacuum's ANALYZE of a table for a moment.
The scrubbed rows' old versions then stay, readable by that snapshot, until it ends.  So each
table is vacuumed again for about a second while any are left (a short snapshot ends by then),
and what is still held back is counted in the receipt (`held_back`, from the statistics VACUUM
reports) instead of the receipt claiming a purge that did not happen; SQLite's checkpoint says
`busy` the same way (ledger/forget/erase.py).  The statistics can also count, for up to a second, the
scrub's own updates not yet flushed when VACUUM reported: the next pass corrects them.

Catalog statistics hold no text of the ledger (`ledger/store/postgres/statistics.py`); a touched
table whose text an operator let back into them is analysed again, so its sample is of the rows
left (`analyzed` in the receipt), and with FULL the catalog's old samples are vacuumed too.
"""

from __future__ import annotations

import time

from factledger.ledger.store.postgres.statistics import reanalyze, vacuum_catalog

ATTEMPTS = 40              # about two seconds: past the statistics' one-second flush interval
PAUSE_S = 0.05


def vacuum_tables(conn, tables, full: bool = False, attempts: int = ATTEMPTS) -> dict:
    """VACUUM each table, outside any transaction, again while dead row versions remain;
    `held_back` counts those still there at the end.  FULL rewrites each table into new files
    once (it reports no dead rows to check, and a second rewrite would cost as much again)."""
    tables = tuple(tables)
    if full:
        for table in tables:
            conn.raw.execute(f"VACUUM (FULL) {table}")
        return _statistics(conn, tables, {"vacuumed": True, "full": True, "tables": len(tables)}, full)
    pending, left = tables, {}
    for _attempt in range(max(1, attempts)):
        for table in pending:
            conn.raw.execute(f"VACUUM {table}")
        left = dead_rows(conn, pending)
        pending = tuple(t for t in pending if left.get(t))
        if not pending:
            break
        time.sleep(PAUSE_S)
    result = {"vacuumed": True, "full": False, "tables": len(tables)}
    if pending:
        result["held_back"] = sum(left[t] for t in pending)
        result["held_back_tables"] = list(pending)
    return _statistics(conn, tables, result, full)


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
