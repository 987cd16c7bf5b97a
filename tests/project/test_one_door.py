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
        assert ledger.event_count() == 0 and ledger.first_recorded_at() is None
        assert ledger.checkpoint_origin() is None and ledger.receipt_tickets() == {}
