"""The PostgreSQL engine (the `postgres` extra): a ledger in a schema of a server's database.

The same methods as the SQLite engine (`ledger/store/backend.py: Engine`), each the server's way:
the connection and its schema (`backend.py`), the schema made whole under the ledger's lock
(`schema.py`), the guard triggers read from the catalog, no page check of its own (the chain
walk is `verify`'s check), VACUUM after a forget (`vacuum.py`), and the server's own copies of
forgotten bytes (its WAL, archive, replicas, slots, backups) in the residue report.
"""

from __future__ import annotations

from factledger.ledger.store.backend import EventLog, ProjectionTables
from factledger.ledger.store.postgres import backend
from factledger.ledger.store.postgres import schema as pg_schema
from factledger.ledger.store.postgres.images import copy_loader
from factledger.ledger.store.postgres.statistics import catalog_dead_rows, extended, sampled_text
from factledger.ledger.store.postgres.vacuum import deferred, mark_deferred, vacuum_rebuilt, vacuum_tables
from factledger.ledger.store.repairs import repair_problems
from factledger.ledger.store.sqlite.engine import place
from factledger.ledger.vocabulary.clock import Clock

_SETTINGS = ("wal_level", "archive_mode", "archive_command", "archive_library", "data_directory",
             "wal_keep_size", "max_slot_wal_keep_size", "hot_standby")


class _NoCheck:
    """PostgreSQL has no integrity_check of a table (its pages carry checksums when the cluster
    was initialised with them; amcheck is the operator's): the chain walk is the check."""

    def result(self) -> None:
        return None


