"""Tampering with the raw file (triggers dropped) is caught by `factledger verify`, naming the seq."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from factledger.ledger import Ledger
from tests.conftest import cand

FACTLEDGER = [str(Path(sys.executable).with_name("factledger"))]


@pytest.fixture
def db(tmp_path, clock):
    path = tmp_path / "ledger.db"
    with Ledger(path, clock=clock, create=True) as ledger:
        for i in range(6):
            clock.tick()
            ledger.observe(cand(predicate="home_city", value=f"City{i}", session=f"s{i}",
                                said_at=f"2026-08-{i + 1:02d}"))
    return path


def raw(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER events_refuse_delete")
    conn.execute("DROP TRIGGER events_refuse_update")
    for sql in statements:
        conn.execute(sql)
    conn.commit()
    conn.close()


def verify(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(FACTLEDGER + ["--db", str(path), "verify", *extra],
                          capture_output=True, text=True)


def test_untouched_ledger_verifies(db):
    result = verify(db)
    assert result.returncode == 0, result.stderr
    assert '"ok": true' in result.stdout


@pytest.mark.parametrize("statement,bad_seq", [
    ("UPDATE events SET body = replace(body, 'City3', 'Paris') WHERE seq = 6", 6),
    ("UPDATE events SET hash = '" + "ab" * 32 + "' WHERE seq = 4", 4),
    ("UPDATE events SET recorded_at = '2020-01-01T00:00:00.000000Z' WHERE seq = 2", 2),
    ("UPDATE events SET type = 'FactRetracted' WHERE seq = 3", 3),
    ("DELETE FROM events WHERE seq = 5", 5),
    ("UPDATE events SET user = 'mallory' WHERE seq = 7", 7),
])
def test_tampering_is_caught_with_the_first_bad_seq(db, statement, bad_seq):
    raw(db, statement)
    result = verify(db)
    assert result.returncode == 1
    # the open first says it restored the dropped triggers; the chain's break is the error
    assert result.stderr.splitlines()[0].startswith("Warning: trigger events_refuse_")
    assert result.stderr.splitlines()[-1].startswith("Error: ") and f"seq {bad_seq}" in result.stderr
    assert "Traceback" not in result.stderr


def test_scrub_without_a_redacted_event_is_caught(db):
    raw(db, "UPDATE events SET body = NULL, salt = NULL WHERE seq = 3")
    result = verify(db)
    assert result.returncode == 1 and "seq 3" in result.stderr


def test_expect_head_detects_a_truncated_tail(db):
    head = subprocess.run(FACTLEDGER + ["--db", str(db), "head"], capture_output=True,
                          text=True).stdout.strip()
    assert verify(db, "--expect-head", head).returncode == 0
    seq = int(head.split(":")[0])
    raw(db, f"DELETE FROM events WHERE seq = {seq}")
    result = verify(db, "--expect-head", head)
    assert result.returncode == 1 and f"the log does not extend the pinned head (pinned {head}, log at {seq - 1}:" \
        in result.stderr and "beyond the end of the log" in result.stderr


def test_malformed_expect_head_is_an_error(db):
    result = verify(db, "--expect-head", "nonsense")
    assert result.returncode == 1 and result.stderr.startswith("Error: ")


def test_a_commitment_that_is_not_hex_is_reported_not_raised(tmp_path):
    from factledger.ledger import Ledger
    from tests.conftest import MovableClock, cand

    path = tmp_path / "l.db"
    with Ledger(path, clock=MovableClock(), create=True) as ledger:
        ledger.observe(cand())
        ledger.observe(cand(value="vegan", session="s2", event="e2"))
    result = _rewrite_and_verify(path, "UPDATE events SET commitment = 'not hex at all' WHERE seq = 2")
    assert not result["ok"] and result["first_bad_seq"] == 2


def _rewrite_and_verify(path, update: str) -> dict:
    """Run one UPDATE on the log with its trigger dropped, then verify in a fresh ledger."""
    import sqlite3 as _sqlite3

    from factledger.ledger import Ledger
    from tests.conftest import MovableClock

    raw = _sqlite3.connect(path)
    raw.execute("DROP TRIGGER events_refuse_update")
    raw.execute(update)
    raw.commit()
    raw.close()
    with Ledger(path, clock=MovableClock()) as ledger:
        return ledger.verify()


def _forge_body(path, seq: int, body: str) -> None:
    """Rewrite one event's body and recompute its commitment and every link after it."""
    import sqlite3 as _sqlite3

    from factledger.ledger.store import chain

    raw = _sqlite3.connect(path)
    raw.execute("DROP TRIGGER events_refuse_update")
    salt = raw.execute("SELECT salt FROM events WHERE seq = ?", (seq,)).fetchone()[0]
    raw.execute("UPDATE events SET body = ?, commitment = ? WHERE seq = ?",
                (body, chain.commitment(salt, body.encode()), seq))
    prev = chain.GENESIS
    for s, event_id, type_, at, commit in raw.execute(
            "SELECT seq, event_id, type, recorded_at, commitment FROM events ORDER BY seq").fetchall():
        link = chain.link(prev, s, event_id, type_, at, commit)
        raw.execute("UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?", (prev, link, s))
        prev = link
    raw.commit()
    raw.close()


def test_a_body_that_is_json_but_not_an_object_is_reported(tmp_path):
    from factledger.ledger import Ledger
    from tests.conftest import MovableClock, cand

    path = tmp_path / "l.db"
    with Ledger(path, clock=MovableClock(), create=True) as ledger:
        ledger.observe(cand())
    _forge_body(path, 1, "[]")
    with Ledger(path, clock=MovableClock()) as ledger:
        result = ledger.verify()
    assert not result["ok"] and result["first_bad_seq"] == 1 and "object" in result["problem"]


def test_a_commitment_in_another_spelling_is_reported(tmp_path):
    """A redacted event's commitment is only checked through its link, and `bytes.fromhex`
    reads upper case too: the stored text must be the lower-case hex the chain writes."""
    from factledger.ledger import Ledger
    from tests.conftest import MovableClock, cand

    path = tmp_path / "l.db"
    with Ledger(path, clock=MovableClock(), create=True) as ledger:
        ledger.observe(cand())
        ledger.forget("app", "u1", reason="test")
        assert ledger._conn.execute("SELECT body FROM events WHERE seq = 1").fetchone()[0] is None
    result = _rewrite_and_verify(path, "UPDATE events SET commitment = upper(commitment) WHERE seq = 1")
    assert not result["ok"] and result["first_bad_seq"] == 1
