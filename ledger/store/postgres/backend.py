"""The PostgreSQL backend: the same event store on a connection that speaks the store's SQL.

`open_postgres` returns the very `EventStore` SQLite uses, on a `PgConnection` (psycopg 3 behind
the part of the DB-API the ledger calls, each statement through `dialect.py`, psycopg's errors
raised as factledger's, `errors.py`).  What differs is here: the ledger is a schema of its own
(`?schema=`, the `search_path`); `BEGIN IMMEDIATE` takes `pg_advisory_xact_lock` keyed by the
schema, so writers of one ledger queue and of different ledgers run in parallel; a snapshot is
`REPEATABLE READ`; the busy timeout is `lock_timeout`; the append-only guard is three triggers on
functions of the schema (`trigger_problems` checks them for `verify`).  An observe names its
partitions (`begin_partitions`): it takes the ledger's lock shared and a lock per partition for
its reads and decisions, and the chain's lock only from its first write to its commit, so writers
of different partitions decide in parallel and still append one after the other.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from factledger.ledger.errors import LedgerError, LedgerNotFound, LedgerReadOnly, StorageError
from factledger.ledger.store.eventlog import EventStore
from factledger.ledger.store.postgres import arrays, partitions
from factledger.ledger.store.postgres import errors as pg_errors_map
from factledger.ledger.store.postgres.dialect import translate
from factledger.ledger.vocabulary.clock import Clock
from factledger.ledger.vocabulary.words import ERASED_PREFIX


# psycopg (the optional `postgres` extra) is imported when a postgresql:// ledger is opened, not
# with this module: every command imports `is_postgres` or `display` from here, and a SQLite
# ledger's commands need not pay for PostgreSQL's driver (docs/performance.md).
def _psycopg():
    try:
        import psycopg
    except ImportError:                 # pragma: no cover - SQLite-only installs
        return None
    return psycopg


_IDLE = None                        # libpq's TransactionStatus.IDLE (an int), once psycopg is imported
DEFAULT_SCHEMA = "factledger"
# `executemany` of a plain `INSERT INTO t (columns) VALUES (?, ...)` (no conflict clause) with at
# least COPY_ROWS rows runs as one COPY (a batch's log rows and opened intervals).
_PLAIN_INSERT = re.compile(r"\s*INSERT INTO (\w+) \(([\w\s,]+)\) VALUES \(\?(?:\s*,\s*\?)*\)\s*$")
COPY_ROWS = 50
# ... and of an upsert (translated: `ON CONFLICT ...` after its VALUES), one INSERT ... SELECT.
_UPSERT = re.compile(r"\s*INSERT INTO (\w+)(?: \(([\w\s,\"]+)\))? VALUES \(((?:%s\s*,\s*)*%s)\)(\s+ON CONFLICT\b.*)$",
                     re.S)
_TARGET = re.compile(r"ON CONFLICT \(([^)]*)\)")


def _as_text(value):
    """A value as PostgreSQL's text input of its column's type (the arrays of `_unnested`)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(value).hex()
    return str(value)


def _quote_name(name: str) -> str:
    return f'"{name}"' if name == "user" else name
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

_GUARD_SQL = {
    "events_refuse_delete": """
BEGIN
    RAISE EXCEPTION 'factledger: the event log is append-only' USING ERRCODE = 'integrity_constraint_violation';
END;""",
    "events_refuse_update": """
BEGIN
    IF NOT (
        NEW.seq = OLD.seq AND NEW.event_id = OLD.event_id AND NEW.type = OLD.type
        AND NEW.app = OLD.app AND NEW.recorded_at = OLD.recorded_at
        AND NEW.commitment = OLD.commitment AND NEW.prev_hash = OLD.prev_hash
        AND NEW.hash = OLD.hash
        AND NEW.body IS NULL AND NEW.salt IS NULL AND NEW.redacted_by IS NOT NULL
        AND (OLD.redacted_by IS NULL OR NEW.redacted_by = OLD.redacted_by)
        AND (NEW."user" = OLD."user" OR NEW."user" LIKE '""" + ERASED_PREFIX + """%')
    ) THEN
        RAISE EXCEPTION 'factledger: events may only be redacted, never rewritten'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;""",
}
_GUARDS = {   # trigger -> (function, timing)
    "events_refuse_delete": ("events_refuse_delete", "BEFORE DELETE ON events FOR EACH ROW"),
    "events_refuse_truncate": ("events_refuse_delete", "BEFORE TRUNCATE ON events FOR EACH STATEMENT"),
    "events_refuse_update": ("events_refuse_update", "BEFORE UPDATE ON events FOR EACH ROW"),
}

