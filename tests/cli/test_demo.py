"""`factledger demo`: a story in time a newcomer can follow, and a ledger left to explore (issue 46).

Run as a real subprocess, as `make demo` runs it."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

FACTLEDGER = str(Path(sys.executable).parent / "factledger")


def demo(*args, cwd):
    return subprocess.run([FACTLEDGER, *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def test_the_demo_tells_a_story_in_time_and_leaves_runnable_lines(tmp_path):
    done = demo("demo", "--out", "out/f.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stdout.splitlines() if line.startswith("# 2026-")]
    assert len(notes) >= 30                                     # a line per step saying what to notice
    assert notes[0].startswith("# 2026-06-01") and notes[-1].startswith("# 2026-11-20")
    # what the ledger believed before the move: Pune, recorded months before the move
    before = json.loads(demo("--db", "out/f.db", "facts", "--app", "mealkit", "--user", "priya",
                             "--as-of", "2026-09-15", "--json", cwd=tmp_path).stdout)
    assert {f["predicate"]: f["value"] for f in before}["home_city"] == "Pune"
    # ... and after it, Pune again: the move was forgotten, so no view holds it any more
    after_move = json.loads(demo("--db", "out/f.db", "facts", "--app", "mealkit", "--user", "priya",
                                 "--as-of", "2026-10-15", "--json", cwd=tmp_path).stdout)
    assert {f["predicate"]: f["value"] for f in after_move}["home_city"] == "Pune"
    # the closing lines run as printed, the keys they check with included
    lines = done.stdout.split("explore it, e.g.\n", 1)[1].splitlines()
    commands = [shlex.split(line) for line in lines if line.startswith("  ") and "serve" not in line]
    assert commands and all(c[0] == FACTLEDGER or c[0] == "factledger" for c in commands)
    for command in commands:
        ran = subprocess.run([FACTLEDGER, *command[1:]], capture_output=True, text=True, cwd=tmp_path)
        assert ran.returncode == 0, (command, ran.stderr)
    assert (tmp_path / "out" / "f.db.key.pub").exists() and (tmp_path / "out" / "f.db.ckpt").exists()


def test_a_second_run_offers_a_way_out_and_replace_takes_it(tmp_path):
    assert demo("demo", "--out", "f.db", cwd=tmp_path).returncode == 0
    again = demo("demo", "--out", "f.db", cwd=tmp_path)
    assert again.returncode == 1 and again.stderr.startswith("Error: ")
    assert "--replace" in again.stderr and "--out NEW.db" in again.stderr
    replaced = demo("demo", "--out", "f.db", "--replace", cwd=tmp_path)
    assert replaced.returncode == 0, replaced.stderr


def test_the_demo_honours_the_global_db_on_sqlite(tmp_path):
    done = demo("--db", "given.db", "demo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "given.db").exists() and "demo ledger kept at given.db" in done.stdout


def test_tables_show_times_to_the_second_and_json_keeps_microseconds(tmp_path):
    assert demo("demo", "--out", "f.db", cwd=tmp_path).returncode == 0
    table = demo("--db", "f.db", "facts", "--app", "mealkit", "--user", "priya", "-t", cwd=tmp_path).stdout
    assert "2026-10-28T12:00:00Z" in table and ".000000Z" not in table
    rows = json.loads(demo("--db", "f.db", "facts", "--app", "mealkit", "--user", "priya", "--json",
                           cwd=tmp_path).stdout)
    assert any(r["said_at"] == "2026-10-28T12:00:00.000000Z" for r in rows)
