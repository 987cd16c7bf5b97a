"""Every table the CLI prints fits 120 columns at default settings (issue 46): long cells wrap
inside their column, nothing is cut, and --json is not touched.

Run as real subprocesses (stdout a pipe, so the default width is the piped one) over the demo
ledger, with serves, a held candidate and a dispute added so that every table has rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FACTLEDGER = str(Path(sys.executable).parent / "factledger")
WIDTH = 120
ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FACTLEDGER_DB")}


def run(db, *args, check=True):
    done = subprocess.run([FACTLEDGER, "--db", str(db), *args], capture_output=True, text=True,
                          env=ENV, timeout=300)
    assert not check or done.returncode == 0, (args, done.stderr)
    return done


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("demo")
    done = subprocess.run([FACTLEDGER, "demo", "--out", str(folder / "f.db")], capture_output=True, text=True,
                          env=ENV, timeout=600)
    assert done.returncode == 0, done.stderr
    db = folder / "f.db"
    P = ("--app", "mealkit", "--user", "priya")
    run(db, "recall", "what does she eat and where does she live", *P, "--as", "support-agent")
    run(db, "observe", *P, "--predicate", "shoe_size", "--value", "39", "--quote",
        "my shoe size is 39 and I would like the long explanation of every box you ship, please",
        "--session", "meal-9", "--event-id", "m9-e1", "--said-at", "2026-11-19")
    run(db, "observe", *P, "--predicate", "diet", "--value", "vegan", "--basis", "inferred", "--author", "agent",
        "--quote", "orders vegan boxes every week since the autumn menu changed", "--session", "meal-9",
        "--event-id", "m9-e2", "--said-at", "2026-11-19")
    return db


PARTITIONS = [("mealkit", "priya"), ("clinic", "arun"), ("deploybot", "team-atlas")]


def table_commands() -> list[tuple[str, ...]]:
    every = [("partitions",), ("predicates",), ("predicates", "--kinds"), ("predicates", "--check"),
             ("log",), ("erasures",), ("review",), ("review", "--all"), ("review", "--rejected"),
             ("review", "--contradictions"), ("stats",),
             ("query", "select seq, type, body from events order by seq desc limit 5")]
    for app, user in PARTITIONS:
        P = ("--app", app, "--user", user, "--clearance", "health")
        every += [("facts", *P), ("facts", *P, "--served"), ("facts", *P, "--as-of", "2026-09-15"),
                  ("facts", *P, "--valid-at", "2026-07-05"), ("history", *P), ("log", *P[:4]), ("sessions", *P[:4]),
                  ("served", *P[:4]), ("review", *P[:4], "--all"), ("recall", "what matters", *P, "--preload"),
                  ("recall", "what matters", *P, "--preload", "--explain")]
    return every


def test_every_table_line_fits_120_columns_and_json_is_whole(demo_db):
    from factledger.cli.output import display_width
    too_wide = []
    fact = json.loads(run(demo_db, "facts", "--app", "mealkit", "--user", "priya", "--json").stdout)[0]
    for args in [*table_commands(), ("why", fact["fact_id"]), ("verify",)]:
        done = run(demo_db, *args, "-t")
        assert done.stdout.strip() and "-[ 1 ]" not in done.stdout, args     # a table, not records
        too_wide += [(args, line) for line in done.stdout.splitlines() if display_width(line) > WIDTH]
    assert not too_wide, "\n".join(f"{' '.join(a)}: {len(line)}: {line}" for a, line in too_wide[:10])


def test_history_wraps_the_quote_without_losing_a_word_and_json_is_unchanged(demo_db):
    P = ("--app", "mealkit", "--user", "priya")
    rows = json.loads(run(demo_db, "history", *P, "--json").stdout)
    quote = next(r["quote"] for r in rows if r["value"] == "vegetarian")
    assert len(max(r["belief"] for r in rows)) > 20                    # JSON keeps "was current until T"
    assert all(len(r["valid_from"]) == 27 for r in rows)               # ... and the microseconds
    table = run(demo_db, "history", *P, "-t").stdout
    assert " ".join(table.split()).count(" ".join(quote.split())) >= 1    # whole, across wrapped lines
    for row in rows:
        assert row["fact_id"] in table                                     # ids never broken


def test_a_long_value_wraps_inside_its_column(demo_db):
    P = ("--app", "clinic", "--user", "arun")
    lines = run(demo_db, "log", *P, "-t").stdout.splitlines()
    header = lines[0]
    value_at, recorded_at = header.index("value"), header.index("recorded_at")
    for line in lines[2:]:
        beyond = line[value_at:recorded_at]
        assert len(beyond) <= recorded_at - value_at and (len(line) <= recorded_at or line[recorded_at:][:4]
                                                          in ("2026", ""))


def test_a_narrow_width_prints_one_record_per_row(demo_db):
    env = {**ENV, "COLUMNS": "60"}
    done = subprocess.run([FACTLEDGER, "--db", str(demo_db), "facts", "--app", "mealkit", "--user", "priya",
                           "-t"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and "-[ 1 ]" in done.stdout
    assert all(len(line) <= 60 for line in done.stdout.splitlines())
