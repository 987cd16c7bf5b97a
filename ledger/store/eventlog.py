"""The append-only event store: schema, connection discipline and the one way to append.

Writers take `BEGIN IMMEDIATE` so two processes never interleave inside a batch; the tail of the
chain is read once per transaction, under that lock, so appends cost the same at a million events
as at a thousand.  A transaction that names its partitions, on an engine that locks them
(PostgreSQL: `begin_partitions`), reads and decides under those locks and reads the tail under
the chain's lock at its first append.  Triggers make the table refuse DELETE and every UPDATE
except the redaction shape, so even a buggy caller cannot rewrite history without dropping them
first (which `verify` then catches).
"""

from __future__ import annotations

import sqlite3
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from factledger.ledger.domain.eventrow import EVENT_COLUMNS, Event, decode
from factledger.ledger.domain.events import Body
from factledger.ledger.errors import LedgerError
from factledger.ledger.store import chain
from factledger.ledger.store.sqlite import errors as sqlite_errors
from factledger.ledger.vocabulary.clock import Clock, iso
from factledger.ledger.vocabulary.ids import new_id
from factledger.ledger.vocabulary.words import ERASED_PREFIX

_TAIL = "SELECT seq, hash, recorded_at FROM events ORDER BY seq DESC LIMIT 1"
_INSERT = ("INSERT INTO events (seq, event_id, type, app, user, recorded_at, body, salt,"
           " commitment, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?,?,?)")

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    app TEXT NOT NULL,
    user TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    body TEXT,
    salt BLOB,
    commitment TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    redacted_by INTEGER
);
CREATE INDEX IF NOT EXISTS events_partition ON events (app, user, seq);
CREATE TRIGGER IF NOT EXISTS events_refuse_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'factledger: the event log is append-only');
END;
CREATE TRIGGER IF NOT EXISTS events_refuse_update BEFORE UPDATE ON events
WHEN NOT (
    NEW.seq IS OLD.seq AND NEW.event_id IS OLD.event_id AND NEW.type IS OLD.type
    AND NEW.app IS OLD.app AND NEW.recorded_at IS OLD.recorded_at
    AND NEW.commitment IS OLD.commitment AND NEW.prev_hash IS OLD.prev_hash
    AND NEW.hash IS OLD.hash
    AND NEW.body IS NULL AND NEW.salt IS NULL AND NEW.redacted_by IS NOT NULL
    AND (OLD.redacted_by IS NULL OR NEW.redacted_by IS OLD.redacted_by)
    AND (NEW.user IS OLD.user OR NEW.user LIKE '""" + ERASED_PREFIX + """%')
)
BEGIN
    SELECT RAISE(ABORT, 'factledger: events may only be redacted, never rewritten');