# A partitioned log (`partitions.py`): a whole-user forget's new `user` moves each event to the
# pseudonym's leaf, which PostgreSQL runs as a DELETE and an INSERT.  The update guard marks the
# row it let through (transaction-local), the delete guard lets exactly that row go, and the
# chain trigger (which fills `event_chain` on every insert) does not count it twice.  All three
# are BEFORE row triggers, which run at once for each row (AFTER triggers wait for the statement's
# end, when the mark names only the last row).
_MOVED = "current_setting('factledger.moving', true) = OLD.seq::text"
_GUARD_SQL_PARTITIONED = {
    "events_refuse_delete": """
BEGIN
    IF TG_LEVEL = 'ROW' THEN
        IF """ + _MOVED + """ THEN
            RETURN OLD;
        END IF;
    END IF;
    RAISE EXCEPTION 'factledger: the event log is append-only' USING ERRCODE = 'integrity_constraint_violation';
END;""",
    "events_refuse_update": _GUARD_SQL["events_refuse_update"].replace("""
    RETURN NEW;""", """
    IF NEW."user" <> OLD."user" THEN
        PERFORM set_config('factledger.moving', OLD.seq::text, true);
    END IF;
    RETURN NEW;"""),
    "events_chain": """
BEGIN
    IF current_setting('factledger.moving', true) = NEW.seq::text THEN
        PERFORM set_config('factledger.moving', '', true);
        RETURN NEW;
    END IF;
    INSERT INTO event_chain (seq, event_id, prev_hash, hash) VALUES (NEW.seq, NEW.event_id, NEW.prev_hash, NEW.hash);
    RETURN NEW;
END;""",
}
_GUARDS_PARTITIONED = {**_GUARDS, "events_chain": ("events_chain", "BEFORE INSERT ON events FOR EACH ROW")}


def _schema(tables: str, bodies: dict[str, str], guards: dict[str, tuple[str, str]]) -> str:
    return tables + "".join(f"""
CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $guard${body}$guard$;
""" for name, body in bodies.items()) + "".join(f"""
CREATE OR REPLACE TRIGGER {trigger} {timing} EXECUTE FUNCTION {function}();
""" for trigger, (function, timing) in guards.items())


SCHEMA = _schema(f"""
CREATE TABLE IF NOT EXISTS events ({partitions.EVENT_COLUMNS},
    PRIMARY KEY (seq),
    UNIQUE (event_id),
    UNIQUE (prev_hash)
);
CREATE INDEX IF NOT EXISTS events_partition ON events (app, "user", seq);
CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT COLLATE "C" PRIMARY KEY, value TEXT NOT NULL);
""", _GUARD_SQL, _GUARDS)
# The log of a partitioned ledger (`partitions.py`): the same columns and guards, and the chain.
SCHEMA_PARTITIONED = _schema(partitions.EVENTS_SCHEMA, _GUARD_SQL_PARTITIONED, _GUARDS_PARTITIONED)


def schema_of(conn) -> str:
    """The store's DDL as this ledger has it (partitioned or plain)."""
    return SCHEMA_PARTITIONED if conn.leaves else SCHEMA


def is_postgres(location) -> bool:
    """A location is a PostgreSQL URL (`postgresql://` or `postgres://`), or else a file path."""
    return str(location).startswith(("postgresql://", "postgres://"))


