"""The access ledger from the command line (real subprocesses): `recall --as` records, a recall
without it writes no byte, `served` lists, `served show` says identical, `report access` lists
who saw which health fact when, and `verify` names a forged or deleted serve record."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from factledger.ledger import Ledger
from tests.conftest import cand

FACTLEDGER = [str(Path(sys.executable).with_name("factledger"))]


def run(db: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(FACTLEDGER + ["--db", str(db), *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def db(tmp_path, clock):
    path = tmp_path / "ledger.db"
    with Ledger(path, clock=clock, create=True) as ledger:
        ledger.observe(cand(predicate="allergy", value="peanuts", quote="I am allergic to peanuts"))
        ledger.observe(cand(value="vegetarian", event="e2"))
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(b"".join(Path(str(path) + s).read_bytes() for s in ("", "-wal")
                                   if Path(str(path) + s).exists())).hexdigest()


def test_recall_without_as_writes_nothing_and_with_as_records(db):
    before = _digest(db)
    plain = run(db, "recall", "--app", "app", "--user", "u1", "--preload", "--clearance", "health")
    assert plain.returncode == 0, plain.stderr
    assert _digest(db) == before
    served = run(db, "recall", "--app", "app", "--user", "u1", "--preload", "--clearance", "health",
                 env={"FACTLEDGER_AS": "triage-nurse"})
    assert served.returncode == 0, served.stderr
    assert served.stdout == plain.stdout
    rows = json.loads(run(db, "served", "--app", "app", "--user", "u1", "--json").stdout)
    assert [(r["caller"], r["surface"], r["facts"]) for r in rows] == [("triage-nurse", "cli", 2)]
    shown = run(db, "served", "show", str(rows[0]["seq"]))
    assert shown.returncode == 0 and shown.stdout.rstrip().endswith(": identical"), shown.stderr
    text = run(db, "served", "show", str(rows[0]["seq"]), "--text")
    assert text.stdout.startswith(plain.stdout)
    report = json.loads(run(db, "report", "access", "--app", "app", "--user", "u1", "--json").stdout)
    health = report["classes"][0]
    assert (health["class"], health["caller"]) == ("health", "triage-nurse")
    assert [d["key"] for d in health["disclosures"]] == ["user / allergy"]
    facts = json.loads(run(db, "facts", "--app", "app", "--user", "u1", "--served", "--clearance", "health",
                           "--json").stdout)
    assert {f["predicate"]: f["served"] for f in facts} == {"allergy": 1, "diet": 1}
    html = db.parent / "access.html"
    assert run(db, "report", "access", "--app", "app", "--user", "u1", "-o", str(html)).returncode == 0
    assert "triage-nurse" in html.read_text() and "<script" not in html.read_text()


def _serve(db) -> int:
    result = run(db, "recall", "--app", "app", "--user", "u1", "diet", "--as", "bot")
    assert result.returncode == 0, result.stderr
    return json.loads(run(db, "served", "--app", "app", "--user", "u1", "--json").stdout)[-1]["seq"]


def _raw(db: Path, sql: str, triggers: bool = True) -> None:
    conn = sqlite3.connect(db)
    if triggers:
        conn.execute("DROP TRIGGER events_refuse_delete")
        conn.execute("DROP TRIGGER events_refuse_update")
    conn.execute(sql)
    conn.commit()
    conn.close()


def test_a_forged_serve_record_is_named_by_verify(db):
    seq = _serve(db)
    _raw(db, f"UPDATE events SET body = replace(body, '\"bot\"', '\"eve\"') WHERE seq = {seq}")
    result = run(db, "verify")
    assert result.returncode == 1
    assert str(seq) in result.stdout + result.stderr


def test_a_deleted_serve_record_is_named_by_verify(db):
    seq = _serve(db)
    _serve(db)
    _raw(db, f"DELETE FROM events WHERE seq = {seq}")
    result = run(db, "verify")
    assert result.returncode == 1
    assert str(seq) in result.stdout + result.stderr


def test_an_edited_served_row_is_named_by_verify(db):
    seq = _serve(db)
    _raw(db, f"UPDATE serves SET caller = 'eve' WHERE seq = {seq}", triggers=False)
    result = run(db, "verify")
    assert result.returncode == 1
    assert "serves" in result.stdout + result.stderr


def test_served_show_of_another_event_is_an_error(db):
    result = run(db, "served", "show", "1")
    assert result.returncode == 1 and result.stderr.startswith("Error: ") and "not a serve record" in result.stderr
