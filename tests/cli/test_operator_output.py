"""Output a person reads (issue 46): usage errors that name what is missing, hints where an empty
answer would mislead, times to the second in tables."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FACTLEDGER = str(Path(sys.executable).parent / "factledger")


def cli(db, *args):
    return subprocess.run([FACTLEDGER, "--db", str(db), *args], capture_output=True, text=True)


def ledger(tmp_path):
    db = tmp_path / "l.db"
    done = cli(db, "observe", "--create", "--app", "a", "--user", "u", "--predicate", "diet", "--value", "vegan",
               "--quote", "I'm vegan", "--session", "s1", "--event-id", "e1", "--said-at", "2026-09-01")
    assert done.returncode == 0, done.stderr
    return db


def test_a_missing_user_is_a_usage_error_that_names_it(tmp_path):
    db = ledger(tmp_path)
    done = cli(db, "facts", "--app", "a")
    assert done.returncode == 2 and "--user (or FACTLEDGER_USER)" in done.stderr
    assert "--app" not in done.stderr.split("give", 1)[1]
    both = cli(db, "history")
    assert both.returncode == 2 and "--app (or FACTLEDGER_APP) and --user" in both.stderr


def test_recall_without_a_query_says_what_to_give(tmp_path):
    db = ledger(tmp_path)
    done = cli(db, "recall", "--app", "a", "--user", "u")
    assert done.returncode == 2 and "--preload" in done.stderr and "holds nothing" not in done.stdout
    assert cli(db, "recall", "--app", "a", "--user", "u", "--preload").returncode == 0


def test_a_closed_status_without_a_time_says_how_to_see_it(tmp_path):
    db = ledger(tmp_path)
    done = cli(db, "facts", "--app", "a", "--user", "u", "--status", "superseded", "--json")
    assert done.returncode == 0 and done.stdout.strip() == "[]"
    assert "--valid-at" in done.stderr and "history" in done.stderr


def test_the_erasure_report_names_its_ledger_and_says_its_counts_in_words(tmp_path):
    db = ledger(tmp_path)
    forgot = cli(db, "forget", "--app", "a", "--user", "u", "--session", "s1", "--reason", "asked", "--yes",
                 "--json")
    assert forgot.returncode == 0, forgot.stderr
    import json

    seq = json.loads(forgot.stdout)["redaction_seq"]
    report = cli(db, "report", "erasure", str(seq)).stdout
    assert f"| Ledger | {db} |" in report
    assert "events scrubbed" in report and "rows:" not in report and ".000000Z" not in report
    assert json.loads(cli(db, "report", "erasure", str(seq), "--format", "json").stdout)["ledger"] == str(db)
