"""One seam per database (docs/architecture.md): the engine is chosen once, from the location, by
`ledger/store/engines.py`; each engine maps its driver's errors onto factledger's classes
(`ledger/errors.py`) in its own folder; and no module outside `ledger/store/` imports a driver of
a server or tests which engine it has."""

from __future__ import annotations

import re
import sqlite3
import threading
from pathlib import Path

import pytest

from factledger.ledger import Ledger
from factledger.ledger.errors import (
    ConstraintViolation,
    LedgerBusy,
    LedgerDamaged,
    LedgerError,
    LedgerReadOnly,
    NotALedger,
    StorageError,
)
from factledger.ledger.store.engines import engine_for, engine_of
from factledger.ledger.store.errors import storage_errors
from factledger.ledger.store.postgres.engine import POSTGRES
from factledger.ledger.store.sqlite import errors as sqlite_errors
from factledger.ledger.store.sqlite.engine import SQLITE
from tests.conftest import cand

ROOT = Path(__file__).resolve().parents[2]
BUSY = "the ledger is busy: another writer held it past the busy timeout; try again"


# --- the factory --------------------------------------------------------------------------------

@pytest.mark.parametrize("location", ["ledger.db", "/var/lib/x/ledger.db", ":memory:", "file:x.db?mode=ro",
                                      Path("relative/ledger.db"), "postgresql.db", "my-postgres://x"])
def test_a_path_is_sqlites(location):
    assert engine_for(location) is SQLITE


@pytest.mark.parametrize("location", ["postgresql://localhost/db", "postgres://u:pw@host:5432/db?schema=a",
                                      "postgresql:///db?host=/tmp"])
def test_a_postgresql_url_is_postgresqls(location):
    assert engine_for(location) is POSTGRES


def test_an_open_ledger_knows_its_engine(ledger):
    assert ledger._work.engine is SQLITE and engine_of(ledger._conn) is SQLITE
    assert engine_of(sqlite3.connect(":memory:")) is SQLITE
    assert ledger._work.where == str(ledger.path) and not ledger._work.postgres
    assert ledger.shown_location() == str(ledger.path)


def test_a_postgresql_ledger_knows_its_engine(postgres):
    location = postgres.location()
    with Ledger(location, create=True) as ledger:
        assert ledger._work.engine is POSTGRES and engine_of(ledger._conn) is POSTGRES
        assert ledger._work.postgres
        assert ledger._work.where.endswith(f"(schema {ledger._conn.schema})")
        assert ledger.shown_location() == ledger._work.where and ledger.shown_location().count("(schema") == 1


def test_the_engines_describe_a_url_without_its_password():
    assert POSTGRES.describe("postgresql://me:secret@db.example/x") == "postgresql://me:***@db.example/x"
    assert SQLITE.describe(Path("a/b.db")) == "a/b.db"


# --- SQLite's errors, provoked ------------------------------------------------------------------

def test_a_locked_sqlite_file_is_ledger_busy(tmp_path):
    path = tmp_path / "ledger.db"
    Ledger(path, create=True).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with Ledger(path, busy_timeout=0.1) as ledger, pytest.raises(LedgerBusy) as caught:
            ledger.observe(cand())
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert str(caught.value) == BUSY and "locked" in caught.value.detail
    assert not isinstance(caught.value, sqlite3.Error)


def test_a_file_that_is_not_a_database_is_not_a_ledger(tmp_path):
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database\n" * 200)
    with pytest.raises(NotALedger, match="cannot open ledger .*: file is not a database"):
        Ledger(path, create=True)


def test_someone_elses_sqlite_database_is_not_a_ledger(tmp_path):
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(NotALedger, match="is an SQLite database but not a factledger ledger"):
        Ledger(path)


def test_a_read_only_sqlite_connection_maps_to_ledger_read_only(ledger):
    conn = sqlite3.connect(f"file:{ledger.path}?mode=ro", uri=True)
    try:
        with pytest.raises(LedgerReadOnly, match="^the ledger file is read-only$"), storage_errors():
            conn.execute("INSERT INTO ledger_meta VALUES ('k', 'v')")
    finally:
        conn.close()


