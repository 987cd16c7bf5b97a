"""`factledger query`: read-only SQL in a real process; anything that writes is refused, nothing changes."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from factledger.ledger import Ledger
from tests.conftest import MovableClock, cand

FACTLEDGER = str(Path(sys.executable).parent / "factledger")


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("query") / "ledger.db"
    with Ledger(path, clock=MovableClock(), create=True) as ledger:
        ledger.observe(cand(value="vegan", session="s1"))
        ledger.observe(cand(predicate="home_city", value="Lisbon", session="s2"))
    return path


def sh(path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([FACTLEDGER, "--db", str(path), "query", *args], capture_output=True, text=True)


def fingerprint(path: Path) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else "-"
            for p in (path, Path(f"{path}-wal"))]


def test_count_as_json(db):
    result = sh(db, "select count(*) as n from facts_current", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{"n": 2}]


def test_named_parameters_and_the_other_formats(db):
    result = sh(db, "select value from facts_current where predicate = :p", "-p", "p", "home_city", "--nl")
    assert result.returncode == 0, result.stderr
    assert [json.loads(line) for line in result.stdout.splitlines()] == [{"value": "Lisbon"}]
    csv = sh(db, "select predicate, value from facts_current order by predicate", "--csv")
    assert csv.stdout.splitlines() == ["predicate,value", "diet,vegan", "home_city,Lisbon"]
    table = sh(db, "select predicate from facts_current order by predicate", "-t")
    assert table.returncode == 0 and "home_city" in table.stdout


def test_blobs_travel_as_sqlite_utils_writes_them(db):
    result = sh(db, "select salt from events where seq = 1", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)[0]["salt"]["$base64"] is True


@pytest.mark.parametrize("sql", [
    "delete from facts_current",
    "DELETE FROM events",
    "insert into ledger_meta values ('k', 'v')",
    "update facts_current set value = 'x'",
    "drop table facts_current",
    "create table t (x)",
    "create index i on events (type)",
    "drop trigger events_refuse_delete",
    "pragma journal_mode = delete",
    "pragma user_version = 7",
    "attach database ':memory:' as other",
    "vacuum",
    "begin immediate",
    "replace into ledger_meta values ('k', 'v')",
    "with x as (select 1) delete from review_queue",
])
def test_anything_that_writes_is_refused_and_nothing_changes(db, sql):
    before = fingerprint(db)
    result = sh(db, sql)
    assert result.returncode == 1, (sql, result.stdout)
    assert result.stderr.startswith("Error: ") and "Traceback" not in result.stderr
    assert fingerprint(db) == before
    assert json.loads(sh(db, "select count(*) as n from facts_current", "--json").stdout) == [{"n": 2}]


def test_a_bad_statement_and_a_missing_file_are_errors(db, tmp_path):
    bad = sh(db, "select nope from nowhere")
    assert bad.returncode == 1 and bad.stderr.startswith("Error: query failed")
    missing = subprocess.run([FACTLEDGER, "--db", str(tmp_path / "none.db"), "query", "select 1"],
                             capture_output=True, text=True)
    assert missing.returncode == 1 and missing.stderr.startswith("Error: no ledger at")
    assert not (tmp_path / "none.db").exists()


@pytest.mark.parametrize("sql", ["ATTACH DATABASE 'x.db' AS x", "vacuum", "begin", "detach x"])
def test_a_statement_that_returns_no_rows_is_refused_in_our_words(db, sql):
    """Not sqlite-utils' "use execute() for other statements": the reader never called execute()."""
    result = sh(db, sql)
    assert result.returncode == 1 and result.stderr.startswith("Error: query runs one statement that returns rows")
    assert "execute()" not in result.stderr


def test_the_ledger_still_verifies_after_the_refusals(db):
    with Ledger(db, clock=MovableClock()) as ledger:
        assert ledger.verify()["ok"]
