"""Read-only means read-only: every read command leaves the ledger file's bytes (and its WAL's)
as they were, also when a guard trigger is missing (the command says so on stderr and does not
restore it; `verify` fails naming it); `factledger repair` restores it and says so.  On
PostgreSQL a read-only ledger's session runs read-only transactions: the server refuses a write
even when the code tries one.  Real SQLite files, the CLI as subprocesses, a real server."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from factledger.ledger import Ledger
from factledger.ledger.errors import LedgerReadOnly
from tests.conftest import MovableClock, cand

FACTLEDGER = str(Path(sys.executable).parent / "factledger")
APP, USER = "app", "u1"
TRIGGER = "events_refuse_delete"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """A ledger with facts, a history, an erasure (for `erasures` and `report erasure`)."""
    path = tmp_path_factory.mktemp("readonly") / "pristine.db"
    clock = MovableClock("2026-09-01T00:00:00Z")
    with Ledger(path, clock=clock, create=True) as ledger:
        for i, city in enumerate(("Pune", "Bengaluru")):
            clock.tick(60)
            ledger.observe(cand(predicate="home_city", value=city, session=f"c{i}", event=f"c{i}",
                                said_at=f"2026-08-{i + 1:02d}T10:00:00Z"))
        clock.tick(60)
        ledger.observe(cand(predicate="diet", value="pescatarian", session="d", event="d",
                            said_at="2026-08-10T10:00:00Z"))
        clock.tick(60)
        ledger.observe(cand(user="u2", predicate="diet", value="vegan", session="x", event="x",
                            said_at="2026-08-10T10:00:00Z"))
        clock.tick(60)
        ledger.forget(APP, "u2", reason="asked")
        ledger.checkpoint()                       # for `prove`
    return path


def _ids(path: Path) -> tuple[str, int]:
    conn = sqlite3.connect(path)
    fact = conn.execute("SELECT fact_id FROM facts_current WHERE user = ? LIMIT 1", (USER,)).fetchone()[0]
    redaction = conn.execute("SELECT seq FROM events WHERE type = 'Redacted' LIMIT 1").fetchone()[0]
    conn.close()
    return fact, redaction


def read_commands(path: Path) -> dict[str, list[str]]:
    """Every read command of the issue, with arguments that make it read something."""
    fact, redaction = _ids(path)
    part = ["--app", APP, "--user", USER]
    return {
        "verify": ["verify"], "verify --log-only": ["verify", "--log-only"],
        "facts": ["facts", *part], "history": ["history", *part], "why": ["why", fact],
        "log": ["log"], "recall": ["recall", *part, "diet"],
        "query": ["query", "SELECT count(*) AS n FROM events"], "stats": ["stats"],
        "partitions": ["partitions"], "predicates": ["predicates"], "erasures": ["erasures"],
        "report": ["report", "erasure", str(redaction)], "export": ["export", "--all"],
        "prove": ["prove", "1"], "head": ["head"], "sessions": ["sessions", *part], "review": ["review"],
        "residue": ["residue"], "replay --check": ["replay", "--check"],
    }


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def state(db: Path) -> tuple[str | None, str | None]:
    """The main file's sha256 and the WAL's (None when there is none)."""
    return digest(db), digest(Path(str(db) + "-wal"))


def sh(db: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([FACTLEDGER, "--db", str(db), *args], capture_output=True, text=True, timeout=300)


def drop_trigger(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute(f"DROP TRIGGER {TRIGGER}")
    conn.commit()
    conn.close()


def triggers_of(db: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    conn.close()
    return names


@pytest.fixture
def db(pristine, tmp_path) -> Path:
    path = tmp_path / "ledger.db"
    shutil.copyfile(pristine, path)
    path.chmod(0o600)
    return path


class WalHolder:
    """A writer that leaves committed pages in the WAL and keeps it open (so no close checkpoints
    it): a read must leave both the main file and those WAL pages as they are."""

    def __init__(self, db: Path):
        self.conn = sqlite3.connect(db, isolation_level=None)
        self.conn.execute("PRAGMA wal_autocheckpoint = 0")
        self.conn.execute("INSERT OR REPLACE INTO ledger_meta (key, value) VALUES ('wal-test', 'x')")

    def close(self) -> None:
        self.conn.close()


NAMES = ["verify", "verify --log-only", "facts", "history", "why", "log", "recall", "query", "stats",
         "partitions", "predicates", "erasures", "report", "export", "prove", "head", "sessions", "review",
         "residue", "replay --check"]


@pytest.mark.parametrize("name", NAMES)
def test_a_read_command_leaves_the_file_as_it_was(db, name):
    args = read_commands(db)[name]
    before = state(db)
    result = sh(db, *args)
    assert result.returncode == 0, result.stderr
    assert digest(db) == before[0]
    # a read-only open of a WAL file may leave an empty -wal beside it (SQLite's WAL index needs
    # one); never a page of content (docs/decisions.md, "Read-only opens")
    assert before[1] is None and digest(Path(str(db) + "-wal")) in (None, hashlib.sha256(b"").hexdigest())


@pytest.mark.parametrize("name", NAMES)
def test_with_a_trigger_dropped_and_a_live_wal_a_read_reports_it_and_changes_nothing(db, name):
    drop_trigger(db)
    args = read_commands(db)[name]
    holder = WalHolder(db)
    try:
        before = state(db)
        assert before[1] and before[1] != hashlib.sha256(b"").hexdigest()   # pages in the WAL
        result = sh(db, *args)
        assert state(db) == before
    finally:
        holder.close()
    if name.startswith("verify"):
        assert result.returncode == 1
        assert f"trigger {TRIGGER} is missing" in result.stderr.splitlines()[-1]
    else:
        assert result.returncode == 0, result.stderr
    if name != "query":                   # query opens the file itself, never through Ledger
        assert f"Warning: trigger {TRIGGER} is missing; not repaired" in result.stderr
    assert TRIGGER not in triggers_of(db)


def test_repair_restores_a_dropped_trigger_and_an_altered_one_and_says_so(db):
    drop_trigger(db)
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER events_refuse_update")
    conn.execute("CREATE TRIGGER events_refuse_update BEFORE UPDATE ON events BEGIN SELECT 1; END")
    conn.execute("DROP INDEX events_partition")
    conn.commit()
    conn.close()
    verified = sh(db, "verify", "--log-only")
    assert verified.returncode == 1 and "events_refuse_update is altered" in verified.stderr
    repaired = sh(db, "repair", "--table")
    assert repaired.returncode == 0, repaired.stderr
    assert repaired.stdout.splitlines() == [
        "restored: index events_partition was missing; built",
        f"restored: trigger {TRIGGER} was missing; restored (verify reports it)",
        "restored: trigger events_refuse_update was altered; restored (verify reports it)"]
    assert TRIGGER in triggers_of(db)
    conn = sqlite3.connect(db)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM events")
    with pytest.raises(sqlite3.DatabaseError, match="never rewritten"):
        conn.execute("UPDATE events SET type = 'x'")
    conn.close()
    # the window in which the log was unprotected stays on record: verify names it
    after = sh(db, "verify", "--log-only")
    assert after.returncode == 1 and f"trigger {TRIGGER} was missing until it was restored" in after.stderr
    again = sh(db, "repair", "--table")
    assert again.returncode == 0 and again.stdout.strip() == \
        "nothing to repair: the schema is as this version writes it"


def test_a_missing_index_is_reported_by_a_read_and_verify_fails_naming_it(db):
    conn = sqlite3.connect(db)
    conn.execute("DROP INDEX facts_current_key")
    conn.commit()
    conn.close()
    before = state(db)
    facts = sh(db, "facts", "--app", APP, "--user", USER)
    assert facts.returncode == 0 and "Warning: index facts_current_key is missing; not repaired" in facts.stderr
    verified = sh(db, "verify", "--log-only")
    assert verified.returncode == 1
    assert "schema is not as written: index facts_current_key is missing" in verified.stderr
    assert digest(db) == before[0]


def test_a_read_only_ledger_refuses_a_write_even_from_its_own_connection(db):
    before = digest(db)
    with Ledger(db, read_only=True) as ledger:
        assert ledger.facts(APP, USER)
        with pytest.raises(LedgerReadOnly):
            ledger.observe(cand(value="vegan", session="s9", event="e9"))
        with pytest.raises(sqlite3.OperationalError, match="readonly|read-only"):
            ledger._conn.execute("INSERT INTO ledger_meta (key, value) VALUES ('bug', 'x')")
    assert digest(db) == before


def test_serve_reads_read_only(db, tmp_path):
    pytest.importorskip("datasette", reason="the web view is the optional `ui` extra")
    from tests.web.test_web_browser import free_port

    drop_trigger(db)
    before = state(db)
    port = free_port()
    process = subprocess.Popen([FACTLEDGER, "--db", str(db), "serve", "--public", "--port", str(port)],
                               stderr=subprocess.PIPE, text=True)
    try:
        page = None
        for _ in range(300):                     # readiness, not a timing assertion
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/-/factledger/", timeout=2)
                break
            except OSError:
                assert process.poll() is None, process.stderr.read()
                time.sleep(0.1)
        assert page is not None and page.status == 200
        user = urllib.request.urlopen(f"http://127.0.0.1:{port}/-/factledger/user?app={APP}&user={USER}",
                                      timeout=10)
        assert user.status == 200 and b"pescatarian" in user.read()
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert f"Warning: trigger {TRIGGER} is missing; not repaired" in stderr
    assert digest(db) == before[0] and TRIGGER not in triggers_of(db)


def test_postgres_reads_run_in_read_only_transactions(postgres):
    location = postgres.location("readonly_contract")
    clock = MovableClock("2026-09-01T00:00:00Z")
    with Ledger(location, clock=clock, create=True) as ledger:
        ledger.observe(cand(predicate="diet", value="pescatarian", session="d", event="d",
                            said_at="2026-08-10T10:00:00Z"))
        ledger._conn.execute(f"DROP TRIGGER {TRIGGER} ON events")
    with pytest.warns(RuntimeWarning, match=f"trigger {TRIGGER} is missing; not repaired"):
        reader = Ledger(location, clock=clock, read_only=True)
    try:
        assert [f["value"] for f in reader.facts(APP, USER)] == ["pescatarian"]
        assert reader.recall(APP, USER, "diet").selected
        assert reader._conn.execute("SHOW default_transaction_read_only").fetchone()[0] == "on"
        result = reader.verify()
        assert not result["ok"] and f"trigger {TRIGGER} is missing" in result["problem"]
        with pytest.raises(LedgerReadOnly):           # a bug that tried to write: the server refuses
            reader._conn.execute("INSERT INTO ledger_meta (key, value) VALUES ('bug', 'x')")
        with pytest.raises(LedgerReadOnly):
            reader.observe(cand(value="vegan", session="s9", event="e9"))
    finally:
        reader.close()
    with pytest.warns(RuntimeWarning, match="not repaired"):      # the read changed nothing
        Ledger(location, clock=clock, read_only=True).close()
    with pytest.warns(RuntimeWarning, match="restored"), Ledger(location, clock=clock, repair=True) as fixer:
        assert fixer.schema_report == [f"trigger {TRIGGER} was missing; restored (verify reports it)"]


def test_a_dry_run_forget_leaves_a_dropped_trigger_dropped_and_records_nothing(db):
    """A dry run plans inside a transaction it rolls back: it repairs no schema either (so the
    file an auditor is examining keeps its state and `verify` still names the gap)."""
    drop_trigger(db)
    events = sqlite3.connect(db).execute("SELECT count(*) FROM events").fetchone()[0]
    planned = sh(db, "forget", "--app", APP, "--user", USER, "--reason", "plan", "--dry-run", "--json")
    assert planned.returncode == 0, planned.stderr
    assert f"Warning: trigger {TRIGGER} is missing; not repaired" in planned.stderr
    assert TRIGGER not in triggers_of(db)
    assert sqlite3.connect(db).execute("SELECT count(*) FROM events").fetchone()[0] == events