def split_location(location: str) -> tuple[str, str]:
    """(conninfo for psycopg, ledger schema): the `schema` query parameter is the ledger's own."""
    parts = urlsplit(str(location))
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((value for name, value in query if name == "schema"), DEFAULT_SCHEMA)
    if not _SCHEMA_NAME.fullmatch(schema):
        raise LedgerError(f"schema {schema!r}: use lower-case letters, digits and _ (at most 63), "
                          "starting with a letter or _")
    rest = urlencode([(name, value) for name, value in query if name != "schema"])
    conninfo = urlunsplit(parts._replace(query=rest))
    if not parts.netloc and parts.scheme:      # `postgresql:///db?host=/run/postgresql`: urlunsplit
        conninfo = f"{parts.scheme}://{conninfo[len(parts.scheme) + 1:]}"   # drops the empty authority
    return conninfo, schema


def lock_key(schema: str) -> int:
    """The advisory lock of one ledger (a schema of a database): a signed 64-bit key."""
    digest = hashlib.sha256(f"factledger:{schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def chain_key(schema: str) -> int:
    """The lock of one ledger's chain: held from a partition writer's first write to its commit."""
    digest = hashlib.sha256(f"factledger-chain:{schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def partition_key(schema: str, app: str, user: str) -> int:
    """The lock of one partition (app, user) of a ledger (two partitions sharing a key only queue)."""
    digest = hashlib.sha256(f"factledger-partition:{schema}\0{app}\0{user}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


# More partitions than this in one transaction (a large batch of many users) take the ledger's
# lock instead: each advisory lock is an entry of the server's shared lock table
# (max_locks_per_transaction), and a batch that large is one writer's throughput anyway.
PARTITION_LOCKS = 64
# A statement that writes: in a partition writer's transaction it takes the chain's lock first.
_WRITES = re.compile(r"\s*(?:INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER|TRUNCATE|COPY)\b"
                     r"|\s*WITH\b.*\b(?:INSERT|UPDATE|DELETE)\b", re.I | re.S)


def display(location: str) -> str:
    """The location without a password, for messages."""
    parts = urlsplit(str(location))
    if parts.password is None:
        return str(location)
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


# --- the connection ---------------------------------------------------------------------------

class Row(tuple):
    """A row readable by index and by column name (what `sqlite3.Row` gives the readers)."""

    names: dict[str, int]

    def __new__(cls, values, names):
        row = super().__new__(cls, values)
        row.names = names
        return row

    def __getitem__(self, key):
        if isinstance(key, str):
            return tuple.__getitem__(self, self.names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self.names)


class PgCursor:
    """A cursor whose `row_factory` may be `sqlite3.Row` (rows by name), as the readers set it."""

    def __init__(self, conn: PgConnection):
        self._conn = conn
        self._cursor = None
        self.row_factory = None

    def execute(self, sql: str, args=None) -> PgCursor:
        self._cursor = self._conn.execute(sql, args)
        return self

    def _row(self, row):
        if row is None or self.row_factory is not sqlite3.Row:
            return row
        names = {d.name: i for i, d in enumerate(self._cursor.description)}
        return Row(row, names)

    @property
    def description(self):
        return self._cursor.description

    def fetchone(self):
        return self._row(self._cursor.fetchone())

    def fetchall(self):
        return [self._row(row) for row in self._cursor.fetchall()]

    def __iter__(self):
        return (self._row(row) for row in self._cursor)

    def close(self) -> None:
        if self._cursor is not None:
            self._cursor.close()


class PgConnection:
    """A psycopg connection in autocommit mode (transactions are the explicit BEGIN/COMMIT the
    store issues, as on SQLite with `isolation_level=None`), speaking the store's SQL."""

    def __init__(self, raw, schema: str, location: str):
        self.raw = raw
        self.schema = schema
        self.location = location
        self.lock = lock_key(schema)
        self.chain = chain_key(schema)
        # In a partition writer's transaction (`begin_partitions`) until it takes the chain's lock.
        self._chain_wanted = False
        self._pipeline = None         # psycopg's pipeline, from `pipelined` to the COMMIT
        self.leaves = 0               # hash leaves per partitioned table (0: a plain ledger)
        self._columns: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self._types: dict[str, dict[str, str]] = {}
        self._remainders: dict[tuple[str, str], int] = {}

    @property
    def in_transaction(self) -> bool:
        # libpq's status as a plain int: `info.transaction_status` builds an enum member on each
        # call, and the store asks this several times an append
        return self.raw.pgconn.transaction_status != _IDLE

    def begin_partitions(self, partitions) -> bool:
        """BEGIN a write transaction of these (app, user) partitions only: the ledger's lock
        shared (so every other kind of writer, which takes it whole, still runs alone) and each
        partition's lock, in key order (two batches never wait for each other crosswise); the
        chain's lock waits for the first write (`take_chain`).  One round trip.  False, and the
        ledger's lock taken whole as `BEGIN IMMEDIATE` takes it, for more than PARTITION_LOCKS
        partitions or none."""
        keys = sorted({partition_key(self.schema, app, user) for app, user in partitions})
        if not keys or len(keys) > PARTITION_LOCKS:
            self.execute("BEGIN IMMEDIATE")
            return False
        locks = "".join(f"; SELECT pg_advisory_xact_lock({key:d})" for key in keys)
        self._run(f"BEGIN; SELECT pg_advisory_xact_lock_shared({self.lock:d}){locks}", None)
        self._chain_wanted = True
        return True

    def take_chain(self, then: str | None = None):
        """In a partition writer's transaction: take the chain's lock (once), before its first
        write and before it reads the chain's tail, and hold it to the commit.  `then`: a read
        (without parameters) sent in the same round trip, as a statement after the lock's, so
        (READ COMMITTED) it sees every commit made before the lock was granted; its first row."""
        if self._chain_wanted:
            self._chain_wanted = False
            if then is not None:
                cursor = self._run(f"SELECT pg_advisory_xact_lock({self.chain:d}); {then}", None)
                cursor.nextset()
                return cursor.fetchone()
            self._run(f"SELECT pg_advisory_xact_lock({self.chain:d})", None)
        return None if then is None else self.execute(then).fetchone()

    def pipelined(self, rows: int) -> None:
        """From here to the COMMIT: statements go without waiting for each one's answer
        (psycopg's pipeline mode; a read waits for what is before it), and the COMMIT sends what
        is left and waits once: a write transaction's closing writes (the log's rows, each
        projection's, the position) cost one round trip, not one each.  Not for a transaction of
        `rows` >= COPY_ROWS events, whose rows go by COPY (which a pipeline cannot send)."""
        if self._pipeline is None and rows < COPY_ROWS and self.in_transaction:
            self.take_chain()
            pipeline = self.raw.pipeline()
            pipeline.__enter__()
            self._pipeline = pipeline

    def _end_pipeline(self, failed: bool) -> None:
        """Send what the pipeline holds and wait for it: its first error raised as factledger's,
        unless the transaction is being rolled back anyway (`failed`)."""
        pipeline, self._pipeline = self._pipeline, None
        try:
            pipeline.__exit__(None, None, None)
        except Exception as exc:
            if failed:
                return
            if pg_errors_map.is_driver_error(exc):
                raise pg_errors_map.translate(exc) from None
            raise

    def execute(self, sql: str, args=None):
        command = sql.strip().rstrip(";").upper()
        if command in ("COMMIT", "ROLLBACK"):
            self._chain_wanted = False
            if self._pipeline is not None:
                if command == "ROLLBACK":
                    self._end_pipeline(failed=True)
                else:
                    self._run("COMMIT", None)
                    self._end_pipeline(failed=False)
                    return None
        elif self._chain_wanted and _WRITES.match(sql):
            self.take_chain()
        if command == "BEGIN IMMEDIATE":       # the BEGIN and the ledger's lock in one round trip
            return self._run(f"BEGIN; SELECT pg_advisory_xact_lock({self.lock:d})", None)
        if command in ("BEGIN", "BEGIN DEFERRED"):
            return self._run("BEGIN ISOLATION LEVEL REPEATABLE READ", None)
        if command.startswith("PRAGMA"):
            text = f"{sql.strip()}: an SQLite pragma (this ledger is on PostgreSQL)"
            raise StorageError(f"database error: {text}", text)
        has_args = bool(args)
        if has_args and ("VALUES" in sql or "IN (" in sql) and "sqlite_master" not in sql:
            arrayed = arrays.rewrite(sql, tuple(args))     # long placeholder lists as arrays
            if arrayed is not None:
                sql, args = arrayed
        text = translate(sql, has_args, self.columns_of)
        if self.leaves:
            text = partitions.on_leaves(text)
        return self._run(text, tuple(args) if has_args else None)

    def _run(self, text, args, then=None):
        try:
            cursor = self.raw.execute(text, args)
            if then is not None:
                cursor = self.raw.execute(*then)
            return cursor
        except Exception as exc:
            if pg_errors_map.is_driver_error(exc):
                raise pg_errors_map.translate(exc) from None
            raise

    def executemany(self, sql: str, rows):
        rows = [tuple(row) for row in rows]
        if not rows:
            return None
        self.take_chain()
        plain = _PLAIN_INSERT.match(sql) if len(rows) >= COPY_ROWS and self._pipeline is None else None
        if plain is not None:
            # a batch's rows of a plain INSERT (the log's, the intervals opened, the Merkle
            # leaves): one COPY, where executemany sends each row as a statement of its own
            return self._copy(plain.group(1), [c.strip() for c in plain.group(2).split(",")], rows)
        text = translate(sql, True, self.columns_of)
        if self.leaves:
            text = partitions.on_leaves(text)
        if len(rows) >= COPY_ROWS:
            # an upsert's rows (facts_current, the recall index): one INSERT ... SELECT FROM
            # unnest of an array a column, where executemany sends a statement a row
            unnested = self._unnested(text, rows)
            if unnested is not None:
                self._run(*unnested)
                return None
        try:
            with self.raw.cursor() as cursor:
                cursor.executemany(text, rows)
        except Exception as exc:
            if pg_errors_map.is_driver_error(exc):
                raise pg_errors_map.translate(exc) from None
            raise
        return None

    def _unnested(self, text: str, rows: list[tuple]) -> tuple[str, tuple] | None:
        """An `INSERT ... VALUES (%s, ...) ON CONFLICT ...` for many rows as one statement over
        arrays (each a text array, sent in binary, cast to its column's type), or None where that would not
        do what the rows one by one do: a `DO UPDATE` whose rows repeat a conflict key (one
        statement may not update a row twice)."""
        found = _UPSERT.match(text)
        if found is None:
            return None
        table, listed, marks, rest = found.groups()
        count = marks.count("%s")
        columns = ([c.strip().strip('"') for c in listed.split(",")] if listed
                   else list(self.columns_of(table)[0][:count]))
        types = self.types_of(table)
        if len(columns) != count or any(c not in types for c in columns) or any(len(r) != count for r in rows):
            return None
        if "DO UPDATE" in rest:
            target = _TARGET.search(rest)
            if target is None:
                return None
            keys = [columns.index(c.strip().strip('"')) for c in target.group(1).split(",")
                    if c.strip().strip('"') in columns]
            if len({tuple(r[i] for i in keys) for r in rows}) != len(rows):
                return None
        values = tuple(arrays.Binary([_as_text(r[i]) for r in rows]) for i in range(count))
        casts = ", ".join(f"%s::text[]::{types[c]}[]" for c in columns)
        names = f" ({listed})" if listed else f" ({', '.join(_quote_name(c) for c in columns)})"
        return f"INSERT INTO {table}{names} SELECT * FROM unnest({casts}){rest}", values

    def types_of(self, table: str) -> dict[str, str]:
        """column -> its type, as SQL names it, of a table of the ledger's schema."""
        if table not in self._types:
            self._types[table] = dict(self.raw.execute(
                "SELECT a.attname, format_type(a.atttypid, NULL) FROM pg_attribute a WHERE a.attrelid = %s::regclass"
                " AND a.attnum > 0 AND NOT a.attisdropped", (f'"{self.schema}".{table}',)).fetchall())
        return self._types[table]

    def _copy(self, table: str, columns: Sequence[str], rows: list) -> None:
        """`rows` into `table` by one `COPY ... FROM STDIN`: an INSERT's rows and its failures (a
        repeated key fails the transaction as the INSERT would)."""
        names = ", ".join(f'"{c}"' for c in columns)
        try:
            with self.raw.cursor() as cursor, cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        except Exception as exc:
            if pg_errors_map.is_driver_error(exc):
                raise pg_errors_map.translate(exc) from None
            raise

    def copy_in(self, table: str, columns: Sequence[str], rows: list) -> bool:
        """Stream `rows` into `table` with one `COPY ... FROM STDIN`, under a savepoint: the
        server's bulk path, where `executemany` is one INSERT for each row.  COPY has no
        `ON CONFLICT`: False, and nothing of it written, when a row repeats a key the table
        holds (the caller writes those rows another way)."""
        self.take_chain()
        names = ", ".join(f'"{c}"' for c in columns)
        self._run("SAVEPOINT copy_in", None)
        try:
            with self.raw.cursor() as cursor, cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        except Exception as exc:
            if isinstance(exc, _psycopg().errors.UniqueViolation):
                self._run("ROLLBACK TO SAVEPOINT copy_in", None)
                self._run("RELEASE SAVEPOINT copy_in", None)
                return False
            if pg_errors_map.is_driver_error(exc):
                raise pg_errors_map.translate(exc) from None
            raise
        self._run("RELEASE SAVEPOINT copy_in", None)
        return True

    def executescript(self, script: str) -> None:
        for statement in split_statements(script):
            self.execute(statement)

    def native(self, script: str) -> None:
        """Run PostgreSQL's own DDL (the store's schema) as it is, untranslated."""
        self.take_chain()
        self._run(script, None)

    def cursor(self) -> PgCursor:
        return PgCursor(self)

    def columns_of(self, table: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(columns in order, primary key columns) of a table of the ledger's schema."""
        if table not in self._columns:
            columns = tuple(row[0] for row in self.raw.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = %s"
                " AND table_name = %s ORDER BY ordinal_position", (self.schema, table)))
            key = tuple(row[0] for row in self.raw.execute(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid"
                " AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary"
                " ORDER BY array_position(i.indkey, a.attnum)", (f'"{self.schema}".{table}',)))
            self._columns[table] = (columns, key)
        return self._columns[table]

    def leaf_of(self, app: str, user: str) -> int | None:
        """The remainder of the leaves holding partition (app, user), asked of the server once per
        partition (the hash never changes); None on plain tables."""
        if not self.leaves:
            return None
        key = (app, user)
        if key not in self._remainders:
            if len(self._remainders) >= 10_000:
                self._remainders.clear()
            self._remainders[key] = partitions.remainder(self, app, user)
        return self._remainders[key]

    def forget_columns(self) -> None:
        """After DDL: the tables' columns are read again when next needed."""
        self._columns.clear()
        self._types.clear()

    def close(self) -> None:
        self.raw.close()


def split_statements(script: str) -> list[str]:
    """A script's statements: split on `;` outside string literals and `$guard$` bodies."""
    out, current, quoted, dollar = [], [], False, False
    i = 0
    while i < len(script):
        ch = script[i]
        if not quoted and script.startswith("$guard$", i):
            dollar = not dollar
            current.append("$guard$")
            i += len("$guard$")
            continue
        if ch == "'" and not dollar:
            quoted = not quoted
        if ch == ";" and not quoted and not dollar:
            text = "".join(current).strip()
            if text:
                out.append(text)
            current = []
        else:
            current.append(ch)
        i += 1
    text = "".join(current).strip()
    if text:
        out.append(text)
    return out


def connect(location: str, busy_timeout: float = 5.0, create: bool = True,
            read_only: bool = False) -> PgConnection:
    """Open the ledger's schema (created when `create`), with the store's settings.  `read_only`:
    every transaction of the session is a read-only one (`default_transaction_read_only`), so the
    server refuses any write a read command might attempt, whatever its code does."""
    psycopg = _psycopg()
    if psycopg is None:
        raise LedgerError("a postgresql:// ledger needs psycopg 3: pip install 'factledger[postgres]'")
    import psycopg.errors as pg_errors

    conninfo, schema = split_location(location)
    try:
        raw = psycopg.connect(conninfo, autocommit=True)
    except psycopg.Error as exc:
        # psycopg's message spans lines ("...\n\tIs the server running ..."): one line here, so the
        # terminal escaping of `Error:` lines never shows a literal \n\t
        raise LedgerError(f"cannot open ledger {display(location)}: {' '.join(str(exc).split())}") from None
    _adapt(raw)
    try:
        # jit off: the ledger's statements are index reads of a partition, and with text columns
        # kept out of statistics (statistics.py) the planner overestimates their rows and JIT-
        # compiles them (measured: 126 ms of compiling in a 152 ms read of 12 facts' events)
        raw.execute(f"SET lock_timeout = {max(1, int(busy_timeout * 1000))}; SET jit = off")
        exists, standby = raw.execute(
            "SELECT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = %s"
            " AND table_name = 'events'), pg_is_in_recovery()", (schema,)).fetchone()
        if standby and not read_only:
            # said before anything is tried: a hot standby refuses every write, its catalog too
            raise LedgerReadOnly(f"{display(location)} is a hot standby (in recovery): it refuses "
                                 "writes; write to the primary (--db) and read here with --read-db "
                                 "(docs/scale.md)")
        if not exists:
            if not create:
                raise LedgerNotFound(f"no ledger at {display(location)} (schema {schema}): nothing "
                                     "was created (open it with create=True, or run `factledger "
                                     "init`, to make a new one)")
            try:
                raw.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            except pg_errors.UniqueViolation:   # another process created it at the same moment
                pass
        raw.execute(f'SET search_path TO "{schema}"')
        if read_only:
            raw.execute("SET default_transaction_read_only = on")
    except BaseException:
        raw.close()
        raise
    global _IDLE
    from psycopg.pq import TransactionStatus

    _IDLE = int(TransactionStatus.IDLE)
    conn = PgConnection(raw, schema, str(location))
    if exists:
        conn.leaves = partitions.recorded_leaves(conn)
    return conn


def _server(location: str):
    """A plain connection to the location's server (no schema set) and the ledger's schema name."""
    psycopg = _psycopg()
    if psycopg is None:
        raise LedgerError("a postgresql:// ledger needs psycopg 3: pip install 'factledger[postgres]'")
    conninfo, schema = split_location(location)
    try:
        return psycopg.connect(conninfo, autocommit=True), schema
    except psycopg.Error as exc:
        raise LedgerError(f"cannot open ledger {display(location)}: {' '.join(str(exc).split())}") from None


def schema_exists(location: str) -> bool:
    """Whether the ledger's schema is there yet (a command creating it may drop it on failure)."""
    raw, schema = _server(location)
    with raw:
        return _has_schema(raw, schema)


def _has_schema(raw, schema: str) -> bool:
    return raw.execute("SELECT 1 FROM information_schema.schemata WHERE schema_name = %s",
                       (schema,)).fetchone() is not None


def drop_schema(location: str) -> None:
    """Drop the ledger's schema and all in it: only for a schema the failed command created.
    None there is nothing to do (a server that refused to create it, a hot standby, would refuse
    the DROP too, even of nothing)."""
    raw, schema = _server(location)
    with raw:
        if _has_schema(raw, schema):
            raw.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def fresh_postgres(location: str) -> bool:
    """True when the location's schema holds no ledger yet, or one `init` made that holds no event
    (the demo wants a fresh one; `factledger init && factledger demo` is the quick start)."""
    try:
        conn = connect(location, create=False)
    except LedgerError as exc:
        if "no ledger at" in str(exc):
            return True
        raise
    try:
        return conn.execute("SELECT count(*) FROM events").fetchone()[0] == 0
    finally:
        conn.close()


def data_paths(conn: PgConnection) -> list[str]:
    """Where the server keeps its files on its machine: the data directory (shown only to a role
    that may read every setting) and each tablespace's folder.  A local server's are this
    machine's files, which no output of the ledger may overwrite."""
    rows = conn.raw.execute(
        "SELECT setting FROM pg_settings WHERE name = 'data_directory'"
        " UNION ALL SELECT pg_tablespace_location(oid) FROM pg_tablespace").fetchall()
    return [row[0] for row in rows if row[0]]


def standby_status(conn: PgConnection) -> dict | None:
    """On a hot standby: the WAL it has received and replayed (positions, and the bytes between),
    and when the last transaction it replayed committed on the primary; None on a primary.  A
    standby cannot know how far its primary has gone since: `replay_lag_bytes` is what it holds
    and has not applied yet, and `replayed_commit_at` ages also while the primary is idle."""
    if not conn.raw.execute("SELECT pg_is_in_recovery()").fetchone()[0]:
        return None
    received, replayed, lag, committed, paused = conn.raw.execute(
        "SELECT pg_last_wal_receive_lsn()::text, pg_last_wal_replay_lsn()::text,"
        " pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()),"
        " to_char(pg_last_xact_replay_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"
        " pg_is_wal_replay_paused()").fetchone()
    return {"received_lsn": received, "replayed_lsn": replayed,
            "replay_lag_bytes": None if lag is None else int(lag),
            "replayed_commit_at": committed, "replay_paused": bool(paused)}


def _adapt(raw) -> None:
    """Values as the ledger writes and reads them on SQLite: booleans are 0/1 integers, and a
    NUMERIC result (SUM of integers) is an int, or a float when it has a fraction."""
    import psycopg
    from psycopg.adapt import Dumper, Loader
    from psycopg.types.array import ListBinaryDumper

    class BoolAsInt(Dumper):
        oid = psycopg.adapters.types["int8"].oid

        def dump(self, obj):
            return b"1" if obj else b"0"

    class Numeric(Loader):
        def load(self, data):
            text = bytes(data).decode()
            return int(text) if re.fullmatch(r"-?\d+", text) else float(text)

    raw.adapters.register_dumper(bool, BoolAsInt)
    raw.adapters.register_loader("numeric", Numeric)
    # the arrays of `arrays.rewrite` and `_unnested`: binary, no per-element quoting in Python
    raw.adapters.register_dumper(arrays.Binary, ListBinaryDumper)


def open_postgres(location: str, clock: Clock, busy_timeout: float = 5.0, synchronous: str = "FULL",
                  create: bool = True, read_only: bool = False) -> EventStore:
    """The PostgreSQL backend (`ledger/store/backend.py: Backend`): the store on a `PgConnection`.
    (`synchronous` is SQLite's; a server's durability is its own `synchronous_commit`.)"""
    store = EventStore(connect(location, busy_timeout, create and not read_only, read_only), clock)
    store.schema = SCHEMA
    return store


@contextmanager
def locked(conn: PgConnection) -> Iterator[None]:
    """A write transaction under the ledger's lock (schema changes on open, VACUUM's bookkeeping)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


# --- the append-only guard, as the schema has it -----------------------------------------------

def _normal(text: str) -> str:
    return " ".join(text.split())


def guards_present(conn: PgConnection) -> dict[str, str]:
    """Each trigger on events: name -> its function's name and body, whitespace folded."""
    rows = conn.raw.execute(
        "SELECT t.tgname, p.proname, p.prosrc FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid"
        " WHERE t.tgrelid = to_regclass(%s) AND NOT t.tgisinternal", (f'"{conn.schema}".events',))
    return {name: _normal(f"{function} {body}") for name, function, body in rows}


def guards_expected(conn: PgConnection | None = None) -> dict[str, str]:
    """The guard triggers as written: a partitioned ledger's (`partitions.py`) when `conn` is one."""
    partitioned = conn is not None and conn.leaves
    bodies, guards = (_GUARD_SQL_PARTITIONED, _GUARDS_PARTITIONED) if partitioned else (_GUARD_SQL, _GUARDS)
    return {trigger: _normal(f"{function} {bodies[function]}") for trigger, (function, _timing) in guards.items()}


def guard_functions(conn: PgConnection | None = None) -> dict[str, tuple[str, str]]:
    """trigger -> (its function, timing) of the guards as written for this ledger."""
    return _GUARDS_PARTITIONED if conn is not None and conn.leaves else _GUARDS


def guard_problems(conn: PgConnection) -> list[str]:
    """Each guard trigger missing or altered now ([] when all are as written)."""
    found = guards_present(conn)
    out = []
    for name, text in guards_expected(conn).items():
        if name not in found:
            out.append(f"trigger {name} is missing")
        elif found[name] != text:
            out.append(f"trigger {name} is altered")
    return out
