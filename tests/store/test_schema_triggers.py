"""A missing or altered append-only trigger is never passed over: restored on open and reported,
and `verify` names it (exit 1) in a real process."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import orjson
import pytest

from factledger.ledger import Ledger
from tests.conftest import MovableClock, cand

FACTLEDGER = [str(Path(sys.executable).parent / "factledger")]


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "ledger.db"
    with Ledger(path, clock=MovableClock(), create=True) as ledger:
        ledger.observe(cand(value="vegan", session="s1"))
    return path


def sh(path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*FACTLEDGER, "--db", str(path), *args], capture_output=True, text=True)


def drop(path: Path, name: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute(f"DROP TRIGGER {name}")
    conn.commit()
    conn.close()


def triggers_of(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    conn.close()
    return names


def test_an_untouched_ledger_verifies(db):
    assert sh(db, "verify").returncode == 0


def test_a_dropped_delete_trigger_makes_verify_exit_1_naming_it(db):
    drop(db, "events_refuse_delete")
    result = sh(db, "verify")
    assert result.returncode == 1, result.stdout
    warning, error = result.stderr.splitlines()
    assert warning == ("Warning: trigger events_refuse_delete is missing; not repaired (a read-only command "
                       "changes nothing: run `factledger repair`)")
    assert error.startswith("Error: the chain holds, but") and "events_refuse_delete is missing" in error
    # verify is a read: the trigger is still missing; a write open restores it, and the record
    # of that stays: verify keeps naming it
    assert "events_refuse_delete" not in triggers_of(db)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Ledger(db, clock=MovableClock()).close()
    assert "events_refuse_delete" in triggers_of(db)
    again = sh(db, "verify", "--json")
    assert again.returncode == 1 and "events_refuse_delete" in again.stdout


def test_the_open_restores_and_reports_a_missing_trigger(db):
    drop(db, "events_refuse_delete")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Ledger(db, clock=MovableClock()) as ledger:
            assert ledger._work.schema_report == ["trigger events_refuse_delete was missing; restored "
                                                 "(verify reports it)"]
            result = ledger.verify()
    assert any("events_refuse_delete" in str(w.message) for w in caught)
    assert not result["ok"] and result["triggers"] == [
        f"trigger events_refuse_delete was missing until it was restored on open at {_repair_time(db)}"]
    conn = sqlite3.connect(db)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM events")
    conn.close()


def _repair_time(path: Path) -> str:
    conn = sqlite3.connect(path)
    value = conn.execute("SELECT value FROM ledger_meta WHERE key = 'schema_repairs'").fetchone()[0]
    conn.close()
    return orjson.loads(value)[0]["restored_at"]


def test_an_altered_trigger_is_named_by_verify(db):
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER events_refuse_update")
    conn.execute("CREATE TRIGGER events_refuse_update BEFORE UPDATE ON events BEGIN SELECT 1; END")
    conn.commit()
    conn.close()
    result = sh(db, "verify")
    assert result.returncode == 1 and "trigger events_refuse_update is altered" in result.stderr


def test_a_missing_index_is_built_and_reported(db):
    conn = sqlite3.connect(db)
    conn.execute("DROP INDEX events_partition")
    conn.commit()
    conn.close()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        with Ledger(db, clock=MovableClock()) as ledger:
            assert ledger._work.schema_report == ["index events_partition was missing; built"]
            assert ledger.verify()["ok"]
