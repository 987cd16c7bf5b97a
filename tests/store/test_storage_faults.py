"""Storage faults: a full disk, a read-only file, a damaged page.

Each gives a clear `Error: ...` (never a traceback), writes nothing partial, and leaves a ledger
that still verifies; a damaged page is reported by `verify` (SQLite's integrity_check plus the
chain).  Real files, real processes where the fault is about the process's rights.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger, LedgerError
from tests.conftest import MovableClock, cand

PYTHON = sys.executable
FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
OBSERVE = ["observe", "--app", "app", "--user", "u1", "--predicate", "allergy", "--quote", "allergic to sesame",
           "--session", "late", "--event-id", "e9", "--said-at", "2026-10-01"]


def build(path: Path, n: int = 60) -> None:
    with Ledger(path, clock=MovableClock(), create=True) as ledger:
        ledger.observe_many([cand(predicate="allergy", value=f"allergen-{i:04d}", session=f"s{i}")
                             for i in range(n)])
        ledger.observe(cand(predicate="home_city", value="Pune"))
    checkpoint(path)


def checkpoint(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def count(path: Path) -> tuple[int, str]:
    conn = sqlite3.connect(path)
    n, head = conn.execute("SELECT COUNT(*), MAX(hash) FILTER (WHERE seq = (SELECT MAX(seq)"
                           " FROM events)) FROM events").fetchone()
    conn.close()
    return n, head


def cli_run(path: Path, *args: str):
    return CliRunner().invoke(cli, ["--db", str(path), *args])


# --- full disk -------------------------------------------------------------------------------


def test_full_disk_is_a_clear_error_and_writes_nothing(tmp_path):
    path = tmp_path / "full.db"
    build(path)
    before = count(path)
    with Ledger(path, clock=MovableClock("2026-11-02T00:00:00Z")) as ledger:
        pages = ledger._conn.execute("PRAGMA page_count").fetchone()[0]
        ledger._conn.execute(f"PRAGMA max_page_count = {pages + 1}")
        big = [cand(predicate="allergy", value=f"{i:05d}-" + "x" * 400,
                    quote=f"{i:05d}-" + "x" * 400 + " " + "y" * 1100,
                    session=f"big{i}") for i in range(200)]
        with pytest.raises(LedgerError, match="full; nothing was written"):
            ledger.observe_many(big)
        assert not ledger._conn.in_transaction
        assert ledger.verify()["ok"]
        assert ledger.replay_differences() == []
        # a small write may still fit; a lifted limit lets the big batch through whole
        ledger._conn.execute("PRAGMA max_page_count = 1073741823")
        outcomes = ledger.observe_many(big)
        assert len(outcomes) == 200
    assert count(path)[0] == before[0] + 200
    assert cli_run(path, "verify").exit_code == 0


FULL_DISK_CLI = """
import sys
import factledger.ledger.store.eventlog as store
real = store.connect
def connect(path, *a, **k):
    conn = real(path, *a, **k)
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {max(pages, 1) + 1}")
    return conn
store.connect = connect
import factledger.ledger.unit
factledger.ledger.unit.connect = connect
from factledger.cli.main import cli
sys.argv = ["factledger", *sys.argv[1:]]
cli()
"""


def test_full_disk_through_the_real_cli(tmp_path):
    """The console entry point in a real process whose connection has a page limit."""
    path = tmp_path / "full.db"
    build(path)
    before = count(path)
    env = {**os.environ, "FACTLEDGER_NOW": "2026-11-02T00:00:00Z"}
    result = subprocess.run([PYTHON, "-c", FULL_DISK_CLI, "--db", str(path), *OBSERVE,
                             "--value", "z" * 480, "--quote", "z" * 480 + " " + "q" * 1500], capture_output=True,
                            text=True, env=env, cwd=Path(__file__).parents[2])
    # one candidate may fit in one spare page; drive it until the limit bites
    results = [result]
    for i in range(40):
        if results[-1].returncode:
            break
        results.append(subprocess.run(
            [PYTHON, "-c", FULL_DISK_CLI, "--db", str(path), *OBSERVE[:-6], "--session", f"x{i}",
             "--event-id", "e", "--said-at", "2026-10-01", "--quote", f"{i}" + "z" * 480 + " " + "q" * 1500,
             "--value", f"{i}" + "z" * 480], capture_output=True, text=True, env=env,
            cwd=Path(__file__).parents[2]))
    last = results[-1]
    assert last.returncode == 1, last.stderr
    assert last.stderr.startswith("Error: ") and "full" in last.stderr
    assert "Traceback" not in last.stderr
    assert count(path)[0] >= before[0]
    assert cli_run(path, "verify").exit_code == 0
    assert json.loads(cli_run(path, "replay", "--check", "--json").stdout)["ok"]


# --- read-only file --------------------------------------------------------------------------


def read_only_prefix() -> list[str]:
    """Root ignores file modes: drop CAP_DAC_OVERRIDE so the modes really bind."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot make a file read-only for root")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}", "--"]


