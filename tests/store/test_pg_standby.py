"""Readers on a hot standby (issue 30, item 3): a real primary and a streaming replica of it
(pg_basebackup, tests/pg_server.py: Standby).  Once the standby has replayed all the primary
wrote, every read command answers on it exactly as on the primary, through `--read-db` (or
FACTLEDGER_READ_DB) beside a `--db` of the primary; the standby refuses writes with `Error: ...`,
exit 1, and nothing is written; a read-only open there tries no write of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from factledger.ledger import Ledger
from factledger.ledger.errors import LedgerReadOnly
from factledger.ledger.vocabulary.clock import parse_time
from tests.conftest import cand

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
EXAMPLES = Path(__file__).resolve().parents[1].parent / "examples" / "sessions"

READS = [
    ["facts", "--app", "mealkit", "--user", "priya", "--json"],
    ["facts", "--app", "mealkit", "--user", "priya", "--as-of", "2026-10-20", "--json"],
    ["history", "--app", "mealkit", "--user", "priya", "--json"],
    ["log", "--json"],
    ["log", "--app", "mealkit", "--user", "priya", "--nl"],
    ["recall", "--app", "mealkit", "--user", "priya", "where do I live"],
    ["verify", "--json"],
    ["head"],
    ["sessions", "--app", "mealkit", "--user", "priya", "--json"],
    ["partitions", "--json"],
    ["export", "--all"],
    ["replay", "--check", "--json"],
    ["review", "--json"],
    ["erasures", "--json"],
    ["prove", "3"],
    ["predicates", "--json"],
]


def factledger(*args, env=None, input=None):
    return subprocess.run([FACTLEDGER, *args], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **(env or {})), input=input)


@pytest.fixture(scope="module")
def ledgers(replicated):
    """(primary URL, standby URL) of one ledger: the bundled sessions ingested on the primary
    (meal-kit and clinical), then a fact observed, and the standby caught up."""
    primary, standby = replicated
    schema = "standby_reads"
    on_primary = primary.location(schema)
    sessions = sorted(str(p) for folder in ("meal-kit", "clinical") for p in (EXAMPLES / folder).glob("*.json"))
    done = factledger("--db", on_primary, "ingest", "--create", *sessions)
    assert done.returncode == 0, done.stderr
    with Ledger(on_primary) as ledger:
        ledger.observe(cand(app="mealkit", user="priya", predicate="household_size", value="2",
                            quote="there are two of us", session="s-size", event="e-size",
                            said_at="2026-10-30T10:00:00Z"))
    for step in (["checkpoint"], ["forget", "--app", "mealkit", "--user", "priya", "--session", "meal-2",
                                  "--reason", "user request", "--yes"]):
        done = factledger("--db", on_primary, *step)
        assert done.returncode == 0, (step, done.stderr)
    standby.catch_up()
    return on_primary, standby.location(schema)


def test_every_read_on_the_standby_equals_the_read_on_the_primary(ledgers):
    on_primary, on_standby = ledgers
    facts = json.loads(factledger("--db", on_primary, "facts", "--app", "mealkit", "--user", "priya",
                                  "--json").stdout)
    whys = [["why", fact["fact_id"], "--json"] for fact in facts[:3]]
    receipts = json.loads(factledger("--db", on_primary, "erasures", "--json").stdout)
    reports = [["report", "erasure", str(receipt["redaction_seq"]), "--json"] for receipt in receipts]
    assert whys and reports
    now = {"FACTLEDGER_NOW": "2030-01-01T00:00:00Z"}     # one clock for both (confidence decays, reports are dated)
    for command in READS + whys + reports:
        there = factledger("--db", on_primary, *command, env=now)
        assert there.returncode == 0, (command, there.stderr)
        here = factledger("--db", on_primary, "--read-db", on_standby, *command, env=now)
        assert here.returncode == 0, (command, here.stderr)
        assert here.stdout == there.stdout, command
        assert here.stdout.strip(), command
        assert "Warning" not in here.stderr, (command, here.stderr)   # nothing to repair, nothing tried


def test_the_read_url_comes_from_the_environment_and_reads_the_standby_alone(ledgers, replicated):
    """FACTLEDGER_READ_DB names the replica; the reads do not touch --db (a primary that is down
    or unreachable does not stop them)."""
    on_primary, on_standby = ledgers
    nowhere = "postgresql://postgres@/postgres?host=/nonexistent-socket-folder&schema=standby_reads"
    now = {"FACTLEDGER_NOW": "2030-01-01T00:00:00Z"}
    facts = factledger("--db", nowhere, "facts", "--app", "mealkit", "--user", "priya", "--json",
                       env={"FACTLEDGER_READ_DB": on_standby, **now})
    assert facts.returncode == 0, facts.stderr
    assert facts.stdout == factledger("--db", on_primary, "facts", "--app", "mealkit", "--user", "priya",
                                      "--json", env=now).stdout
    verify = factledger("--db", nowhere, "--read-db", on_standby, "verify", "--json")
    assert verify.returncode == 0 and json.loads(verify.stdout)["ok"], verify.stderr


def test_a_write_goes_to_the_primary_and_the_standby_serves_it_once_replayed(ledgers, replicated):
    primary, standby = replicated
    on_primary, on_standby = ledgers
    wrote = factledger("--db", on_primary, "--read-db", on_standby, "observe", "--app", "mealkit",
                       "--user", "arun", "--predicate", "diet", "--value", "vegan", "--quote", "I am vegan",
                       "--session", "s-arun", "--event-id", "e-arun", "--said-at", "2026-10-30T11:00:00Z")
    assert wrote.returncode == 0, wrote.stderr
    standby.catch_up()
    read = factledger("--db", on_primary, "--read-db", on_standby, "facts", "--app", "mealkit",
                      "--user", "arun", "--json")
    assert [f["value"] for f in json.loads(read.stdout)] == ["vegan"]


@pytest.mark.parametrize("command", [
    ["observe", "--app", "mealkit", "--user", "priya", "--predicate", "diet", "--value", "vegan",
     "--quote", "I am vegan", "--session", "s-no", "--event-id", "e-no", "--said-at", "2026-10-30T11:00:00Z"],
    ["forget", "--app", "mealkit", "--user", "priya", "--reason", "test", "--yes"],
    ["replay"],
    ["init"],
    ["repair"],
])
def test_the_standby_refuses_writes_with_an_error_and_changes_nothing(ledgers, replicated, command):
    primary, standby = replicated
    on_primary, on_standby = ledgers
    before = factledger("--db", on_standby, "head").stdout
    refused = factledger("--db", on_standby, *command)
    assert refused.returncode == 1, (command, refused.stdout, refused.stderr)
    assert refused.stderr.startswith("Error: ") and "hot standby" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    standby.catch_up()
    assert factledger("--db", on_standby, "head").stdout == before
    assert factledger("--db", on_primary, "head").stdout == before


@pytest.mark.parametrize("command", [["init"], ["import", "/dev/null"], ["demo"],
                                     ["observe", "--create", "--app", "a", "--user", "u", "--predicate", "diet",
                                      "--value", "vegan", "--quote", "I am vegan", "--session", "s1",
                                      "--event-id", "e1", "--said-at", "2026-08-30"]])
def test_a_new_ledger_on_the_standby_is_refused_with_an_error(replicated, command):
    """Creating a ledger there (init, import, demo, --create) is a write like any other."""
    _primary, standby = replicated
    refused = factledger("--db", standby.location("standby_new"), *command, input="")
    assert refused.returncode == 1 and refused.stderr.startswith("Error: ") and "hot standby" in refused.stderr, \
        refused.stderr
    assert "Traceback" not in refused.stderr
    assert standby.sql("SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'standby_new'") == [(0,)]


def test_the_library_refuses_a_write_open_of_a_standby_and_reads_it_read_only(ledgers):
    on_primary, on_standby = ledgers
    with pytest.raises(LedgerReadOnly, match="hot standby"):
        Ledger(on_standby)
    def fixed():                                     # one clock for both: confidence decays with time
        return parse_time("2030-01-01T00:00:00Z")

    with Ledger(on_standby, read_only=True, clock=fixed) as reader, \
            Ledger(on_primary, read_only=True, clock=fixed) as writer_side:
        assert reader.schema_report == []
        assert reader.head() == writer_side.head()
        assert reader.facts("mealkit", "priya") == writer_side.facts("mealkit", "priya")
        assert reader.verify()["ok"]
        status = reader.standby()
        assert writer_side.standby() is None
    assert status["replayed_lsn"] and status["replay_lag_bytes"] == 0 and status["replay_paused"] is False


def test_stats_on_the_standby_say_how_far_it_has_replayed(ledgers):
    on_primary, on_standby = ledgers
    primary_stats = json.loads(factledger("--db", on_primary, "stats", "--json").stdout)
    standby_stats = json.loads(factledger("--db", on_primary, "--read-db", on_standby, "stats", "--json").stdout)
    replica = standby_stats.pop("standby")
    assert standby_stats == primary_stats and "standby" not in primary_stats
    assert set(replica) == {"received_lsn", "replayed_lsn", "replay_lag_bytes", "replayed_commit_at",
                            "replay_paused"}
    assert replica["replayed_commit_at"].endswith("Z")


def test_residue_reads_the_primary_even_with_a_read_url(ledgers):
    """The copies a forget cannot reach are the primary's to list (its replicas, slots, archive):
    a standby knows none of them, so `residue` does not follow --read-db."""
    on_primary, on_standby = ledgers
    report = json.loads(factledger("--db", on_primary, "--read-db", on_standby, "residue", "--json").stdout)
    assert any(p["place"] == "replica" for p in report["places"]), report["places"]


def test_a_read_only_open_of_an_older_schema_on_the_standby_says_so_and_writes_nothing(replicated):
    """Where the schema on the standby lacks an index (dropped on the primary), a read there says
    so as a warning and repairs nothing: the standby's catalog is read-only too."""
    primary, standby = replicated
    on_primary = primary.location("standby_old")
    with Ledger(on_primary, create=True) as ledger:
        ledger.observe(cand(app="a", user="u"))
    # (an index a constraint does not own: on a partitioned log events_partition is the primary key)
    primary.sql('DROP INDEX "standby_old".facts_current_key')
    standby.catch_up()
    read = factledger("--db", on_primary, "--read-db", standby.location("standby_old"), "facts",
                      "--app", "a", "--user", "u", "--json")
    assert read.returncode == 0, read.stderr
    assert "Warning" in read.stderr and "facts_current_key" in read.stderr
    assert [f["value"] for f in json.loads(read.stdout)] == ["vegetarian"]


def test_a_read_url_that_holds_no_ledger_is_an_error_and_no_fallback(ledgers, replicated):
    _primary, standby = replicated
    on_primary, _on_standby = ledgers
    missing = factledger("--db", on_primary, "--read-db", standby.location("no_such_ledger"), "facts",
                         "--app", "mealkit", "--user", "priya")
    assert missing.returncode == 1 and missing.stderr.startswith("Error: no ledger at") and not missing.stdout
    down = factledger("--db", on_primary, "--read-db",
                      "postgresql://postgres@/postgres?host=/nonexistent-socket-folder&schema=standby_reads",
                      "head")
    assert down.returncode == 1 and down.stderr.startswith("Error: cannot open ledger") and not down.stdout
