"""The command line on a PostgreSQL ledger: `--db postgresql://...` or FACTLEDGER_DB selects it,
`init` creates its schema, the demo runs end to end, and the file-only commands refuse it."""

from __future__ import annotations

import subprocess

import psycopg

from factledger.ledger.store.postgres.backend import split_location
from tests.store.test_concurrency_writers import ENV, FACTLEDGER


def fl(*args, env=None):
    return subprocess.run([FACTLEDGER, *args], capture_output=True, text=True, env=env or ENV)


def test_the_demo_runs_end_to_end_on_postgres(postgres):
    location = postgres.location()
    result = fl("--db", location, "demo")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "forgeries" not in result.stderr
    assert "projections match a rebuild from the log" in result.stdout
    assert "ok: 26 events verified (0 redacted)" in result.stdout
    again = fl("--db", location, "demo")
    assert again.returncode == 1 and "wants a fresh one" in again.stderr


def test_a_url_with_no_authority_opens_the_ledger(postgres):
    """libpq's `postgresql:///dbname?host=/socket/dir` (no user or host before the path) is a URL
    operators write for a Unix socket: the schema parameter taken out, it is still that URL."""
    location = f"postgresql:///postgres?host={postgres.root}&user=postgres&schema=no_authority"
    socket = str(postgres.root).replace("/", "%2F")
    assert split_location(location) == (f"postgresql:///postgres?host={socket}&user=postgres", "no_authority")
    made = fl("--db", location, "init")
    assert made.returncode == 0 and "schema no_authority" in made.stdout, made.stderr


def test_init_creates_the_named_schema_and_env_selects_it(postgres):
    location = postgres.location("ledger_from_env")
    missing = fl("facts", "--app", "a", "--user", "u", env={**ENV, "FACTLEDGER_DB": location})
    assert missing.returncode == 1 and "factledger init" in missing.stderr
    made = fl("init", env={**ENV, "FACTLEDGER_DB": location})
    assert made.returncode == 0 and "schema ledger_from_env" in made.stdout, made.stderr
    conninfo, _schema = split_location(location)
    with psycopg.connect(conninfo) as conn:
        tables = {r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'ledger_from_env'")}
    assert {"events", "facts_current", "fact_history", "projection_positions"} <= tables
    assert fl("init", env={**ENV, "FACTLEDGER_DB": location}).returncode == 0     # safe twice


def test_file_only_commands_and_bad_schema_names_are_refused(postgres):
    location = postgres.location()
    assert fl("--db", location, "init").returncode == 0
    query = fl("--db", location, "query", "SELECT 1")
    assert query.returncode == 1 and query.stderr.startswith("Error: query reads a SQLite ledger file")
    bad = fl("--db", location.replace("schema=", "schema=Bad-Name"), "init")
    assert bad.returncode == 1 and bad.stderr.startswith("Error: schema") and "Traceback" not in bad.stderr
