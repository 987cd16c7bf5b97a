"""Crash safety: real `factledger ingest` and `forget` processes killed with SIGKILL at random moments.

After every kill:
- `verify` passes and `replay --check` finds no difference;
- every session is wholly ingested (its decision events and its `SessionIngested` watermark) or
  not at all: the log is a prefix of an uninterrupted run's log that ends on a session boundary;
- every forget request happened wholly (its `Redacted` event, every target scrubbed, the
  compensating events) or not at all;
- a second run completes the work, and the result equals the uninterrupted run: no duplicates.

The default suite runs a few trials; `make test-long` (pytest -m slow) runs 25 of each.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import string
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
ROOT = Path(__file__).resolve().parents[2]
NOW = "2026-11-01T00:00:00Z"
ENV = {**os.environ, "FACTLEDGER_NOW": NOW}
ENV.pop("ANTHROPIC_API_KEY", None)
SESSIONS = 36
USERS = 3
SEED = int(os.environ.get("FACTLEDGER_CRASH_SEED", "20261101"))


# --- generated sessions ----------------------------------------------------------------------


def word(i: int) -> str:
    out, i = "", i + 26
    while i:
        out, i = string.ascii_lowercase[i % 26] + out, i // 26
    return out


def adk_session(i: int, user: str, app: str = "crashapp", base: int = 1788080400) -> dict:
    """One ADK session: a move (supersedes), an allergy (accumulates), a diet, a spice preference."""
    t = base + i * 3600
    texts = [("user", f"Hi, we moved to C{word(i)}ville last week."),
             ("crash_agent", "Noted, thanks."),
             ("user", f"Also I'm allergic to {word(i)}nut. And I'm {'vegan' if i % 3 else 'vegetarian'}."),
             ("user", "I really like spicy food." if i % 2 else "I don't like spicy food.")]
    return {"id": f"sess-{i:03d}", "appName": app, "userId": user, "events": [
        {"id": f"sess-{i:03d}-e{j}", "author": author, "timestamp": t + j,
         "content": {"role": "user" if author == "user" else "model", "parts": [{"text": text}]}}
        for j, (author, text) in enumerate(texts)]}


def write_sessions(folder: Path, n: int = SESSIONS, users: int = USERS, app: str = "crashapp",
                   prefix: str = "") -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        session = adk_session(i, f"{prefix}user{i % users}", app)
        session["id"] = f"{prefix}{session['id']}"
        for event in session["events"]:
            event["id"] = f"{prefix}{event['id']}"
        path = folder / f"{prefix}{i:03d}.json"
        path.write_text(json.dumps(session))
        paths.append(path)
    return paths


# --- reading a ledger file -------------------------------------------------------------------


def log_types(db: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT type, app, user FROM events ORDER BY seq").fetchall()
    conn.close()
    return rows


def facts_of(db: Path) -> list[tuple]:
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT app, user, subject, predicate, value, status, basis, confidence,"
                        " session FROM facts_current ORDER BY 1, 2, 3, 4, 5").fetchall()
    conn.close()
    return rows


def ingested_sessions(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    rows = [r[0] for r in conn.execute("SELECT json_extract(body, '$.session') FROM events"
                                       " WHERE type = 'SessionIngested' ORDER BY seq")]
    conn.close()
    return rows


def assert_sound(db: Path) -> None:
    """`verify` and `replay --check` through the CLI code, as an operator would run them."""
    runner = CliRunner()
    verify = runner.invoke(cli, ["--db", str(db), "verify", "--json"])
    assert verify.exit_code == 0, verify.output
    check = runner.invoke(cli, ["--db", str(db), "replay", "--check", "--json"])
    assert check.exit_code == 0, check.output


def kill_at_random(args: list[str], delay: float, cwd: Path | None = None) -> int | None:
    """Start a process, SIGKILL its whole group after `delay` s; returns its exit code if it won."""
    proc = subprocess.Popen(args, env=ENV, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        proc.wait(timeout=delay)
        return proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None
    finally:
        proc.stderr.close()


def kill_when(args: list[str], db: Path, query: str, target: int, jitter: float,
              cwd: Path | None = None, timeout: float = 60.0) -> int | None:
    """Start a process; once `query` on `db` reaches `target`, wait `jitter` s and SIGKILL it.

    Kills spread over the work itself, not only the interpreter's start-up; returns the exit
    code if the process finished first.
    """
    proc = subprocess.Popen(args, env=ENV, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.05)
                try:
                    reached = (conn.execute(query).fetchone()[0] or 0) >= target
                finally:
                    conn.close()
            except sqlite3.Error:
                reached = False
            if reached:
                time.sleep(jitter)
                break
            time.sleep(0.003)
        if proc.poll() is not None:
            return proc.returncode
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def report(capsys, text: str) -> None:
    with capsys.disabled():
        print("\n" + text)


# --- ingest ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ingest_reference(tmp_path_factory):
    """An uninterrupted ingest of every session: the log and facts every trial must converge to."""
    base = tmp_path_factory.mktemp("crash-ingest")
    folder = base / "sessions"
    write_sessions(folder)
    db = base / "reference.db"
    started = time.monotonic()
    done = subprocess.run([FACTLEDGER, "--db", str(db), "ingest", "--create", str(folder),
                           "--extractor", "patterns", "--json"], env=ENV, capture_output=True,
                          text=True)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert len(ingested_sessions(db)) == SESSIONS
    return {"folder": folder, "db": db, "types": log_types(db), "facts": facts_of(db),
            "sessions": ingested_sessions(db), "elapsed": elapsed}


def ingest_trials(reference, tmp_path, trials: int, rng: random.Random) -> dict:
    stats = {"trials": 0, "killed": 0, "mid_work": 0}
    types = reference["types"]
    boundaries = {i + 1 for i, row in enumerate(types) if row[0] == "SessionIngested"} | {0}
    for trial in range(trials):
        db = tmp_path / f"ingest-{trial}.db"
        args = [FACTLEDGER, "--db", str(db), "ingest", "--create", str(reference["folder"]),
                "--extractor", "patterns"]
        if rng.random() < 0.25:               # anywhere, start-up included
            code = kill_at_random(args, rng.uniform(0.05, 1.1) * reference["elapsed"])
        else:                                 # somewhere inside the work
            code = kill_when(args, db, "SELECT COUNT(*) FROM events WHERE type = 'SessionIngested'",
                             rng.randrange(SESSIONS), rng.uniform(0, 0.06))
        stats["trials"] += 1
        stats["killed"] += code is None
        if not db.exists():
            continue                          # killed before the file was created
        got = log_types(db)
        # whole sessions or nothing: a prefix of the reference log ending on a session boundary
        assert len(got) in boundaries, (trial, len(got))
        assert got == types[:len(got)], trial
        done = ingested_sessions(db)
        assert done == reference["sessions"][:len(done)]
        stats["mid_work"] += 0 < len(done) < SESSIONS
        assert_sound(db)
        again = subprocess.run([FACTLEDGER, "--db", str(db), "ingest", "--create", str(reference["folder"]),
                                "--extractor", "patterns", "--json"], env=ENV,
                               capture_output=True, text=True)
        assert again.returncode == 0, again.stderr
        summary = json.loads(again.stdout)
        assert summary["ingested"] == SESSIONS - len(done)
        assert log_types(db) == types, "the second run must finish the work without duplicates"
        assert facts_of(db) == reference["facts"]
        assert_sound(db)
        db.unlink()
    return stats


def test_ingest_killed_at_random_moments(ingest_reference, tmp_path, capsys):
    stats = ingest_trials(ingest_reference, tmp_path, 5, random.Random(SEED))
    report(capsys, f"crash trials survived (ingest): {stats['trials']} of {stats['trials']} "
           f"({stats['killed']} killed, {stats['mid_work']} mid-way)")


@pytest.mark.slow
def test_ingest_killed_at_random_moments_long(ingest_reference, tmp_path, capsys):
    stats = ingest_trials(ingest_reference, tmp_path, 25, random.Random(SEED + 1))
    report(capsys, f"crash trials survived (ingest, long): {stats['trials']} of {stats['trials']} "
           f"({stats['killed']} killed, {stats['mid_work']} mid-way)")
    assert stats["mid_work"] >= 5


# --- forget ----------------------------------------------------------------------------------

# One process runs the real CLI's `forget` once per request, in order (as a script of requests
# would, without paying for an interpreter start per request).
FORGET_DRIVER = """
import sys, json
from factledger.cli.main import cli
db = sys.argv[1]
for args in json.loads(sys.argv[2]):
    try:
        cli(["--db", db, "forget", *args, "--yes", "--reason", "crash test", "--json"],
            standalone_mode=False)
    except SystemExit as exc:
        if exc.code:
            raise