END;
CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def connect(path: str | Path, busy_timeout: float = 5.0, synchronous: str = "FULL",
            read_only: bool = False) -> sqlite3.Connection:
    """Open the ledger with the pragmas every writer must share.

    `read_only`: by a `mode=ro` URI with `query_only` on, so SQLite itself refuses any write and
    never checkpoints: the main file's bytes and the WAL's stay as they were (docs/decisions.md,
    "Read-only opens"); the journal mode is left as the file has it."""
    try:
        if read_only:
            conn = sqlite3.connect(read_only_uri(path), uri=True, isolation_level=None,
                                   timeout=busy_timeout, check_same_thread=False)
            conn.execute("PRAGMA query_only = ON")
        else:
            conn = sqlite3.connect(str(path), isolation_level=None, timeout=busy_timeout,
                                   check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        if not read_only:
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        conn.execute("PRAGMA secure_delete = ON")
        # Performance only (docs/performance.md): the log, the projections and their indexes share
        # one page cache, and SQLite's default 2 MiB thrashes once the ledger outgrows it.  This is
        # a ceiling (pages are allocated as they are read), and changes nothing that is written.
        conn.execute("PRAGMA cache_size = -65536")
    except sqlite3.DatabaseError as exc:
        raise sqlite_errors.opening(path, exc) from None
    return conn


class EventStore:
    def __init__(self, conn: sqlite3.Connection, clock: Clock):
        self.conn = conn
        self.clock = clock
        self._tail: tuple[int, str, str] | None = None
        self._open = False                  # inside `transaction()`
        self._first = 0                     # the seq the transaction's first append takes
        # the (app, user) pairs a partition writer's transaction locked; None: the ledger's lock
        self._partitions: frozenset | None = None
        self._now = ""                      # one recorded_at for every event of a transaction
        self._on_append: list[Callable[[Event], None]] = []
        self._on_commit: list[Callable[[], None]] = []
        self._before_begin: list[Callable[[], None]] = []
        # Inside `buffered()`: the rows appended and not yet written (one `executemany` at the end).
        self._pending: list[tuple] | None = None

    schema = SCHEMA

    def on_append(self, callback: Callable[[Event], None]) -> None:
        """Projections subscribe here; they run inside the appending transaction."""
        self._on_append.append(callback)

    def on_commit(self, callback: Callable[[], None]) -> None:
        """Called after each COMMIT has returned (the transaction is durable): never inside it."""
        self._on_commit.append(callback)

    def before_begin(self, callback: Callable[[], None]) -> None:
        """Called before each BEGIN IMMEDIATE, outside any transaction."""
        self._before_begin.append(callback)

    @contextmanager
    def transaction(self, partitions=None) -> Iterator[EventStore]:
        """One logical operation: its events and the projection updates commit together or not at all.

        `partitions`: the (app, user) pairs every event of the transaction belongs to.  Where the
        engine locks partitions (`begin_partitions`, PostgreSQL), the reads and decisions run
        under those locks beside writers of other partitions, and the chain's tail is read under
        the chain's lock at the first append (`_take_tail`); elsewhere, and for many partitions,
        the ledger's one lock from the start, as without."""
        if self.conn.in_transaction:
            raise LedgerError("internal: nested ledger transaction")
        for callback in self._before_begin:
            callback()
        begin_partitions = getattr(self.conn, "begin_partitions", None) if partitions is not None else None
        try:
            if begin_partitions is not None and begin_partitions(partitions):
                self._partitions = frozenset(partitions)
            else:
                self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise busy_error(exc) from None
        except BaseException:
            if self.conn.in_transaction:    # a lock not granted: nothing of the transaction stays
                self.conn.execute("ROLLBACK")
            self._partitions = None
            raise
        self._open = True
        try:
            if self._partitions is None:
                self._take_tail()
            yield self
            self.write_pending()
            self.conn.execute("COMMIT")
        except BaseException as exc:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            if sqlite_errors.is_storage(exc):
                raise sqlite_errors.translate(exc) from None
            raise
        finally:
            self._tail = None
            self._open = False
            self._partitions = None
            if self._pending:
                self._pending = []           # rolled back: what was held is not the log's
        for callback in self._on_commit:
            try:
                callback()
            except Exception as exc:  # the transaction is durable: never report it as failed
                warnings.warn(f"factledger: an after-commit step failed: {exc!r}", RuntimeWarning,
                              stacklevel=3)

    @property
    def last_seq(self) -> int:
        """Seq of the last event appended in the open transaction (0 outside one)."""
        return self._tail[0] if self._tail else 0

    def _take_tail(self) -> None:
        """Read the chain's tail under the lock that orders appends (a partition writer's chain
        lock, taken here), and the one recorded_at of the transaction's events."""
        take_chain = getattr(self.conn, "take_chain", None) if self._partitions is not None else None
        if take_chain is not None:
            row = take_chain(_TAIL)            # the lock and the read in one round trip
            self._tail = tuple(row) if row else (0, chain.GENESIS, "")
        else:
            self._tail = tail(self.conn)
        self._first = self._tail[0] + 1
        self._now = max(iso(self.clock()), self._tail[2])

    def append(self, body: Body | dict) -> Event:
        """`body`: a model, or the dict one dumps to built by `ledger.domain.dumped` (validated
        as the model validates: the write path's bodies, built without the model)."""
        if not self._open:
            raise LedgerError("internal: append outside a transaction")
        data = body if type(body) is dict else body.model_dump(mode="json", exclude_none=True)
        app, user = data["app"], data["user"]
        if self._partitions is not None and (app, user) not in self._partitions:
            raise LedgerError(f"internal: an event of ({app}, {user}), a partition this "
                              "transaction did not lock")
        if self._tail is None:
            self._take_tail()
        last_seq, last_hash, last_at = self._tail
        raw = chain.canonical(data)
        salt = chain.new_salt()
        commit = chain.commitment(salt, raw)
        seq = last_seq + 1
        event_id = new_id()
        recorded_at = max(self._now, last_at)
        link = chain.link(last_hash, seq, event_id, data["type"], recorded_at, commit)
        row = (seq, event_id, data["type"], app, user, recorded_at, raw.decode(), salt,
               commit, last_hash, link)
        if self._pending is not None:
            self._pending.append(row)
        else:
            self.conn.execute(_INSERT, row)
        self._tail = (seq, link, recorded_at)
        event = Event(seq, event_id, data["type"], app, user, recorded_at, data)
        for callback in self._on_append:
            callback(event)
        return event

    @contextmanager
    def buffered(self) -> Iterator[None]:
        """Hold the rows appended inside in memory and write them with one `executemany` when it
        ends (or at `write_pending`, or before COMMIT).  Only where nothing reads the log's new
        rows meanwhile (a batch of candidates): a reader of the log in between calls
        `write_pending` first.  A rollback drops what is held with the rest."""
        if self._pending is not None:
            yield
            return
        self._pending = []
        try:
            yield
            self.write_pending()
        finally:
            self._pending = None

    def closing(self) -> None:
        """Inside `transaction()`, before its last writes (the log's held rows, the projections'
        rows and position): where the connection can, they and the COMMIT go in one round trip
        (PostgreSQL: `pipelined`), the transaction's reads done by then."""
        pipelined = getattr(self.conn, "pipelined", None)
        if pipelined is not None and self._tail is not None:
            pipelined(self._tail[0] - self._first + 1)

    def write_pending(self) -> None:
        """Write the rows `buffered()` holds, in seq order, with one `executemany`."""
        rows = self._pending
        if rows:
            self.conn.executemany(_INSERT, rows)
            rows.clear()

    def head(self) -> tuple[int, str]:
        return head(self.conn)

    def events(self, app: str | None = None, user: str | None = None, after: int = 0) -> Iterator[Event]:
        return iter_events(self.conn, app, user, after)

    def snapshot(self):
        return snapshot(self.conn)


def read_only_uri(path: str | Path) -> str:
    """The file by absolute path, opened read-only (a relative path would follow a chdir)."""
    text = str(path)
    if text == ":memory:":
        return "file::memory:?mode=ro"
    return f"file:{quote(str(Path(text).resolve()))}?mode=ro"


def open_sqlite(path: str | Path, clock: Clock, busy_timeout: float = 5.0,
                synchronous: str = "FULL", read_only: bool = False) -> EventStore:
    """The SQLite backend (`ledger/store/backend.py: Backend`): a connection with the shared pragmas and
    the store on it."""
    return EventStore(connect(path, busy_timeout, synchronous, read_only), clock)


@contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction around a read of several statements, so every part of it sees the
    same committed state (a WAL reader keeps one snapshot from its first read to the end) and a
    concurrent writer cannot make them disagree.  Inside a transaction that is already open (a
    write, or an outer snapshot) it adds nothing.  Ends with ROLLBACK: a read keeps nothing."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")


