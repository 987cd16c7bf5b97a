"""The SQLite engine: a ledger in one file (the default).

Everything the rest of the ledger needs from SQLite in particular, behind the methods both
engines have (`ledger/store/backend.py: Engine`; the other is `ledger/store/postgres/engine.py`):
opening the file (private from birth, never someone else's database), its schema, the WAL
checkpoints, the guard triggers and their check, the integrity check `verify` runs, the purge
after a forget, and where copies of forgotten bytes may still be.
"""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import nullcontext
from pathlib import Path
from urllib.parse import quote

from factledger.ledger.errors import LedgerNotFound
from factledger.ledger.store.backend import EventLog, ProjectionTables
from factledger.ledger.store.eventlog import SCHEMA, open_sqlite
from factledger.ledger.store.sqlite import file, images, schema, triggers
from factledger.ledger.store.sqlite.integrity import IntegrityCheck
from factledger.ledger.store.sqlite.wal import WalCheckpointer
from factledger.ledger.vocabulary.clock import Clock

# How much of the file a scanning reader maps (`scan_reader`): all of it, up to the ceiling this
# SQLite was built with (SQLITE_MAX_MMAP_SIZE, 2 GiB by default), which it applies on its own.
SCAN_MAP_BYTES = 1 << 40


class SqliteEngine:
    kind = "sqlite"                   # as the residue report names it
    name = "SQLite"
    server = False                    # a file of this machine

    def describe(self, location: str | os.PathLike, conn=None) -> str:
        """Where the ledger is, for messages: the path as given, or once open (`conn`) as the
        ledger holds it (`UnitOfWork.path`: what `factledger init` has always printed)."""
        return str(location) if conn is None else str(Path(location))

    def prepare(self, location: str | os.PathLike, create: bool) -> list[str]:
        """Before opening: refuse a missing file unless `create`, make a new file 0600 from birth
        (or a loose one private now) and never alter a foreign database; the notes say what was
        tightened."""
        if not create and str(location) != ":memory:" and not Path(location).exists():
            raise LedgerNotFound(f"no ledger at {location}: nothing was created (open it with "
                                 "create=True, or run `factledger init`, to make a new one)")
        return file.prepare(location, create)

    def open(self, location: str | os.PathLike, clock: Clock, busy_timeout: float = 5.0,
             synchronous: str = "FULL", create: bool = True, read_only: bool = False) -> EventLog:
        """`read_only`: the file opened with `mode=ro` and `query_only` (docs/decisions.md,
        "Read-only opens"): SQLite refuses every write, and never checkpoints the WAL."""
        return open_sqlite(location, clock, busy_timeout, synchronous, read_only)

    def scan_reader(self, location: str | os.PathLike, clock: Clock) -> EventLog:
        """The file memory-mapped (`mmap_size`): a replay worker reads pages from all over it,
        and a mapped page is read without a system call or a copy into SQLite's cache (the two
        workers' CPU on the 1M bench ledger: 71-75 s before, 47-63 s in most runs after;
        docs/performance.md, "Parallel replay").  Only here: SQLite cannot catch an I/O error
        on a mapped page, the kernel raises SIGBUS and the process dies.  A dead worker fails
        the replay cleanly ("a replay worker process died", nothing written); a reader serving
        requests, or the writer, would die with it."""
        store = self.open(location, clock, create=False, read_only=True)
        store.conn.execute(f"PRAGMA mmap_size = {SCAN_MAP_BYTES}")
        return store

    def holds(self, location: str | os.PathLike) -> bool:
        return str(location) == ":memory:" or Path(location).exists()

    def remove(self, location: str | os.PathLike) -> None:
        for path in self.owned_paths(location):
            Path(path).unlink(missing_ok=True)

    def owned_paths(self, location: str | os.PathLike, conn=None) -> list[str]:
        if str(location) == ":memory:":
            return []
        return [f"{location}{suffix}" for suffix in ("", "-wal", "-shm", "-journal")]

    def attach(self, store: EventLog, location: str | os.PathLike, synchronous: str,
               read_only: bool = False) -> WalCheckpointer | None:
        """The WAL checkpoints of a file ledger, on a thread of their own (`wal.py`); none for a
        read-only open (a checkpoint writes the main file)."""
        if read_only or not WalCheckpointer.applies_to(str(location)):
            return None
        checkpointer = WalCheckpointer(store.conn, synchronous)
        checkpointer.take_over()
        store.before_begin(lambda: checkpointer.before_begin(store.conn))
        store.on_commit(checkpointer.after_commit)
        return checkpointer

    def ensure_schema(self, store: EventLog, projector: ProjectionTables, clock: Clock,
                      mode: str = "write") -> tuple[bool, list[str]]:
        return schema.ensure_schema(store.conn, store.schema, projector, clock, mode)

    def schema_problems(self, store: EventLog, projector: ProjectionTables) -> list[str]:
        """Each table, index and guard trigger missing or altered now (what `verify` fails on)."""
        return schema.gaps(store.conn, store.schema, projector).problems()

    def foreign_objects(self, store: EventLog, projector: ProjectionTables) -> list[str]:
        return schema.gaps(store.conn, store.schema, projector).foreign_lines()

    def attach_live(self, conn, fresh: sqlite3.Connection) -> bool:
        """Attach the open ledger's file, read-only, to `fresh` (a database in memory) as `live`,
        for verify's comparison of the projections inside SQLite (`same_rows`); False when it
        cannot be (a database in memory, a file that will not open)."""
        path = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
        if not path:
            return False
        try:
            fresh.execute("ATTACH DATABASE ? AS live", (f"file:{quote(path)}?mode=ro",))
            # as the ledger's own connection reads it (`eventlog.connect`), and the EXCEPT's
            # sort in memory, not in a temporary file
            fresh.execute("PRAGMA live.cache_size = -65536")
            fresh.execute("PRAGMA temp_store = MEMORY")
        except sqlite3.Error:
            return False
        return True

    def table_pages(self, conn, tables: tuple[str, ...], leaves_only: bool = False):
        """table -> {leaf page: digest or None} as the file holds them (`sqlite/pages.py`), for a
        verify that reads only what changed since its record; None when the file cannot be read."""
        from factledger.ledger.store.sqlite import pages

        return pages.table_pages(conn, tables, leaves_only)

    def rowids_on(self, conn, pagenos):
        """The rowids on these leaf pages (a superset), or None (`sqlite/pages.py`)."""
        from factledger.ledger.store.sqlite import pages

        return pages.rowids_on(conn, pagenos)

    def same_rows(self, fresh: sqlite3.Connection, table: str) -> bool:
        """Whether `live.table` holds exactly the rows of `main.table`: the same count and no main
        row missing from live (with its multiplicity, for a table without a primary key, whose
        rows need not be distinct).  Trusted only to say "the same"."""
        info = fresh.execute(f"PRAGMA main.table_info({table})").fetchall()
        listed = ", ".join(f'"{row[1]}"' for row in info)
        if any(row[5] for row in info):
            rows = {side: f"SELECT {listed} FROM {side}.{table}" for side in ("main", "live")}
        else:
            rows = {side: f"SELECT {listed}, count(*) FROM {side}.{table} GROUP BY {listed}"
                    for side in ("main", "live")}
        count = f"SELECT (SELECT count(*) FROM main.{table}) = (SELECT count(*) FROM live.{table})"
        try:
            if not fresh.execute(count).fetchone()[0]:
                return False
            return bool(fresh.execute(f"SELECT NOT EXISTS ({rows['main']} EXCEPT {rows['live']})").fetchone()[0])
        except sqlite3.Error:
            return False

    def integrity_check(self, conn) -> IntegrityCheck:
        """SQLite's check of the log's pages, started now; `.result()` is its problem or None."""
        return IntegrityCheck(conn)

    def guard_problems(self, conn) -> list[str]:
        """Each guard trigger missing or altered now, and each repair recorded."""
        return triggers.problems(conn, SCHEMA)

    def purge(self, conn, vacuum: bool | None = None, tables: tuple[str, ...] = (),
              checkpointer: WalCheckpointer | None = None, partitions=None) -> dict:
        """After a forget's commit: the WAL truncated (every page that held a scrubbed byte is
        gone from it), and with `vacuum` the file compacted too (docs/forgetting.md)."""
        with checkpointer.exclusive() if checkpointer is not None else nullcontext():
            result = {"checkpoint": _checkpoint(conn), "vacuumed": False}
            if vacuum:
                conn.execute("VACUUM")
                result["vacuumed"] = True
                result["checkpoint"] = _checkpoint(conn)
        return result

    def after_rebuild(self, conn, tables: tuple[str, ...], jobs: int = 1) -> None:
        """Nothing: SQLite reuses a deleted row's space in place, and keeps no dead versions."""

    def image_loader(self, conn):
        """The image attached beside the ledger and copied table by table in SQL (`images.py`)."""
        return images.attached_loader(conn)

    def residue(self, conn, location: str) -> dict:
        """Where copies of forgotten bytes may still be, beyond the live tables."""
        return {"places": [
            place("ledger file", location, "scrubbed in place (secure_delete), WAL truncated "
                  "after each forget; `forget --vacuum` also compacts the file"),
            place("copies and exports", "files you made (cp, backups, `factledger export`)",
                  "hold every value as it was: re-run the erasure on a restored copy "
                  "(`factledger erasures` lists what to repeat) or let them expire"),
        ]}

    def standby(self, conn) -> None:
        return None                   # a file is no server's replica (a copy of it is a file too)


def _checkpoint(conn, attempts: int = 20) -> str:
    """TRUNCATE needs every reader gone; retry briefly, then say plainly that it did not happen."""
    for _ in range(attempts):
        busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if not busy:
            return "truncated"
        time.sleep(0.05)
    return "busy: another connection is reading; run `factledger forget` again or checkpoint later"


def place(kind: str, where: str, note: str) -> dict:
    """One entry of the residue report."""
    return {"place": kind, "where": where, "note": note}


SQLITE = SqliteEngine()