def test_a_scan_reader_maps_the_file_and_cannot_write(ledger):
    """A replay worker's reader (`Engine.scan_reader`): the log as the ledger has it, read through
    a memory map, and no write possible.  The map's size is what this SQLite was built to allow
    (MAX_MMAP_SIZE; a build with 0 maps nothing, and the reader still reads)."""
    ledger.observe(cand())
    reader = SQLITE.scan_reader(ledger.path, ledger.clock)
    try:
        assert reader.head() == ledger.head()
        options = [row[0] for row in reader.conn.execute("PRAGMA compile_options")]
        built_max = next((int(o.split("=")[1], 0) for o in options if o.startswith("MAX_MMAP_SIZE=")), 0x7fff0000)
        assert reader.conn.execute("PRAGMA mmap_size").fetchone()[0] == built_max
        assert ledger._conn.execute("PRAGMA mmap_size").fetchone()[0] == 0     # the writer's is not mapped
        with pytest.raises(LedgerReadOnly), storage_errors():
            reader.conn.execute("INSERT INTO ledger_meta VALUES ('k', 'v')")
    finally:
        reader.conn.close()


def test_a_postgresql_scan_reader_cannot_write(postgres):
    location = postgres.location()
    with Ledger(location, create=True) as ledger:
        ledger.observe(cand())
        reader = POSTGRES.scan_reader(location, ledger.clock)
        try:
            assert reader.head() == ledger.head()
            with pytest.raises(LedgerReadOnly), storage_errors():
                reader.conn.execute("INSERT INTO ledger_meta VALUES ('k', 'v')")
        finally:
            reader.conn.close()


def test_a_refused_sqlite_write_maps_to_constraint_violation(ledger):
    ledger.observe(cand())
    with pytest.raises(ConstraintViolation, match="append-only"), storage_errors():
        ledger._conn.execute("DELETE FROM events")