@pytest.mark.parametrize("directory_writable", [True, False])
def test_read_only_ledger_reads_and_refuses_writes_clearly(tmp_path, directory_writable):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "ledger.db"
    build(path)
    before = count(path)
    prefix = read_only_prefix()
    path.chmod(0o400)                         # read-only (and private: 0444 would be tightened, and said)
    if not directory_writable:
        folder.chmod(0o555)
    try:
        def run(*args):
            return subprocess.run(prefix + [FACTLEDGER, "--db", str(path), *args],
                                  capture_output=True, text=True)

        write = run(*OBSERVE, "--value", "sesame")
        assert write.returncode == 1, (write.stdout, write.stderr)
        assert write.stderr.startswith("Error: ") and "read-only" in write.stderr
        assert "Traceback" not in write.stderr
        if directory_writable:
            replay = run("replay")
            assert replay.returncode == 1 and "read-only" in replay.stderr
        # reading still works, and nothing changed
        if directory_writable:
            assert run("verify").returncode == 0
            facts = run("facts", "--app", "app", "--user", "u1", "--include-sensitive", "--json")
            assert facts.returncode == 0 and len(json.loads(facts.stdout)) == 61
        else:
            # WAL needs its -shm file: with no way to create it even reading is refused, clearly
            result = run("verify")
            assert result.returncode in (0, 1) and "Traceback" not in result.stderr
            if result.returncode:
                assert result.stderr.startswith("Error: ") and "read-only" in result.stderr
    finally:
        folder.chmod(0o755)
        path.chmod(0o644)
    assert count(path) == before
    assert cli_run(path, "verify").exit_code == 0


# --- damaged pages ---------------------------------------------------------------------------


def pages_of(path: Path, name: str) -> list[int]:
    conn = sqlite3.connect(path)
    pages = [r[0] for r in conn.execute(
        "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno", (name,))]
    conn.close()
    return pages


