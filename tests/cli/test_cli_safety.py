"""The CLI is safe by default: one partition rule, destructive commands ask or refuse, private files,
foreign databases untouched, no ledger created by a typo.  Real processes where a terminal matters."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import select
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger
from tests.conftest import MovableClock, cand

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
ROOT = Path(__file__).resolve().parents[2]
ENV = {"FACTLEDGER_APP": "app", "FACTLEDGER_USER": "u1", "FACTLEDGER_NOW": "2026-11-01T00:00:00Z"}


@pytest.fixture
def db(tmp_path) -> str:
    """Two tenants: (app, u1) and (other, u9), each with a health fact and a held candidate."""
    path = tmp_path / "ledger.db"
    clock = MovableClock("2026-09-01T00:00:00Z")
    with Ledger(path, clock=clock, create=True) as ledger:
        for app, user in (("app", "u1"), ("other", "u9")):
            ledger.observe(cand(app, user, predicate="home_city", value=f"Pune-{user}", session="s1",
                                said_at="2026-08-01"))
            ledger.observe(cand(app, user, predicate="medication", value=f"aspirin-{user}",
                                session="s1", said_at="2026-01-01"))
            ledger.observe(cand(app, user, predicate="diet", value=f"vegan-{user}", session="s1"))
            ledger.observe(cand(app, user, predicate="shoe_colour", value="red", session="s1"))
    return str(path)


def invoke(db: str, *args: str, env: dict | None = None, input: str | None = None):
    return CliRunner(env=env).invoke(cli, ["--db", db, *args], input=input)


def head(db: str) -> str:
    return invoke(db, "head").stdout.strip()


def mentions(text: str) -> set[str]:
    return {user for user in ("u1", "u9") if user in text}


# --- one partition rule --------------------------------------------------------------------

READS = [
    ["facts", "--include-sensitive", "--json"],
    ["history", "--json"],
    ["log", "--json"],
    ["review", "--json"],
    ["sessions", "--json"],
    ["recall", "where", "--clearance", "all", "--json"],
    ["export", "--data-subject"],
    ["export"],
    ["partitions", "--json"],
]


@pytest.mark.parametrize("args", READS, ids=lambda a: " ".join(a[:2]))
def test_every_partition_read_honours_the_environment_and_says_so(db, args):
    result = invoke(db, *args, env=ENV)
    assert result.exit_code == 0, result.output
    assert "Pune-u9" not in result.stdout and "aspirin-u9" not in result.stdout
    assert "from FACTLEDGER_APP" in result.stderr and "from FACTLEDGER_USER" in result.stderr
    typed = invoke(db, *args, "--app", "app", "--user", "u1")
    assert "FACTLEDGER" not in typed.stderr            # typed, so nothing to announce


def test_typed_partition_wins_over_the_environment(db):
    result = invoke(db, "facts", "--app", "other", "--user", "u9", "--json", env=ENV)
    assert {f["value"] for f in json.loads(result.stdout)} >= {"Pune-u9"}
    assert "FACTLEDGER" not in result.stderr


def test_erasures_honour_the_environment(db):
    for app, user in (("app", "u1"), ("other", "u9")):
        assert invoke(db, "forget", "--app", app, "--user", user, "--predicate", "diet",
                      "--reason", "r", "--yes").exit_code == 0
    rows = json.loads(invoke(db, "erasures", "--json", env=ENV).stdout)
    assert [r["app"] for r in rows] == ["app"]
    assert "from FACTLEDGER_APP" in invoke(db, "erasures", "--json", env=ENV).stderr


def test_forget_and_observe_act_on_the_environment_partition_and_say_so(db):
    result = invoke(db, "forget", "--predicate", "diet", "--reason", "r", "--yes", "--json",
                    env=ENV)
    assert result.exit_code == 0 and "from FACTLEDGER_USER" in result.stderr
    assert json.loads(result.stdout)["counts"]["facts"] == 1
    other = json.loads(invoke(db, "facts", "--app", "other", "--user", "u9", "--json").stdout)
    assert "vegan-u9" in {f["value"] for f in other}
    observed = invoke(db, "observe", "--predicate", "diet", "--value", "vegan", "--quote", "vegan",
                      "--session", "s5", "--event-id", "e5", "--said-at", "2026-10-01", env=ENV)
    assert observed.exit_code == 0 and "from FACTLEDGER_APP" in observed.stderr


def test_ingest_takes_the_environment_for_sessions_that_name_no_partition(tmp_path):
    db = str(tmp_path / "i.db")
    transcript = tmp_path / "chat.jsonl"
    transcript.write_text(json.dumps({"id": "a1", "author": "user", "timestamp": "2026-06-01T09:00:00Z",
                                      "text": "I'm vegetarian"}) + "\n")
    result = invoke(db, "ingest", str(transcript), "--create", "--json", env=ENV)
    assert result.exit_code == 0, result.output
    assert "from FACTLEDGER_APP" in result.stderr
    assert json.loads(result.stdout)["results"][0]["user"] == "u1"


def test_retain_acts_on_the_whole_ledger_only_with_all_and_never_beside_a_partition(db):
    plain = invoke(db, "retain", "--older-than", "1", "--sensitivity", "health")
    assert plain.exit_code == 2 and "--all" in plain.stderr
    clash = invoke(db, "retain", "--all", "--older-than", "1", "--sensitivity", "health", env=ENV)
    assert clash.exit_code == 2 and "FACTLEDGER_APP" in clash.stderr
    scoped = invoke(db, "retain", "--older-than", "1", "--sensitivity", "health", "--json", env=ENV)
    assert scoped.exit_code == 0 and "from FACTLEDGER_APP" in scoped.stderr
    plan = json.loads(scoped.stdout)["plan"]
    assert len(plan) == 1 and plan[0]["facts"]          # only (app, u1), never (other, u9)
    everything = json.loads(invoke(db, "retain", "--all", "--older-than", "1", "--sensitivity",
                                   "health", "--json").stdout)
    assert len(everything["plan"]) == 2


def test_whole_log_export_needs_all_and_refuses_it_beside_a_partition(db, tmp_path):
    out = tmp_path / "log.jsonl"
    assert invoke(db, "export", "--out", str(out)).exit_code == 2 and not out.exists()
    clash = invoke(db, "export", "--all", "--out", str(out), env=ENV)
    assert clash.exit_code == 2 and "FACTLEDGER_USER" in clash.stderr and not out.exists()
    assert invoke(db, "export", "--all", "--out", str(out)).exit_code == 0
    copy = str(tmp_path / "copy.db")
    assert invoke(copy, "import", str(out)).exit_code == 0


# --- destructive commands ask, or refuse ---------------------------------------------------

def sh(db: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FACTLEDGER_")}
    return subprocess.run([FACTLEDGER, "--db", db, *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env=env, timeout=120, **kwargs)


def test_forget_without_a_terminal_and_without_yes_refuses_and_changes_nothing(db):
    before = head(db)
    result = sh(db, "forget", "--app", "app", "--user", "u1", "--reason", "r")
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines()[0].startswith("plan: ")   # headed as a plan, not a dry run
    assert "Error: forget erases for good" in result.stderr and "--yes" in result.stderr
    assert head(db) == before and result.stdout == ""
    done = sh(db, "forget", "--app", "app", "--user", "u1", "--reason", "r", "--yes", "--json")
    assert done.returncode == 0 and head(db) != before


def test_retain_apply_without_a_terminal_and_without_yes_refuses(db):
    before = head(db)
    result = sh(db, "retain", "--all", "--older-than", "1", "--sensitivity", "health", "--apply")
    assert result.returncode == 1 and "--yes" in result.stderr and head(db) == before
    assert sh(db, "retain", "--all", "--older-than", "1", "--sensitivity", "health").returncode == 0


def on_a_terminal(db: str, args: list[str], answer: str) -> tuple[int, str]:
    """Run factledger with its stdin and stderr on a pseudo-terminal; answer its question."""
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FACTLEDGER_")}
    proc = subprocess.Popen([FACTLEDGER, "--db", db, *args], stdin=follower, stderr=follower,
                            stdout=subprocess.PIPE, env=env)
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 120
    while b"[y/N]" not in seen and time.monotonic() < deadline and proc.poll() is None:
        ready, _, _ = select.select([leader], [], [], 1)
        if ready:
            try:
                seen += os.read(leader, 4096)
            except OSError:
                break
    os.write(leader, answer.encode() + b"\n")
    proc.stdout.read()
    code = proc.wait(timeout=120)
    try:
        while select.select([leader], [], [], 0.2)[0]:
            seen += os.read(leader, 4096)
    except OSError:
        pass
    os.close(leader)
    return code, seen.decode(errors="replace")


@pytest.mark.parametrize("answer, changed", [("n", False), ("y", True)])
def test_forget_on_a_terminal_shows_the_plan_and_asks(db, answer, changed):
    before = head(db)
    code, seen = on_a_terminal(db, ["forget", "--app", "app", "--user", "u1", "--predicate",
                                    "diet", "--reason", "r"], answer)
    assert "plan: what will be scrubbed" in seen and "Scrub these events?" in seen
    assert (code == 0) is changed and (head(db) != before) is changed


@pytest.mark.parametrize("answer, changed", [("n", False), ("y", True)])
def test_retain_apply_on_a_terminal_shows_the_plan_and_asks(db, answer, changed):
    before = head(db)
    code, seen = on_a_terminal(db, ["retain", "--all", "--older-than", "1", "--sensitivity", "health",
                                    "--apply", "--reason", "retention policy"], answer)
    assert "plan: what will be scrubbed" in seen and "Scrub these events?" in seen
    assert (code == 0) is changed and (head(db) != before) is changed
    if not changed:
        assert "not confirmed; nothing was changed" in seen


def test_a_retention_run_carries_one_scope_hash_from_dry_run_through_the_plan_to_its_receipt(db):
    """The plan approved at the prompt can be matched to the receipt: the hash names the policy
    (days kept, partitions touched), not the cutoff instants, which move with the clock."""
    args = ["retain", "--all", "--older-than", "1", "--sensitivity", "health"]
    dry = json.loads(invoke(db, *args, "--json", env={"FACTLEDGER_NOW": "2026-11-01T00:00:00Z"}).stdout)
    prompt = invoke(db, *args, "--apply", input="y\n", env={"FACTLEDGER_NOW": "2026-11-01T00:05:00Z"})
    done = invoke(db, *args, "--apply", "--yes", "--json", env={"FACTLEDGER_NOW": "2026-11-01T00:10:00Z"})
    receipt = json.loads(done.stdout)
    assert not receipt["noop"] and set(receipt["retention_days"].values()) == {1}
    assert dry["scope_hash"] == receipt["scope_hash"]
    assert f"(retention {receipt['scope_hash']})" in prompt.stderr
    assert {p["scope_hash"] for p in dry["plan"]} == {receipt["scope_hash"]}
    erased = json.loads(invoke(db, "erasures", "--json").stdout)
    assert [r["scope_hash"] for r in erased] == [receipt["scope_hash"]]


# --- files ----------------------------------------------------------------------------------

def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_ledger_wal_shm_and_exports_are_private(tmp_path):
    old = os.umask(0o022)
    try:
        path = tmp_path / "p.db"
        assert invoke(str(path), "init").exit_code == 0
        with Ledger(path) as ledger:
            ledger.observe(cand())
            assert {name: mode(tmp_path / name) for name in ("p.db", "p.db-wal", "p.db-shm")} == \
                {"p.db": 0o600, "p.db-wal": 0o600, "p.db-shm": 0o600}
        out = tmp_path / "log.jsonl"
        assert invoke(str(path), "export", "--all", "-o", str(out)).exit_code == 0
        subject = tmp_path / "subject.json"
        assert invoke(str(path), "export", "--app", "app", "--user", "u1", "--data-subject",
                      "-o", str(subject)).exit_code == 0
        assert mode(out) == 0o600 and mode(subject) == 0o600
    finally:
        os.umask(old)


def test_a_ledger_made_readable_by_others_is_made_private_on_open_and_said(tmp_path):
    """Files an older version made 0644 (or a restore, or a copy) are tightened, with a warning."""
    path = tmp_path / "old.db"
    with Ledger(path, create=True) as ledger:
        ledger.observe(cand())
    for name in ("old.db", "old.db-wal", "old.db-shm"):
        if (tmp_path / name).exists():
            os.chmod(tmp_path / name, 0o644)
    result = sh(str(path), "facts", "--app", "app", "--user", "u1", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)[0]["value"] == "vegetarian"
    assert f"Warning: {path} was readable by others (0644): made owner-only (0600)" in result.stderr
    assert mode(path) == 0o600
    again = sh(str(path), "facts", "--app", "app", "--user", "u1", "--json")
    assert "readable by others" not in again.stderr                    # said once, when it changed


def test_the_library_tightens_too_and_warns(tmp_path):
    path = tmp_path / "old.db"
    with Ledger(path, create=True) as ledger:
        ledger.observe(cand())
    os.chmod(path, 0o640)
    with pytest.warns(RuntimeWarning, match="readable by others"), Ledger(path) as ledger:
        assert f"{path} was readable by others (0640): made owner-only (0600)" in ledger._work.schema_report
    assert all(mode(f) == 0o600 for f in tmp_path.iterdir() if f.name.startswith("old.db"))


def test_a_read_never_alters_a_database_that_is_not_a_ledger(tmp_path):
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE customers (name TEXT)")
    conn.execute("INSERT INTO customers VALUES ('x')")
    conn.commit()
    conn.close()
    digest = hashlib.sha256(other.read_bytes()).hexdigest()
    for args in (["facts", "--app", "a", "--user", "u"], ["stats"], ["verify"], ["log"],
                 ["observe", "--app", "a", "--user", "u", "--predicate", "diet", "--value", "v",
                  "--quote", "v", "--session", "s", "--event-id", "e", "--said-at", "2026-01-01"],
                 ["init"]):
        result = sh(str(other), *args)
        assert result.returncode == 1 and "not a factledger ledger" in result.stderr, (args, result.stderr)
    assert hashlib.sha256(other.read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite"]


@pytest.mark.parametrize("args", [
    ["observe", "--app", "a", "--user", "u", "--predicate", "diet", "--value", "vegan", "--quote", "I am vegan",
     "--session", "s", "--event-id", "e", "--said-at", "2026-01-01"],
    ["ingest", str(ROOT / "examples" / "sessions" / "meal-kit")],
])
def test_a_mistyped_db_does_not_create_a_ledger_unless_asked(tmp_path, args):
    typo = tmp_path / "factleger.db"
    result = sh(str(typo), *args)
    assert result.returncode == 1 and "no ledger at" in result.stderr and "--create" in result.stderr
    assert list(tmp_path.iterdir()) == []
    assert sh(str(typo), *args, "--create").returncode == 0 and typo.exists()


def test_db_is_accepted_after_the_subcommand(db, tmp_path):
    result = CliRunner().invoke(cli, ["facts", "--db", db, "--app", "app", "--user", "u1", "--json"])
    assert result.exit_code == 0 and "Pune-u1" in result.stdout
    assert not (Path.cwd() / "factledger.db").exists() or True
    later = CliRunner().invoke(cli, ["--db", str(tmp_path / "nope.db"), "head", "--db", db])
    assert later.exit_code == 0 and later.stdout.strip() == head(db)