def test_a_damaged_sqlite_file_maps_to_ledger_damaged(tmp_path):
    path = tmp_path / "ledger.db"
    with Ledger(path, create=True) as ledger:
        for n in range(200):
            ledger.observe(cand(value=f"v{n}", session=f"s{n}", event=f"e{n}"))
    data = bytearray(path.read_bytes())
    page = 4096
    for offset in range(2 * page, len(data), page):     # every page after the schema's, overwritten
        data[offset:offset + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    conn = sqlite3.connect(path)
    try:
        with pytest.raises(LedgerDamaged, match="^the ledger file is not usable: .*malformed"), storage_errors():
            conn.execute("SELECT count(*), max(body) FROM events").fetchall()
    finally:
        conn.close()


def test_a_misuse_of_the_driver_is_left_as_it_is():
    """A closed connection or a wrong binding is a bug, not the database's answer."""
    conn = sqlite3.connect(":memory:")
    conn.close()
    with pytest.raises(sqlite3.ProgrammingError), storage_errors():
        conn.execute("SELECT 1")
    assert not sqlite_errors.is_storage(sqlite3.ProgrammingError("closed"))


def test_the_storage_classes_are_ledger_errors():
    for cls in (LedgerBusy, LedgerReadOnly, LedgerDamaged, NotALedger, ConstraintViolation):
        assert issubclass(cls, StorageError) and issubclass(cls, LedgerError)
        assert not issubclass(cls, sqlite3.Error)


# --- PostgreSQL's errors, provoked --------------------------------------------------------------

def test_a_postgresql_read_only_transaction_is_ledger_read_only(postgres):
    with Ledger(postgres.location(), create=True) as ledger:
        ledger._conn.raw.execute("SET default_transaction_read_only = on")
        with pytest.raises(LedgerReadOnly) as caught:
            ledger.observe(cand())
        assert str(caught.value) == "the ledger file is read-only"
        assert "read-only transaction" in caught.value.detail
        assert not isinstance(caught.value, sqlite3.Error)


def test_a_postgresql_lock_timeout_is_ledger_busy(postgres):
    import psycopg  # noqa: PLC0415 - the postgres extra

    from factledger.ledger.store.postgres.backend import split_location  # noqa: PLC0415

    location = postgres.location()
    with Ledger(location, create=True) as ledger:
        ledger.observe(cand())
    conninfo, schema = split_location(location)
    holder = psycopg.connect(conninfo)
    try:
        holder.execute(f'LOCK TABLE "{schema}".events IN ACCESS EXCLUSIVE MODE')
        with Ledger(location, busy_timeout=0.2) as ledger, pytest.raises(LedgerBusy) as caught:
            ledger.observe(cand(value="vegan", session="s2", event="e2"))
    finally:
        holder.rollback()
        holder.close()
    assert str(caught.value) == BUSY and caught.value.detail.startswith("database is locked")
    assert not isinstance(caught.value, sqlite3.Error)


def test_a_refused_postgresql_write_is_a_constraint_violation(postgres):
    with Ledger(postgres.location(), create=True) as ledger:
        ledger.observe(cand())
        with pytest.raises(ConstraintViolation, match="append-only"):
            ledger._conn.execute("DELETE FROM events")


def test_two_postgresql_writers_queue_rather_than_fail(postgres):
    """The busy mapping does not turn a short wait into an error: writers take turns."""
    location = postgres.location()
    Ledger(location, create=True).close()
    failures: list[BaseException] = []

    def write(n: int) -> None:
        try:
            with Ledger(location, create=True) as ledger:
                ledger.observe(cand(value=f"v{n}", session=f"s{n}", event=f"e{n}"))
        except BaseException as exc:      # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


# --- the seam, as the product tree has it -------------------------------------------------------

_PRODUCT = ("ledger", "projections", "cli", "web", "adk", "mcp_server", "factledger")
_ENGINE_TESTS = [
    re.compile(r"^\s*(import|from)\s+psycopg\b", re.M),
    re.compile(r"\bis_postgres\b"),
    re.compile(r"getattr\([^)]*[\"'](backend|engine)[\"']"),
    re.compile(r"[=!]=\s*[\"'](postgres|postgresql|sqlite|sqlite3)[\"']", re.I),
    re.compile(r"[\"'](postgres|postgresql|sqlite|sqlite3)[\"']\s*[=!]=", re.I),
    re.compile(r"\bin\s*\(\s*[\"'](postgres|postgresql|sqlite)[\"']", re.I),
    re.compile(r"\bimport\s+\w*(pgstore|postgres\.backend)\b|from factledger\.ledger\.store\.postgres\b"),
]


def _offenders(folders) -> list[str]:
    found = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith("ledger/store/"):
                continue                  # the store is where engines live
            text = path.read_text()
            for pattern in _ENGINE_TESTS:
                for match in pattern.finditer(text):
                    line = text.count("\n", 0, match.start()) + 1
                    found.append(f"{relative}:{line}: {match.group(0).strip()}")
    return found


def test_no_module_outside_the_store_chooses_an_engine():
    """No psycopg import, no engine-kind test, no reach into the PostgreSQL folder: the engine is
    the store's business (`ledger/store/engines.py`)."""
    assert _offenders(_PRODUCT) == []


_DRIVER_CATCH = re.compile(r"except\s*\(?[^:\n]*\b(sqlite3|psycopg)\.\w*(Error|Warning)\b")


def test_no_module_of_the_ledger_catches_a_drivers_error():
    """Above the store, errors are factledger's (`ledger/store/errors.py: storage_errors`)."""
    found = []
    for folder in ("ledger", "projections"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith("ledger/store/"):
                continue
            text = path.read_text()
            found += [f"{relative}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
                      for m in _DRIVER_CATCH.finditer(text)]
    assert found == []
    assert _DRIVER_CATCH.search("    except (sqlite3.OperationalError, LedgerError):")


def test_the_grep_would_catch_an_engine_test(tmp_path):
    """The patterns above find what they are for (a guard against a grep that finds nothing)."""
    samples = ['import psycopg\n', 'if is_postgres(path):\n', 'x = getattr(conn, "backend", "sqlite")\n',
               'if kind == "postgresql":\n', 'if "sqlite" != kind:\n',
               'from factledger.ledger.store.postgres.backend import display\n']
    for sample in samples:
        assert any(p.search(sample) for p in _ENGINE_TESTS), sample
    assert not any(p.search('raise LedgerError("this ledger is on PostgreSQL")\n') for p in _ENGINE_TESTS)
