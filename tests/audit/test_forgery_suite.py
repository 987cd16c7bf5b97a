"""Every forgery we can think of against the raw file is caught by `verify`, naming the seq.

The forger has the file and SQLite, drops the triggers and edits rows.  Most forgeries break a
link or a commitment and plain `verify` names the first bad seq.  A forger who also recomputes
every hash after the change (the formulas are public: the chain is not a signature), truncates
the tail, or swaps the whole file is caught only against a head pinned outside the ledger:
`verify --expect-head SEQ:HASH`.  tests/audit/test_tamper.py has the first single-row cases; this suite
is the full catalogue, counted.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger
from factledger.ledger.domain.events import Redacted
from factledger.ledger.store import chain
from tests.audit.forger import raw_forger
from tests.conftest import MovableClock, cand

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
REDACTED_TARGET = 3          # the FactObserved scrubbed by an authorised redaction


def build(path: Path, salt: str = "") -> None:
    """Two partitions, a supersession, a dispute, and one authorised redaction."""
    clock = MovableClock()
    with Ledger(path, clock=clock, create=True) as ledger:
        for i in range(4):
            clock.tick()
            ledger.observe(cand(predicate="home_city", value=f"City{i}{salt}", session=f"s{i}",
                                said_at=f"2026-08-{i + 1:02d}"))
            ledger.observe(cand(user="u2", predicate="allergy", value=f"nut{i}{salt}",
                                session=f"t{i}", said_at=f"2026-08-{i + 1:02d}"))
        clock.tick()
        ledger.observe(cand(predicate="plan", value="basic", author="document", basis="verified"))
        ledger.observe(cand(predicate="plan", value="premium", session="s9"))
        clock.tick()
        with ledger.transaction() as tx:
            target = ledger._conn.execute("SELECT seq, type FROM events WHERE seq = ?",
                                         (REDACTED_TARGET,)).fetchone()
            assert target[1] == "FactObserved"
            event = tx.append(Redacted(app="app", user="u1", scope_kind="fact", scope_hash="ab12",
                                       reason="test", requester="suite", target_seqs=[target[0]]))
            ledger._conn.execute("UPDATE events SET body = NULL, salt = NULL, redacted_by = ?"
                                " WHERE seq = ?", (event.seq, target[0]))
        ledger.replay()
        assert ledger.verify()["ok"]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("forgery") / "pristine.db"
    build(path)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


def raw(path: Path) -> sqlite3.Connection:
    return raw_forger(path)                  # a careful forger: the triggers come back on close


def rows(conn) -> list[list]:
    return [list(r) for r in conn.execute(
        "SELECT seq, event_id, type, app, user, recorded_at, body, salt, commitment, prev_hash,"
        " hash, redacted_by FROM events ORDER BY seq")]


def rewrite(conn, table: list[list]) -> None:
    """Replace the whole log with `table`, recomputing nothing."""
    conn.execute("BEGIN")
    conn.execute("DELETE FROM events")
    conn.executemany("INSERT INTO events (seq, event_id, type, app, user, recorded_at, body, salt,"
                     " commitment, prev_hash, hash, redacted_by) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                     table)
    conn.execute("COMMIT")


def rechain(table: list[list], start: int = 0) -> list[list]:
    """What a careful forger does: recompute commitments and links from `start` on."""
    prev = chain.GENESIS if start == 0 else table[start - 1][10]
    for i, row in enumerate(table):
        row[0] = i + 1
        if i < start:
            continue
        if row[6] is not None:
            row[8] = chain.commitment(row[7], row[6].encode())
        row[9] = prev
        row[10] = chain.link(prev, row[0], row[1], row[2], row[5], row[8])
        prev = row[10]
    return table


def head_of(path: Path) -> str:
    conn = sqlite3.connect(path)
    seq, digest = conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    conn.close()
    return f"{seq}:{digest}"


@dataclass
class Forgery:
    name: str
    apply: Callable[[Path], int | None]   # edits the file; returns the seq verify must name
    pinned: bool = False                  # caught only by --expect-head


def sql(*statements: str, seq: int) -> Callable[[Path], int]:
    def forge(path: Path) -> int:
        conn = raw(path)
        for statement in statements:
            conn.execute(statement)
        conn.close()
        return seq
    return forge


def body_with_commitment(path: Path) -> int:
    """Change a body and recompute its commitment with the same salt: the link still breaks."""
    conn = raw(path)
    body, salt = conn.execute("SELECT body, salt FROM events WHERE seq = 6").fetchone()
    forged = body.replace("City2", "Paris")
    assert forged != body
    conn.execute("UPDATE events SET body = ?, commitment = ? WHERE seq = 6",
                 (forged, chain.commitment(salt, forged.encode())))
    conn.close()
    return 6


def hash_and_next_link(path: Path) -> int:
    conn = raw(path)
    conn.execute("UPDATE events SET hash = ? WHERE seq = 4", ("cd" * 32,))
    conn.execute("UPDATE events SET prev_hash = ? WHERE seq = 5", ("cd" * 32,))
    conn.close()
    return 4


def reorder(path: Path) -> int:
    conn = raw(path)
    table = rows(conn)
    a, b = table[3], table[4]
    table[3], table[4] = [a[0]] + b[1:], [b[0]] + a[1:]
    rewrite(conn, table)
    conn.close()
    return 4


def reorder_rechained(path: Path) -> None:
    """Swap two events and recompute every link after them: only a pinned head catches it."""
    conn = raw(path)
    table = rows(conn)
    table[3], table[4] = table[4], table[3]
    rewrite(conn, rechain(table, start=3))
    conn.close()


def insert_forged_tail(path: Path) -> int:
    conn = raw(path)
    last = rows(conn)[-1]
    conn.execute("INSERT INTO events (seq, event_id, type, app, user, recorded_at, body, salt,"
                 " commitment, prev_hash, hash) VALUES (?, 'forged', 'FactObserved', 'app', 'u1',"
                 " ?, '{}', x'00', ?, ?, ?)", (last[0] + 1, last[5], "00" * 32, last[10], "11" * 32))
    conn.close()
    return last[0] + 1


def forged_copy(row: list) -> list:
    """A well-formed FactObserved for another value, in the same partition as `row`."""
    assert "nut2" in row[6]
    forged = list(row)
    forged[1] = "forged-event"
    forged[6] = row[6].replace("nut2", "peanut-free")
    return forged


def insert_forged_middle(path: Path) -> int:
    """Insert a row at seq 6 by shifting the rest up, without recomputing anything."""
    conn = raw(path)
    table = rows(conn)
    forged = forged_copy(table[7])
    table.insert(5, forged)
    for i, row in enumerate(table):
        row[0] = i + 1
    rewrite(conn, table)
    conn.close()
    return 6


def insert_forged_rechained(path: Path) -> None:
    """Insert a well-formed event in the middle and recompute every later link."""
    conn = raw(path)
    table = rows(conn)
    forged = forged_copy(table[7])
    table.insert(5, forged)
    for row in table:                     # the careful forger keeps redactions pointing right
        if row[11] is not None and row[11] >= 6:
            row[11] += 1
    rewrite(conn, rechain(table, start=5))
    conn.close()


def rewrite_consistently(path: Path) -> None:
    """Change one value and recompute every commitment and link after it."""
    conn = raw(path)
    table = rows(conn)
    assert "City2" in table[5][6]
    table[5][6] = table[5][6].replace("City2", "Paris")
    rewrite(conn, rechain(table, start=5))
    conn.close()


def truncate_tail(path: Path) -> None:
    conn = raw(path)
    conn.execute("DELETE FROM events WHERE seq > (SELECT MAX(seq) - 2 FROM events)")
    conn.close()


def swap_for_other_ledger(path: Path) -> None:
    other = path.with_name("other.db")
    build(other, salt="x")
    conn = sqlite3.connect(other)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    shutil.copyfile(other, path)


def swap_for_shorter_ledger(path: Path) -> None:
    other = path.with_name("short.db")
    with Ledger(other, clock=MovableClock(), create=True) as ledger:
        ledger.observe(cand())
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    conn = sqlite3.connect(other)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    shutil.copyfile(other, path)


T = REDACTED_TARGET
FORGERIES = [
    Forgery("changed body", sql("UPDATE events SET body = replace(body, 'City2', 'Paris') WHERE seq = 6", seq=6)),
    Forgery("changed body, commitment recomputed", body_with_commitment),
    Forgery("changed salt", sql("UPDATE events SET salt = x'00112233445566778899aabbccddeeff' WHERE seq = 6", seq=6)),
    Forgery("changed hash", sql(f"UPDATE events SET hash = '{'ab' * 32}' WHERE seq = 4", seq=4)),
    Forgery("changed hash and the next prev_hash", hash_and_next_link),
    Forgery("changed prev_hash", sql(f"UPDATE events SET prev_hash = '{'ab' * 32}' WHERE seq = 7", seq=7)),
    Forgery("changed commitment", sql(f"UPDATE events SET commitment = '{'ef' * 32}' WHERE seq = 2", seq=2)),
    Forgery("changed type", sql("UPDATE events SET type = 'FactRetracted' WHERE seq = 8", seq=8)),
    Forgery("changed event_id", sql("UPDATE events SET event_id = 'x' WHERE seq = 9", seq=9)),
    Forgery("changed recorded_at", sql("UPDATE events SET recorded_at = '2020-01-01T00:00:00.000000Z' WHERE seq = 2", seq=2)),
    Forgery("changed app column", sql("UPDATE events SET app = 'other' WHERE seq = 6", seq=6)),
    Forgery("changed user column", sql("UPDATE events SET user = 'mallory' WHERE seq = 5", seq=5)),
    Forgery("redacted event: changed type", sql(f"UPDATE events SET type = 'FactRetracted' WHERE seq = {T}", seq=T)),
    Forgery("redacted event: changed recorded_at", sql(f"UPDATE events SET recorded_at = '2026-11-01T00:00:01.000000Z' WHERE seq = {T}", seq=T)),
    Forgery("redacted event: changed event_id", sql(f"UPDATE events SET event_id = 'x' WHERE seq = {T}", seq=T)),
    Forgery("redacted event: changed commitment", sql(f"UPDATE events SET commitment = '{'ef' * 32}' WHERE seq = {T}", seq=T)),
    Forgery("redacted event: redacted_by points elsewhere", sql(f"UPDATE events SET redacted_by = 1 WHERE seq = {T}", seq=T)),
    Forgery("redacted event: redacted_by cleared", sql(f"UPDATE events SET redacted_by = NULL WHERE seq = {T}", seq=T)),
    Forgery("redacted event: a body put back", sql(f"UPDATE events SET body = '{{}}', salt = x'00' WHERE seq = {T}", seq=T)),
    Forgery("redaction without a Redacted event", sql("UPDATE events SET body = NULL, salt = NULL, redacted_by = 999 WHERE seq = 5", seq=5)),
    Forgery("redaction naming a Redacted event that does not name it",
            sql(f"UPDATE events SET body = NULL, salt = NULL, redacted_by = (SELECT redacted_by FROM events WHERE seq = {T}) WHERE seq = 6", seq=6)),
    Forgery("body scrubbed, salt kept", sql("UPDATE events SET body = NULL WHERE seq = 7", seq=7)),
    Forgery("reordered rows", reorder),
    Forgery("deleted row", sql("DELETE FROM events WHERE seq = 7", seq=7)),
    Forgery("deleted first row", sql("DELETE FROM events WHERE seq = 1", seq=1)),
    Forgery("inserted forged row at the tail", insert_forged_tail),
    Forgery("inserted forged row in the middle", insert_forged_middle),
    Forgery("inserted forged row, chain recomputed", insert_forged_rechained, pinned=True),
    Forgery("reordered rows, chain recomputed", reorder_rechained, pinned=True),
    Forgery("history rewritten consistently", rewrite_consistently, pinned=True),
    Forgery("truncated tail", truncate_tail, pinned=True),
    Forgery("file swapped for another ledger", swap_for_other_ledger, pinned=True),
    Forgery("file swapped for a shorter ledger", swap_for_shorter_ledger, pinned=True),
]


def verify(path: Path, *extra: str):
    return CliRunner().invoke(cli, ["--db", str(path), "verify", "--json", *extra])


def test_every_forgery_is_detected_naming_the_seq(pristine, tmp_path, capsys):
    head = head_of(pristine)
    pinned_seq = int(head.split(":")[0])
    detected, missed = 0, []
    for number, forgery in enumerate(FORGERIES):
        path = tmp_path / f"f{number}" / "ledger.db"
        path.parent.mkdir()
        shutil.copyfile(pristine, path)
        bad_seq = forgery.apply(path)
        if forgery.pinned:
            plain = verify(path, "--log-only")
            # the limit of a chain without a pinned head: a consistent rewrite still verifies
            assert plain.exit_code == 0 or forgery.name.startswith("file swapped for a shorter") \
                or "truncated" in forgery.name, (forgery.name, plain.output)
            result = verify(path, "--expect-head", head)
            bad_seq = pinned_seq
            # the chain may be sound: the pin is what the log does not extend
            said = f"the log does not extend the pinned head (pinned {head}, log at "
        else:
            result = verify(path)
            said = f"chain broken at seq {bad_seq}:"
        report = json.loads(result.stdout) if result.stdout.strip() else {}
        ok = (result.exit_code == 1 and "Traceback" not in result.output
              and said in result.stderr and report.get("first_bad_seq") == bad_seq)
        if ok:
            detected += 1
        else:
            missed.append((forgery.name, bad_seq, result.exit_code, result.output))
    with capsys.disabled():
        print(f"\nforgeries detected: {detected} of {len(FORGERIES)}")
    assert not missed, missed


def test_plain_verify_passes_on_the_pristine_copy_and_its_pinned_head(pristine, tmp_path):
    path = tmp_path / "ledger.db"
    shutil.copyfile(pristine, path)
    head = head_of(path)
    assert verify(path).exit_code == 0
    assert verify(path, "--expect-head", head).exit_code == 0
    # an honest append still extends the pinned head
    with Ledger(path, clock=MovableClock("2026-12-01T00:00:00Z")) as ledger:
        ledger.observe(cand(value="vegan", session="later"))
    assert verify(path, "--expect-head", head).exit_code == 0


def test_forgery_is_reported_by_the_real_process(pristine, tmp_path):
    """The console script, not only CliRunner: exit 1, `Error: ... seq N`, no traceback."""
    path = tmp_path / "ledger.db"
    shutil.copyfile(pristine, path)
    head = subprocess.run([FACTLEDGER, "--db", str(path), "head"], capture_output=True,
                          text=True).stdout.strip()
    assert head == head_of(path)
    rewrite_consistently(path)
    plain = subprocess.run([FACTLEDGER, "--db", str(path), "verify", "--log-only"], capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr     # the chain alone cannot tell
    full = subprocess.run([FACTLEDGER, "--db", str(path), "verify"], capture_output=True, text=True)
    assert full.returncode == 1 and "Error: the ledger is damaged: " in full.stderr   # what reads serve can
    pinned = subprocess.run([FACTLEDGER, "--db", str(path), "verify", "--expect-head", head],
                            capture_output=True, text=True)
    assert pinned.returncode == 1 and "Traceback" not in pinned.stderr
    assert f"Error: the log does not extend the pinned head (pinned {head}, log at " in pinned.stderr


def test_a_chain_only_forgery_cannot_be_undone_by_the_triggers(pristine, tmp_path):
    """With the triggers in place the forger cannot even start: UPDATE and DELETE are refused."""
    path = tmp_path / "ledger.db"
    shutil.copyfile(pristine, path)
    conn = sqlite3.connect(path)
    for statement in ("DELETE FROM events WHERE seq = 1",
                      "UPDATE events SET body = '{}' WHERE seq = 2",
                      "UPDATE events SET hash = 'x' WHERE seq = 2"):
        with pytest.raises(sqlite3.DatabaseError):
            conn.execute(statement)
    conn.close()
    assert verify(path).exit_code == 0
