"""`--read-db` / FACTLEDGER_READ_DB on files (the routing itself; a PostgreSQL hot standby is
tests/store/test_pg_standby.py): read commands read the read location, write commands write
`--db`, `residue` reads `--db`, and a missing read location is an error with nothing created."""

from __future__ import annotations

import json
import shutil

from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger
from tests.conftest import cand


def run(*args, env=None):
    return CliRunner().invoke(cli, list(args), env=env)


def test_reads_follow_the_read_location_and_writes_stay_on_the_ledger(tmp_path):
    primary, copy = tmp_path / "primary.db", tmp_path / "copy.db"
    with Ledger(primary, create=True) as ledger:
        ledger.observe(cand(value="vegetarian"))
    shutil.copy(primary, copy)                     # a replica as of now
    with Ledger(primary) as ledger:
        ledger.observe(cand(user="u2", value="vegan", session="s2", event="e2"))

    def users(*args, env=None):
        result = run(*args, "partitions", "--json", env=env)
        assert result.exit_code == 0, result.output
        return sorted(p["user"] for p in json.loads(result.stdout))

    assert users("--db", str(primary)) == ["u1", "u2"]
    assert users("--db", str(primary), "--read-db", str(copy)) == ["u1"]
    assert users("--db", str(primary), env={"FACTLEDGER_READ_DB": str(copy)}) == ["u1"]
    wrote = run("--db", str(primary), "--read-db", str(copy), "observe", "--app", "app", "--user", "u3",
                "--predicate", "diet", "--value", "vegan", "--quote", "I said vegan", "--session", "s3",
                "--event-id", "e3", "--said-at", "2026-08-30T10:00:00Z")
    assert wrote.exit_code == 0, wrote.output
    assert users("--db", str(primary)) == ["u1", "u2", "u3"]
    assert users("--db", str(copy)) == ["u1"]
    stats = json.loads(run("--db", str(primary), "--read-db", str(copy), "stats", "--json").stdout)
    assert "standby" not in stats                  # a file is nobody's hot standby
    residue = json.loads(run("--db", str(primary), "--read-db", str(copy), "residue", "--json").stdout)
    assert str(primary) in json.dumps(residue) and str(copy) not in json.dumps(residue)


def test_a_missing_read_location_is_an_error_and_creates_nothing(tmp_path):
    primary = tmp_path / "primary.db"
    Ledger(primary, create=True).close()
    missing = tmp_path / "nowhere.db"
    result = run("--db", str(primary), "--read-db", str(missing), "facts", "--app", "app", "--user", "u1")
    assert result.exit_code == 1 and "Error: no ledger at" in result.output
    assert not missing.exists()