"""


def forget_requests(reference_db: Path) -> list[list[str]]:
    part = ["--app", "crashapp"]
    requests = [part + ["--user", "user0", "--session", f"sess-{i:03d}"] for i in (0, 3, 6, 9, 12)]
    requests.append(part + ["--user", "user1"])                       # a whole user
    requests.append(part + ["--user", "user2", "--predicate", "allergy"])
    requests += [part + ["--user", "user0", "--session", f"sess-{i:03d}"] for i in (15, 18, 21)]
    return requests


def redactions(db: Path) -> list[tuple[int, list[int]]]:
    conn = sqlite3.connect(db)
    rows = [(seq, json.loads(body)["target_seqs"]) for seq, body in conn.execute(
        "SELECT seq, body FROM events WHERE type = 'Redacted' ORDER BY seq")]
    conn.close()
    return rows


def assert_redactions_whole(db: Path) -> None:
    """Every target of every Redacted event is scrubbed and names it (verify checks the converse)."""
    conn = sqlite3.connect(db)
    for seq, targets in redactions(db):
        for target in targets:
            body, by = conn.execute("SELECT body, redacted_by FROM events WHERE seq = ?",
                                    (target,)).fetchone()
            assert body is None and by == seq, (seq, target)
    conn.close()


@pytest.fixture(scope="module")
def forget_reference(ingest_reference, tmp_path_factory):
    base = tmp_path_factory.mktemp("crash-forget")
    requests = forget_requests(ingest_reference["db"])
    db = base / "reference.db"
    shutil.copyfile(ingest_reference["db"], db)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", FORGET_DRIVER, str(db), json.dumps(requests)],
                          env=ENV, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert len(redactions(db)) == len(requests)
    assert_sound(db)
    return {"db": db, "requests": requests, "types": log_types(db), "facts": facts_of(db),
            "start": ingest_reference["db"], "elapsed": elapsed,
            "base_events": len(ingest_reference["types"]), "base_redactions": 0}


def forget_trials(reference, tmp_path, trials: int, rng: random.Random) -> dict:
    stats = {"trials": 0, "killed": 0, "mid_work": 0}
    wanted = json.dumps(reference["requests"])
    n = len(reference["requests"])
    for trial in range(trials):
        db = tmp_path / f"forget-{trial}.db"
        shutil.copyfile(reference["start"], db)
        args = [sys.executable, "-c", FORGET_DRIVER, str(db), wanted]
        if rng.random() < 0.25:
            code = kill_at_random(args, rng.uniform(0.1, 1.1) * reference["elapsed"], ROOT)
        else:
            base = reference["base_redactions"]
            code = kill_when(args, db, "SELECT COUNT(*) FROM events WHERE type = 'Redacted'",
                             base + 1 + rng.randrange(n), rng.uniform(0, 0.08), ROOT)
        stats["trials"] += 1
        stats["killed"] += code is None
        assert code in (None, 0)
        done = redactions(db)
        stats["mid_work"] += 0 < len(done) < n
        assert_redactions_whole(db)
        assert_sound(db)
        # the log is the untouched ingest plus whole requests: the reference's event types up to
        # the k-th request's last compensating event
        got = [row[0] for row in log_types(db)]       # types: a whole-user erasure renames users
        wanted_types = [row[0] for row in reference["types"]]
        assert got == wanted_types[:len(got)]
        after = wanted_types[len(got):]
        assert not after or after[0] == "Redacted", "a request was cut in the middle"
        again = subprocess.run([sys.executable, "-c", FORGET_DRIVER, str(db), wanted], env=ENV,
                               cwd=ROOT, capture_output=True, text=True)
        assert again.returncode == 0, again.stderr
        assert len(redactions(db)) == n, "the second run must not forget twice"
        assert log_types(db) == reference["types"]
        assert facts_of(db) == reference["facts"]
        assert_redactions_whole(db)
        assert_sound(db)
        db.unlink()
    return stats


def test_forget_killed_at_random_moments(forget_reference, tmp_path, capsys):
    stats = forget_trials(forget_reference, tmp_path, 3, random.Random(SEED + 2))
    report(capsys, f"crash trials survived (forget): {stats['trials']} of {stats['trials']} "
           f"({stats['killed']} killed, {stats['mid_work']} mid-way)")


@pytest.mark.slow
def test_forget_killed_at_random_moments_long(forget_reference, tmp_path, capsys):
    stats = forget_trials(forget_reference, tmp_path, 25, random.Random(SEED + 3))
    report(capsys, f"crash trials survived (forget, long): {stats['trials']} of {stats['trials']} "
           f"({stats['killed']} killed, {stats['mid_work']} mid-way)")
    assert stats["mid_work"] >= 5