def tail(conn: sqlite3.Connection) -> tuple[int, str, str]:
    """The last event's seq, hash and recorded_at (the genesis when the log is empty): the one
    head query, for the writer (under its lock), `head` and `verify`."""
    row = conn.execute(_TAIL).fetchone()
    return tuple(row) if row else (0, chain.GENESIS, "")


def head(conn: sqlite3.Connection) -> tuple[int, str]:
    seq, hash_, _at = tail(conn)
    return seq, hash_


def busy_error(exc: sqlite3.OperationalError) -> LedgerError:
    """SQLite's error as factledger's (`ledger/store/sqlite/errors.py`)."""
    return sqlite_errors.translate(exc)


def equal_filters(**columns) -> tuple[str, list]:
    """` AND col = ?` for each column given a value (None means no filter), and its arguments.

    The optional partition (and status, type) filters of the read paths; column names come from
    code, never from input."""
    given = [(name, value) for name, value in columns.items() if value is not None]
    return "".join(f" AND {name} = ?" for name, _ in given), [value for _, value in given]


def scrub(conn: sqlite3.Connection, seqs: list[int], by: int) -> None:
    """Redact these events: body and salt gone, the authorising `Redacted` event's seq kept (the
    one UPDATE the append-only guard lets through; the chain hashes stay)."""
    conn.executemany("UPDATE events SET body = NULL, salt = NULL, redacted_by = ? WHERE seq = ?",
                     [(by, seq) for seq in seqs])


def pseudonymise(conn: sqlite3.Connection, app: str, user: str, pseudonym: str, by: int) -> None:
    """Redact a whole user: every event's body and salt gone and its `user` replaced by the pseudonym."""
    conn.execute("UPDATE events SET user = ?, body = NULL, salt = NULL,"
                 " redacted_by = COALESCE(redacted_by, ?) WHERE app = ? AND user = ?",
                 (pseudonym, by, app, user))


def iter_events(conn: sqlite3.Connection, app: str | None = None, user: str | None = None,
                after: int = 0) -> Iterator[Event]:
    """Stream the log in seq order without loading it whole (rebuilds of a million events)."""
    where, args = equal_filters(app=app, user=user)
    cursor = conn.execute(f"SELECT {EVENT_COLUMNS} FROM events WHERE seq > ?" + where + " ORDER BY seq",
                          [after, *args])
    return map(decode, cursor)
