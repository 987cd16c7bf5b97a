"""Rows of the wrong shape: `verify`, `replay --check` and `import` name the first bad seq.

Before the row checks, a salt rewritten as TEXT or INTEGER made `verify` crash with a TypeError,
a body stored as a BLOB verified, and a live row with `redacted_by` set passed `verify`, `replay
--check` and `import`, after which every forget of that user failed on the table's trigger.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from factledger.ledger import Ledger, LedgerError
from tests.audit.forger import raw_forger
from tests.conftest import cand

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
REDACTED = 7          # the fixture's Redacted event (six observations; seqs 3 and 4 forgotten)


@pytest.fixture
def db(tmp_path, clock):
    path = tmp_path / "shape.db"
    with Ledger(path, clock=clock, create=True) as ledger:
        for i in range(6):
            clock.tick()
            ledger.observe(cand(predicate="allergy", value=f"nut{i}", session=f"s{i // 2}",
                                said_at=f"2026-08-{i + 1:02d}"))
        clock.tick()
        receipt = ledger.forget("app", "u1", session="s1", reason="request")
        assert receipt["redaction_seq"] == REDACTED and receipt["counts"]["events"] == 2
    return path


def raw(path: Path, *statements: str) -> None:
    conn = raw_forger(path)              # the triggers come back on close (tests/audit/forger.py)
    for sql in statements:
        conn.execute(sql)
    conn.close()


def cli(path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([FACTLEDGER, "--db", str(path), *args], capture_output=True, text=True)


def scrubbed_seqs(path: Path) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute("SELECT seq FROM events WHERE body IS NULL ORDER BY seq")]
    finally:
        conn.close()


def test_the_fixture_is_sound(db):
    assert scrubbed_seqs(db) == [3, 4]
    assert cli(db, "verify").returncode == 0
    assert cli(db, "replay", "--check").returncode == 0


CASES = [
    ("UPDATE events SET redacted_by = 7 WHERE seq = 1", 1, "live event has redacted_by"),
    ("UPDATE events SET redacted_by = 7 WHERE seq = 5", 5, "live event has redacted_by"),
    ("UPDATE events SET salt = hex(salt) WHERE seq = 2", 2, "salt is TEXT"),
    ("UPDATE events SET salt = 42 WHERE seq = 6", 6, "salt is INTEGER"),
    ("UPDATE events SET salt = 4.5 WHERE seq = 1", 1, "salt is REAL"),
    ("UPDATE events SET body = CAST(body AS BLOB) WHERE seq = 2", 2, "body is BLOB"),
    ("UPDATE events SET body = 'not json' WHERE seq = 2", 2, "body"),
    ("UPDATE events SET redacted_by = 'eight' WHERE seq = 3", 3, "redacted_by is TEXT"),
    ("UPDATE events SET redacted_by = 8.5 WHERE seq = 4", 4, "redacted_by is REAL"),
    ("UPDATE events SET user = CAST('u1' AS BLOB) WHERE seq = 3", 3, "user is BLOB"),
    ("UPDATE events SET app = x'61' WHERE seq = 4", 4, "app is BLOB"),
    ("UPDATE events SET redacted_by = 2 WHERE seq = 3", 3, "Redacted event naming it"),
    ("UPDATE events SET event_id = CAST(event_id AS BLOB) WHERE seq = 5", 5, "event_id is BLOB"),
]


@pytest.mark.parametrize("statement,bad_seq,problem", CASES, ids=[c[0][18:60] for c in CASES])
def test_verify_names_the_first_bad_row(db, statement, bad_seq, problem):
    raw(db, statement)
    done = cli(db, "verify", "--json")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("Error: ")
    report = json.loads(done.stdout)
    assert report["first_bad_seq"] == bad_seq and problem in report["problem"], report


@pytest.mark.parametrize("statement,bad_seq,problem", CASES, ids=[c[0][18:60] for c in CASES])
def test_replay_check_names_the_first_bad_row(db, statement, bad_seq, problem):
    raw(db, statement)
    done = cli(db, "replay", "--check")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"seq {bad_seq}:" in done.stderr, done.stderr


def test_a_damaged_row_is_not_exported(db, tmp_path):
    raw(db, "UPDATE events SET salt = hex(salt) WHERE seq = 2")
    done = cli(db, "export", "--all", "--out", str(tmp_path / "x.jsonl"))
    assert done.returncode == 1 and "seq 2" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "x.jsonl").exists()


def export_lines(db: Path, tmp_path: Path) -> list[dict]:
    out = tmp_path / "log.jsonl"
    assert cli(db, "export", "--all", "--out", str(out)).returncode == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def import_(lines: list[dict], tmp_path: Path, name: str = "in") -> subprocess.CompletedProcess:
    src = tmp_path / f"{name}.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return cli(tmp_path / f"{name}.db", "import", str(src))


def test_import_refuses_a_live_row_with_redacted_by(db, tmp_path):
    lines = export_lines(db, tmp_path)
    assert import_(lines, tmp_path, "clean").returncode == 0
    lines[1]["redacted_by"] = REDACTED                         # seq 1, a live observation
    done = import_(lines, tmp_path)
    assert done.returncode == 1 and "seq 1" in done.stderr and "redacted_by" in done.stderr
    assert not (tmp_path / "in.db").exists()


@pytest.mark.parametrize("column,value", [("seq", "1"), ("seq", 2**70), ("seq", True),
                                           ("redacted_by", [8]), ("redacted_by", 2**70),
                                           ("redacted_by", "8"), ("app", 5), ("user", None),
                                           ("event_id", {"a": 1}), ("recorded_at", 1.5)])
def test_import_checks_every_columns_type(db, tmp_path, column, value):
    lines = export_lines(db, tmp_path)
    lines[3][column] = value                                   # seq 3, a scrubbed row
    done = import_(lines, tmp_path)
    assert done.returncode == 1 and done.stderr.startswith("Error: line 4"), done.stderr
    assert "Traceback" not in done.stderr


def test_the_library_reports_instead_of_raising(db):
    raw(db, "UPDATE events SET salt = 42 WHERE seq = 6")
    with Ledger(db) as ledger:
        result = ledger.verify()
        assert (result["ok"], result["first_bad_seq"]) == (False, 6)
        assert any("seq 6" in d for d in ledger.replay_differences())
        with pytest.raises(LedgerError, match="seq 6"):
            ledger.export_log(open(db.parent / "o.jsonl", "w"))
