"""A failed `import` into a ledger it was creating leaves nothing behind, on either backend: no file
(nor -wal, -shm) and no schema, so the next attempt starts as clean as the first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from factledger.ledger.service import holds_location

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))


@pytest.fixture(params=["sqlite", "postgres"])
def new_location(request, tmp_path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "new.db")
    return request.getfixturevalue("postgres").location()


def test_a_failed_import_into_a_new_ledger_leaves_no_file_or_schema(new_location, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert not holds_location(new_location)
    done = subprocess.run([FACTLEDGER, "--db", new_location, "import", str(bad)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1 and "Error: line 1 of the export is not JSON" in done.stderr
    assert not holds_location(new_location)
    assert not list(tmp_path.glob("new.db*"))


def test_a_connection_error_is_one_line(tmp_path):
    """psycopg's message spans lines; `Error:` prints it on one, with no literal \\n or \\t."""
    url = f"postgresql://nobody@/nowhere?host={tmp_path}&schema=x"
    done = subprocess.run([FACTLEDGER, "--db", url, "facts", "--app", "a", "--user", "u"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stderr.startswith("Error: cannot open ledger")
    assert "\\n" not in done.stderr and "\\t" not in done.stderr and done.stderr.count("\n") == 1
