"""Progress bars: the long checks and copies draw them on stderr at a terminal, and nothing when
stderr is not one (a pipe, a log file).  Real `factledger` processes, stderr on a pseudo-terminal."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from factledger.ledger import Ledger
from tests.conftest import cand

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")


@pytest.fixture
def db(tmp_path, clock) -> str:
    path = tmp_path / "ledger.db"
    with Ledger(path, clock=clock, create=True) as ledger:
        ledger.observe_many([cand(user=f"u{i}", value=f"v{i}", event=f"e{i}") for i in range(30)])
    return str(path)


def _on_a_terminal(args: list[str], cwd: Path) -> tuple[int, bytes, str]:
    """Run `factledger ARGS` with stderr on a pseudo-terminal: (exit code, what the terminal
    showed, stdout)."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([FACTLEDGER, *args], stdout=subprocess.PIPE, stderr=slave,
                                stdin=subprocess.DEVNULL, cwd=cwd, env={**os.environ, "COLUMNS": "100"})
        os.close(slave)
        shown = b""
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(master, 4096)
            except OSError:                      # the child closed the terminal (Linux: EIO)
                break
            if not chunk:
                break
            shown += chunk
        stdout = proc.stdout.read().decode()
        return proc.wait(timeout=60), shown, stdout
    finally:
        os.close(master)


def _in_a_pipe(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([FACTLEDGER, *args], capture_output=True, text=True, cwd=cwd, timeout=60,
                          stdin=subprocess.DEVNULL)


CASES = [
    (["verify"], (b"verifying the chain", b"rebuilding the projections", b"comparing them")),
    (["verify", "--vectors"], (b"verifying the chain", b"rebuilding the projections")),
    (["replay", "--check"], (b"rebuilding the projections",)),
    (["export", "--all", "--out", "log.jsonl"], (b"exporting",)),
]


@pytest.mark.parametrize(("args", "labels"), CASES, ids=lambda v: " ".join(v) if isinstance(v[0], str) else None)
def test_a_terminal_sees_the_bars(db, tmp_path, args, labels):
    code, shown, _ = _on_a_terminal(["--db", db, *args], tmp_path)
    assert code == 0, shown
    for label in labels:
        assert label in shown, shown
    assert b"100%" in shown, shown


@pytest.mark.parametrize(("args", "labels"), CASES, ids=lambda v: " ".join(v) if isinstance(v[0], str) else None)
def test_a_pipe_sees_none(db, tmp_path, args, labels):
    done = _in_a_pipe(["--db", db, *args], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "%" not in done.stderr and not any(label.decode() in done.stderr for label in labels), done.stderr


def test_import_draws_its_stages_on_a_terminal_only(db, tmp_path):
    exported = tmp_path / "log.jsonl"
    assert _in_a_pipe(["--db", db, "export", "--all", "--out", str(exported)], tmp_path).returncode == 0
    code, shown, stdout = _on_a_terminal(["--db", str(tmp_path / "a.db"), "import", str(exported)], tmp_path)
    assert code == 0, shown
    assert "\"imported\": 30" in stdout
    for label in (b"loading", b"verifying the chain", b"rebuilding the projections"):
        assert label in shown, shown
    quiet = _in_a_pipe(["--db", str(tmp_path / "b.db"), "import", str(exported)], tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


def test_a_failed_verify_still_says_why_on_a_terminal(db, tmp_path):
    """The bar is closed before the error: the message is on its own line, whole."""
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER IF EXISTS facts_current_no_update")   # not every schema has it
    conn.execute("UPDATE facts_current SET value = '\"forged\"' WHERE rowid = (SELECT min(rowid) FROM facts_current)")
    conn.commit()
    conn.close()
    code, shown, _ = _on_a_terminal(["--db", db, "verify"], tmp_path)
    assert code == 1
    assert b"Error: the ledger is damaged" in shown, shown
