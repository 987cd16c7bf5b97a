"""One door: the shells (CLI, web view, ADK service) use the `Ledger` facade and nothing under it.

The import contract (pyproject, `make lint`) catches an import; this catches, from the source, a
shell that reaches a ledger's connection, and a `Ledger` that shows it again.
"""

from __future__ import annotations

import re
from pathlib import Path

from factledger.ledger.service import Ledger, display_location, is_server_location

ROOT = Path(__file__).resolve().parents[2]
SHELLS = ("cli", "web", "adk", "mcp_server")
BYPASS = re.compile(r"\.conn\b|factledger\.projections|factledger\.ledger\.(?:store|unit|reads)\b")


def test_no_shell_names_the_connection_the_store_or_the_projections():
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for folder in SHELLS for path in sorted((ROOT / folder).rglob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1) if BYPASS.search(line)]
    assert found == []


def test_the_connection_store_and_unit_of_work_are_private(ledger):
    for name in ("conn", "store", "work"):
        assert not hasattr(ledger, name)
    assert ledger._conn is ledger._work.conn and ledger._store is ledger._work.store


def test_a_location_is_told_apart_without_the_store():
    assert is_server_location("postgresql://u@host/db") and is_server_location("postgres://host/db")
    assert not is_server_location("factledger.db")
    assert display_location("postgresql://u:secret@host:5433/db") == "postgresql://u:***@host:5433/db"


def test_shown_location_of_a_file_is_its_path(tmp_path):
    with Ledger(tmp_path / "l.db", create=True) as ledger:
        assert ledger.shown_location() == str(tmp_path / "l.db")
        assert ledger.event_count() == 0 and ledger.notices.first_recorded_at() is None
        assert ledger.checkpoint_origin() is None and ledger.erased.receipt_tickets() == {}


DRIVER = re.compile(r"^\s*(?:import|from)\s+(?:sqlite3|psycopg)\b")


def test_no_shell_imports_a_database_driver():
    """The facade raises factledger's errors only (`ledger/store/errors.py`,
    `storage_errors_at_the_door`): a shell catches `LedgerError`, never `sqlite3`'s or psycopg's."""
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for folder in SHELLS for path in sorted((ROOT / folder).rglob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1) if DRIVER.search(line)]
    assert found == []


def test_the_facade_raises_factledgers_errors_only():
    """A driver error met anywhere in a `Ledger` method, or while a stream it returned is read,
    reaches the caller as a `LedgerError` (busy as `LedgerBusy`)."""
    import sqlite3

    import pytest

    from factledger.ledger import LedgerBusy, StorageError
    from factledger.ledger.store.errors import storage_errors_at_the_door

    @storage_errors_at_the_door
    class Facade:
        def read(self):
            raise sqlite3.OperationalError("database is locked")

        def stream(self):
            yield 1
            raise sqlite3.DatabaseError("database disk image is malformed")

        def _private(self):
            raise sqlite3.OperationalError("database is locked")

    with pytest.raises(LedgerBusy):
        Facade().read()
    rows = Facade().stream()
    assert next(rows) == 1
    with pytest.raises(StorageError):
        next(rows)
    with pytest.raises(sqlite3.OperationalError):      # internals are left to the methods that call them
        Facade()._private()


def test_a_busy_ledger_is_said_in_factledgers_words(tmp_path):
    """A real file held by another writer: a facade write waits out its busy timeout and raises
    `LedgerBusy`, which every shell prints as it is."""
    import sqlite3

    import pytest

    from factledger.ledger import LedgerBusy, make_candidate

    path = tmp_path / "l.db"
    Ledger(path, create=True).close()
    holder = sqlite3.connect(path)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with Ledger(path, busy_timeout=0.1) as ledger, pytest.raises(LedgerBusy):
            ledger.observe(make_candidate(app="a", user="u", predicate="home_city", value="Pune",
                                          quote="I live in Pune now", session="s1", evidence_event="e1",
                                          said_at="2026-06-01T10:00:00Z"))
    finally:
        holder.rollback()
        holder.close()