class PostgresEngine:
    kind = "postgresql"               # as the residue report names it
    name = "PostgreSQL"
    server = True                     # a database of a server, reached by URL

    @staticmethod
    def claims(location) -> bool:
        """A `postgresql://` (or `postgres://`) URL is this engine's."""
        return backend.is_postgres(location)

    def describe(self, location, conn=None) -> str:
        """The URL without its password, and the ledger's schema when open."""
        shown = backend.display(str(location))
        return f"{shown} (schema {conn.schema})" if conn is not None else shown

    def prepare(self, location, create: bool) -> list[str]:
        return []                     # the connection creates the schema, or refuses (`connect`)

    def open(self, location, clock: Clock, busy_timeout: float = 5.0, synchronous: str = "FULL",
             create: bool = True, read_only: bool = False) -> EventLog:
        """`read_only`: a session whose every transaction is read-only (the server refuses writes)."""
        return backend.open_postgres(str(location), clock, busy_timeout, synchronous, create, read_only)

    def scan_reader(self, location, clock: Clock) -> EventLog:
        """A read-only session: the server reads for it, nothing to tune on this side."""
        return self.open(location, clock, create=False, read_only=True)

    def holds(self, location) -> bool:
        return backend.schema_exists(str(location))

    def remove(self, location) -> None:
        backend.drop_schema(str(location))

    def owned_paths(self, location, conn=None) -> list[str]:
        """The server's data directory and tablespaces, as far as the session may read them (a
        role without `pg_read_all_settings` is told nothing: then the server's files are not
        this machine's user's to write either, as a rule)."""
        return [] if conn is None else backend.data_paths(conn)

    def attach(self, store: EventLog, location, synchronous: str, read_only: bool = False) -> None:
        return None                   # the server checkpoints its own WAL

    def ensure_schema(self, store: EventLog, projector: ProjectionTables, clock: Clock,
                      mode: str = "write") -> tuple[bool, list[str]]:
        return pg_schema.ensure_schema(store.conn, projector, clock, mode)

    def schema_problems(self, store: EventLog, projector: ProjectionTables) -> list[str]:
        """Each table, index and guard missing or altered now (what `verify` fails on)."""
        return pg_schema.gaps(store.conn, projector).problems()

    def foreign_objects(self, store: EventLog, projector: ProjectionTables) -> list[str]:
        return pg_schema.gaps(store.conn, projector).foreign_lines()

    def attach_live(self, conn, fresh) -> bool:
        return False                  # a server's tables: verify compares them row by row

    def same_rows(self, fresh, table: str) -> bool:
        return False

    def table_pages(self, conn, tables, leaves_only: bool = False):
        return None                   # no pages to read: every verify refolds the log

    def rowids_on(self, conn, pagenos):
        return None

    def integrity_check(self, conn) -> _NoCheck:
        return _NoCheck()

    def guard_problems(self, conn) -> list[str]:
        return backend.guard_problems(conn) + repair_problems(conn)

    def purge(self, conn, vacuum: bool | None = None, tables: tuple[str, ...] = (), checkpointer=None,
              partitions=None) -> dict:
        """The log's and the projections' tables vacuumed: FULL unless `vacuum` is False
        (docs/forgetting.md), so by default no data file keeps a byte of the scrubbed rows; a plain
        VACUUM (`--no-vacuum`) leaves them in freed page space, and the receipt (`bytes`) and
        `residue` say so until a forget rewrites the tables.  On a partitioned ledger the plain
        VACUUM and the FULL one take of each partitioned table only the leaves holding
        `partitions` (`partitions.py`)."""
        result = vacuum_tables(conn, ("events", *tables), full=vacuum is not False, partitions=partitions)
        mark_deferred(conn, not result["full"])
        return result

    def after_rebuild(self, conn, tables: tuple[str, ...], jobs: int = 1) -> None:
        """The rebuilt tables vacuumed (`vacuum.vacuum_rebuilt`), by `jobs` sessions side by side."""
        vacuum_rebuilt(conn, tables, jobs)

    def image_loader(self, conn):
        """The image's rows read back here and sent to the server, one COPY a table
        (`ledger/store/postgres/images.py`)."""
        return copy_loader(conn)

    def residue(self, conn, location: str) -> dict:
        """The server's copies of forgotten bytes, as it reports them."""
        settings = dict(conn.raw.execute(
            "SELECT name, setting FROM pg_settings WHERE name = ANY(%s)", (list(_SETTINGS),)).fetchall())
        places = [place("WAL (pg_wal)", f"{settings.get('data_directory') or '(data directory)'}/pg_wal",
                        "segments written before the forget hold the old rows until a checkpoint "
                        "recycles them (CHECKPOINT as a superuser, or wait for checkpoint_timeout)")]
        places.append(place("freed page space", "the tables' data files",
                            "a forget run with --no-vacuum (or whose VACUUM FULL could not take a table's lock) "
                            "left the scrubbed rows' bytes in freed page space: they remain until the next "
                            "VACUUM FULL (`forget --vacuum`, or the operator's)" if deferred(conn) else
                            "none owed: the last forget rewrote the tables (VACUUM FULL)"))
        places.append(place("index entries", "the indexes of the projections' tables (and of the log's, on "
                            "a ledger that is not partitioned)",
                            "a forget with --no-vacuum skips those indexes: the old row versions' indexed "
                            "columns (app, user, subject, predicate, session, a retracted value's key; no body "
                            "or quote) stay in them, unreachable by any query, until a VACUUM that cleans indexes "
                            "(`VACUUM (INDEX_CLEANUP ON)`, autovacuum when enough pages hold dead rows, or "
                            "`forget --vacuum`, which rewrites them)"))
        archiving = settings.get("archive_mode", "off") != "off"
        archiver = conn.raw.execute("SELECT archived_count, last_archived_wal, last_archived_time "
                                    "FROM pg_stat_archiver").fetchone()
        places.append(place(
            "WAL archive", (settings.get("archive_command") or settings.get("archive_library") or "(none)")
            if archiving else "archive_mode is off",
            (f"{archiver[0]} segments archived (last {archiver[1]} at {archiver[2]}): archived segments "
             "keep the old rows until your retention deletes them" if archiving else "nothing archived")))
        for name, client, state, sync in conn.raw.execute(
                "SELECT application_name, client_addr::text, state, sync_state FROM pg_stat_replication"):
            places.append(place("replica", f"{name or '(unnamed)'} at {client or 'local socket'} ({state}, {sync})",
                                "replays the scrub and the redaction; VACUUM runs there too, but its own WAL "
                                "and archive are further copies"))
        for slot, kind, active in conn.raw.execute(
                "SELECT slot_name, slot_type, active FROM pg_replication_slots"):
            places.append(place("replication slot", f"{slot} ({kind}, {'active' if active else 'inactive'})",
                                "keeps WAL from before the forget on the primary until its consumer "
                                "advances; a logical consumer already received the old rows"))
        places += _statistics_places(conn)
        places.append(place("base backups", "pg_basebackup / pgBackRest / Barman / snapshots",
                            "each holds the heap as it was: expire those older than the last erasure, "
                            "or re-run the erasures after a restore (`factledger erasures`)"))
        places.append(place("pg_dump files and exports", "files you made (pg_dump, `factledger export`)",
                            "hold every value as it was: delete or re-erase after restoring"))
        return {"places": places, "settings": settings}

    def standby(self, conn) -> dict | None:
        """A hot standby's replay (`backend.standby_status`), or None on a primary."""
        return backend.standby_status(conn)


POSTGRES = PostgresEngine()


def _statistics_places(conn) -> list[dict]:
    """Catalog statistics that may hold sampled text (ledger/store/postgres/statistics.py)."""
    places = []
    sampled = sampled_text(conn)
    if sampled:
        places.append(place("catalog statistics (pg_statistic)", ", ".join(sampled),
                            "ANALYZE sampled these text columns (their statistics target is no longer 0): "
                            "values and quotes readable in pg_stats; reopen the ledger as the tables' owner "
                            "to drop them, or SET STATISTICS 0 and ALTER COLUMN ... TYPE to its own type"))
    objects = extended(conn)
    if objects:
        places.append(place("extended statistics", ", ".join(objects),
                            "CREATE STATISTICS objects on the ledger's tables keep their own samples of values "
                            "(pg_stats_ext): DROP STATISTICS them, or ANALYZE after every forget"))
    dead = catalog_dead_rows(conn)
    if dead:
        places.append(place("old catalog statistics", f"{dead} old row versions of pg_catalog.pg_statistic",
                            "samples replaced or dropped stay in the catalog's pages until it is vacuumed "
                            "(VACUUM pg_catalog.pg_statistic as a superuser, or autovacuum)"))
    return places
