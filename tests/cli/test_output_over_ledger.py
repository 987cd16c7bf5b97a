"""No output over the evidence (issue 47 item 4): every option that names a file a command
writes (`export --out`, `report erasure -o`, `checkpoint --out`, `keygen --out` and its .pub,
`mcp --new-token --tokens`, the sign-ins file `serve` keeps beside `--actors`) is refused with
`Error: ...`, exit 1, when it resolves to the ledger or its -wal, -shm or -journal (by name,
relative name, `..`, symbolic link or hard link), or on PostgreSQL to a file of the server's;
nothing is touched. Before, `export --out LEDGER` and `report -o LEDGER` replaced the ledger.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger
from tests.conftest import MovableClock, cand

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
ENV = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "FACTLEDGER_NOW")}


@pytest.fixture
def ledger_file(tmp_path) -> Path:
    """A ledger with facts and one erasure (so `report erasure` has something to print)."""
    path = tmp_path / "led" / "ledger.db"
    path.parent.mkdir()
    clock = MovableClock("2026-09-01T00:00:00Z")
    with Ledger(path, clock=clock, create=True) as ledger:
        ledger.observe(cand(predicate="home_city", value="Pune", session="s1"))
        ledger.observe(cand(predicate="diet", value="vegan", session="s2"))
        ledger.forget("app", "u1", session="s2", reason="test", requested_by="dpo")
    return path


def snapshot(folder: Path) -> dict[str, str]:
    """Every file in the ledger's folder and its bytes' hash (a link shows the target's).  The
    -shm is SQLite's shared memory, which any reader rewrites: only its existence counts."""
    return {name: "(exists)" if name.endswith("-shm") else digest for name, digest in _hashes(folder).items()}


def _hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def targets(db: Path, tmp_path: Path) -> dict[str, str]:
    """Names of the ledger's own files, each spelled another way."""
    link = tmp_path / "link.db"
    link.symlink_to(db)
    hard = tmp_path / "hard.db"
    os.link(db, hard)
    folder_link = tmp_path / "folder"
    folder_link.symlink_to(db.parent, target_is_directory=True)
    return {
        "the file": str(db),
        "its -wal": f"{db}-wal",
        "its -shm": f"{db}-shm",
        "its -journal": f"{db}-journal",
        "a dotted path": str(db.parent / ".." / db.parent.name / "." / db.name),
        "a symbolic link": str(link),
        "a linked folder's -wal": str(folder_link / f"{db.name}-wal"),
        "a hard link": str(hard),
        "a relative path": os.path.relpath(db),
    }


def commands(seq: str, out: str) -> list[list[str]]:
    return [
        ["export", "--all", "--out", out],
        ["export", "--app", "app", "--user", "u1", "-o", out],
        ["export", "--data-subject", "--app", "app", "--user", "u1", "--out", out],
        ["report", "erasure", seq, "-o", out],
        ["report", "erasure", seq, "--format", "json", "-o", out],
        ["checkpoint", "--out", out],
        ["keygen", "--name", "k", "--out", out],
        ["mcp", "--new-token", "--tokens", out, "--app", "app", "--user", "u1"],
    ]


def test_no_output_option_writes_over_the_ledger_or_its_files(ledger_file, tmp_path):
    db = ledger_file
    names = targets(db, tmp_path)
    with Ledger(db, read_only=True) as ledger:
        head = ledger.head()
        seq = str(ledger.erasures()[0]["redaction_seq"])
    before = snapshot(db.parent)
    for spelled, out in names.items():
        for command in commands(seq, out):
            done = CliRunner().invoke(cli, ["--db", str(db), *command])
            assert done.exit_code == 1, (spelled, command, done.output)
            assert done.stderr.startswith("Error: ") and "never written over the ledger" in done.stderr, \
                (spelled, command, done.stderr)
            assert snapshot(db.parent) == before, (spelled, command)
    with Ledger(db, read_only=True) as ledger:
        assert ledger.head() == head and ledger.verify()["ok"]


def test_keygens_public_key_file_is_held_to_the_rule(ledger_file, tmp_path):
    """keygen writes OUT and OUT.pub: OUT.pub naming the ledger is refused before OUT is made."""
    db = ledger_file
    renamed = db.with_name("ledger.db.pub")          # a ledger named so that OUT.pub is the ledger
    db.rename(renamed)
    done = CliRunner().invoke(cli, ["--db", str(renamed), "keygen", "--name", "k", "--out", str(db)])
    assert done.exit_code == 1 and "never written over the ledger" in done.stderr, done.stderr
    assert not db.exists()


def test_the_replica_read_from_is_held_to_the_rule_too(ledger_file, tmp_path):
    """With --read-db, the file the reads come from is evidence as much as --db's."""
    other = tmp_path / "primary.db"
    with Ledger(other, create=True) as ledger:
        ledger.observe(cand())
    before = snapshot(ledger_file.parent)
    done = CliRunner().invoke(cli, ["--db", str(other), "--read-db", str(ledger_file),
                                    "export", "--all", "--out", str(ledger_file)])
    assert done.exit_code == 1 and "never written over the ledger" in done.stderr, done.output
    assert snapshot(ledger_file.parent) == before


def test_output_beside_the_ledger_is_still_written(ledger_file, tmp_path):
    """The rule names the ledger's files only: a file beside it, or named like it, is written."""
    db = ledger_file
    for out in (f"{db}.jsonl", str(db.parent / "ledger.db-wal.txt"), str(tmp_path / "ledger.db")):
        done = CliRunner().invoke(cli, ["--db", str(db), "export", "--all", "--out", out])
        assert done.exit_code == 0, done.output
        assert Path(out).stat().st_size > 0


def test_serve_refuses_a_sign_in_file_over_the_ledger(tmp_path):
    """`serve --actors A` keeps sign-ins in `A.sessions`: a ledger named so is refused before
    the server starts (a real process: a wrong outcome would be a server that keeps running)."""
    db = tmp_path / "people.sessions"
    with Ledger(db, create=True) as ledger:
        ledger.observe(cand())
    actors = tmp_path / "people"
    actors.write_text("")
    before = snapshot(tmp_path)
    done = subprocess.run([FACTLEDGER, "--db", str(db), "serve", "--actors", str(actors), "--port", "0"],
                          capture_output=True, text=True, env=ENV, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("Error: ") and "never written over the ledger" in done.stderr, done.stderr
    assert snapshot(tmp_path) == before


def test_no_output_lands_in_the_postgresql_servers_files(postgres, tmp_path):
    """On PostgreSQL, the server's data directory (a local server's files, which this user may
    well be able to write) is the ledger's too: a relation file of the log is refused."""
    location = postgres.location("out_over")
    with Ledger(location, create=True) as ledger:
        ledger.observe(cand())
        relation = ledger._conn.raw.execute("SELECT pg_relation_filepath('events')").fetchone()[0]
    files = [postgres.data / relation, postgres.data / "PG_VERSION"]
    link = tmp_path / "link"
    link.symlink_to(files[0])
    before = {str(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}
    for out in (*map(str, files), str(link), str(postgres.data / "new-file")):
        for command in (["export", "--all", "--out", out], ["checkpoint", "--out", out]):
            done = subprocess.run([FACTLEDGER, "--db", location, *command], capture_output=True,
                                  text=True, env=ENV)
            assert done.returncode == 1, (out, command, done.stderr)
            assert done.stderr.startswith("Error: ") and "never written over the ledger" in done.stderr
    assert {str(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in files} == before
    assert not (postgres.data / "new-file").exists()
    with Ledger(location, read_only=True) as ledger:
        assert ledger.verify()["ok"]