def damage(path: Path, page: int, edit) -> None:
    size = 4096
    data = bytearray(path.read_bytes())
    start = (page - 1) * size
    data[start:start + size] = edit(bytes(data[start:start + size]))
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def big_pristine(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("pages") / "big.db"
    build(path, n=600)
    return path


@pytest.fixture
def big(big_pristine, tmp_path) -> Path:
    path = tmp_path / "big.db"
    shutil.copy(big_pristine, path)           # with its mode: a copy readable by others is tightened, and said
    conn = sqlite3.connect(path)
    try:
        conn.execute("SELECT 1 FROM dbstat LIMIT 1")
    except sqlite3.OperationalError:
        pytest.skip("this SQLite has no dbstat")
    finally:
        conn.close()
    return path


def test_garbage_page_in_the_middle_is_reported_by_verify(big):
    pages = pages_of(big, "events")
    damage(big, pages[len(pages) // 2], lambda page: os.urandom(len(page)))
    result = subprocess.run([FACTLEDGER, "--db", str(big), "verify"], capture_output=True, text=True)
    assert result.returncode == 1 and result.stderr.startswith("Error: ")
    assert "Traceback" not in result.stderr
    assert "integrity" in result.stderr or "malformed" in result.stderr or "damaged" in result.stderr


def test_damaged_index_page_passes_quick_check_but_not_verify(big):
    """Why verify runs integrity_check: a changed key in the event_id index fools quick_check."""
    conn = sqlite3.connect(big)
    ids = [r[0] for r in conn.execute("SELECT event_id FROM events")]
    conn.close()
    page = pages_of(big, "sqlite_autoindex_events_1")[len(pages_of(big, "sqlite_autoindex_events_1")) // 2]

    def flip(data: bytes) -> bytes:
        found = next(i for i in ids[5:] if i.encode() in data)
        at = data.index(found.encode()) + 30
        out = bytearray(data)
        out[at] = ord("f") if out[at] != ord("f") else ord("e")
        return bytes(out)

    damage(big, page, flip)
    conn = sqlite3.connect(big)
    assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    conn.close()
    result = cli_run(big, "verify", "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert "integrity check failed" in report["problem"] and "missing from index" in report["problem"]
    assert report["integrity"] is True
    # its own message: the file is damaged, no seq is to blame (never "chain broken at seq 0")
    assert "the file holding the log is damaged" in result.stderr and "seq 0" not in result.stderr


def test_damaged_body_bytes_are_reported_naming_the_seq(big):
    """A flipped byte inside a row's body passes both SQLite checks; the commitment catches it."""
    conn = sqlite3.connect(big)
    seq, value = conn.execute("SELECT seq, json_extract(body, '$.value') FROM events"
                              " WHERE seq = 300").fetchone()
    conn.close()
    page = next(p for p in pages_of(big, "events")
                if value.encode() in big.read_bytes()[(p - 1) * 4096:p * 4096])
    damage(big, page, lambda data: data.replace(value.encode(), value.upper().encode(), 1))
    result = cli_run(big, "verify", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["first_bad_seq"] == seq
    assert f"seq {seq}:" in result.stderr


def test_damaged_projection_bytes_are_found_by_replay_check(big):
    """Projections are outside the chain; `replay --check` compares them with a rebuild, and so
    does `verify` (`--log-only`: the chain alone, which the damage does not touch)."""
    value = "allergen-0300"
    data = big.read_bytes()
    page = next(p for p in pages_of(big, "facts_current") if value.encode() in data[(p - 1) * 4096:p * 4096])
    damage(big, page, lambda d: d.replace(value.encode(), b"allergen-9999", 1))
    assert cli_run(big, "verify", "--log-only").exit_code == 0
    full = cli_run(big, "verify")
    assert full.exit_code == 1 and "the ledger is damaged" in full.output and "facts_current" in full.output
    check = cli_run(big, "replay", "--check")
    assert check.exit_code == 1 and "differ" in check.output
    assert cli_run(big, "replay").exit_code == 0
    assert cli_run(big, "replay", "--check").exit_code == 0


def test_not_a_database_is_a_clear_error(tmp_path):
    path = tmp_path / "noise.db"
    path.write_bytes(os.urandom(8192))
    for args in (["verify"], ["head"], OBSERVE + ["--value", "x"]):
        result = subprocess.run([FACTLEDGER, "--db", str(path), *args], capture_output=True, text=True)
        assert result.returncode == 1 and result.stderr.startswith("Error: ")
        assert "Traceback" not in result.stderr
    assert stat.S_ISREG(path.stat().st_mode)


def test_full_disk_during_ingest_and_forget_leaves_whole_sessions(tmp_path):
    """Ingest stops session by session with a clear reason; whatever it wrote is whole sessions."""
    from factledger.ledger.ingest.batch import ingest_paths
    from tests.store.test_crash_ingest import write_sessions

    paths = [str(p) for p in write_sessions(tmp_path / "s", n=30)]
    db = tmp_path / "full.db"
    with Ledger(db, clock=MovableClock(), create=True) as ledger:
        ingest_paths(ledger._work, paths[:10], None, None, "patterns", None, None)
        pages = ledger._conn.execute("PRAGMA page_count").fetchone()[0]
        ledger._conn.execute(f"PRAGMA max_page_count = {pages + 1}")
        summary = ingest_paths(ledger._work, paths[10:], None, None, "patterns", None, None).as_dict()
        assert summary["failed"] >= 1
        assert all("full; nothing was written" in f["error"] for f in summary["failures"])
        ledger._conn.execute(f"PRAGMA max_page_count = {ledger._conn.execute('PRAGMA page_count').fetchone()[0]}")
        try:
            receipt = ledger.forget("crashapp", "user1", reason="full disk test")
            assert not receipt["noop"]
        except LedgerError as exc:
            assert "full" in str(exc)
        assert not ledger._conn.in_transaction
        assert ledger.verify()["ok"] and ledger.replay_differences() == []
        types = [r[0] for r in ledger._conn.execute("SELECT type FROM events ORDER BY seq")]
    # whole sessions only: every run of decision events ends with its SessionIngested
    tail = types[len(types) - types[::-1].index("SessionIngested"):] if "SessionIngested" in types else types
    assert not tail or tail[0] == "Redacted", tail
    ledger = Ledger(db, clock=MovableClock("2026-12-01T00:00:00Z"))
    kept = [p for i, p in enumerate(paths) if i % 3 != 1]      # user1's sessions were forgotten
    summary = ingest_paths(ledger._work, kept, None, None, "patterns", None, None).as_dict()
    ledger.close()
    assert not summary["failed"], summary["failures"]
    assert cli_run(db, "verify").exit_code == 0
