"""No acknowledged write lost on failover (issue 30, item 4): a primary with a synchronous
standby (`synchronous_standby_names`, `synchronous_commit`), writers observing in a loop (library
processes and a loop of CLI subprocesses), one writer SIGKILLed and the primary stopped with
`pg_ctl stop -m immediate` while they write, the standby promoted.  Then every write a writer saw
succeed is on the new primary, the chain verifies, the projections equal a rebuild, and writers
pointed at the new primary go on.  The settings are docs/scale.md's ("Failover")."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from factledger.ledger import Ledger
from tests.pg_server import Server, Standby

ROOT = Path(__file__).resolve().parents[2]
FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
ENV = dict(os.environ, FACTLEDGER_FUTURE_TOLERANCE="100y")

# A library writer: one fact per partition (`app fo`, user `<name>-<n>`), "ack <user> <fact_id>"
# printed only once `observe` has returned, i.e. once the commit was acknowledged.
WRITER = r"""
import sys
from factledger.ledger import Ledger, make_candidate
db, name, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Ledger(db, future_tolerance="100y") as ledger:
    n = start
    while True:
        user = f"{name}-{n}"
        outcome = ledger.observe(make_candidate(app="fo", user=user, predicate="diet", value="vegetarian",
            quote="I am vegetarian", session=f"s-{user}", evidence_event="e1", said_at="2026-05-01"))
        print("ack", user, outcome.fact_id, flush=True)
        n += 1
"""

# A CLI writer: a loop of `factledger observe` subprocesses, "ack" after each that exits 0.
CLI_WRITER = r"""
n=$3
while :; do
  out=$("$FACTLEDGER" --db "$1" observe --app fo --user "$2-$n" --predicate diet --value vegetarian \
        --quote "I am vegetarian" --session "s-$2-$n" --event-id e1 --said-at 2026-05-01 --json) \
    && echo "ack $2-$n $(printf '%s' "$out" | tr -d '\n ')"
  n=$((n+1))
done
"""


def start_writer(db: str, name: str, start: int = 0, cli: bool = False) -> subprocess.Popen:
    if cli:
        command = ["bash", "-c", CLI_WRITER, "writer", db, name, str(start)]
    else:
        command = [sys.executable, "-c", WRITER, db, name, str(start)]
    return subprocess.Popen(command, cwd=ROOT, env=dict(ENV, FACTLEDGER=FACTLEDGER), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True)


def kill(process: subprocess.Popen) -> str:
    """SIGKILL the writer (and a CLI writer's running child): what it printed before dying."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    out, _ = process.communicate(timeout=60)
    return out


def acknowledged(outputs: list[str]) -> dict[str, str]:
    """user -> fact_id of every write a writer printed as acknowledged."""
    acks = {}
    for out in outputs:
        for line in out.splitlines():
            match = re.fullmatch(r'ack (\S+) (?:\{.*"fact_id":"([^"]+)".*\}|(\S+))', line)
            if match:
                acks[match.group(1)] = match.group(2) or match.group(3)
    return acks


def acks_so_far(process: subprocess.Popen, lines: list[str], want: int, timeout: float = 120) -> None:
    """Read a writer's output until it has printed `want` acknowledgements."""
    deadline = time.monotonic() + timeout
    while sum(1 for line in lines if line.startswith("ack")) < want:
        assert time.monotonic() < deadline, "the writer made no progress"
        line = process.stdout.readline()
        assert line, "the writer stopped"
        lines.append(line.rstrip("\n"))


def factledger(*args) -> subprocess.CompletedProcess:
    return subprocess.run([FACTLEDGER, *args], capture_output=True, text=True, timeout=600, env=ENV)


@pytest.fixture
def pair(postgres):
    """A primary and a standby that every commit waits for (synchronous_commit = remote_apply:
    acknowledged means applied on the standby, so it is also readable there at once)."""
    primary = Server(postgres.bindir).start()
    standby = None
    try:
        standby = Standby(primary, name="standby1").start()
        primary.require_synchronous("standby1", commit="remote_apply")
        deadline = time.monotonic() + 60
        while primary.sql("SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'") \
                != [("sync",)]:
            assert time.monotonic() < deadline, "the standby did not become synchronous"
            time.sleep(0.1)
        yield primary, standby
    finally:
        if standby is not None:
            standby.stop()
        primary.stop()


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(2))
def test_no_acknowledged_write_is_lost_when_the_primary_dies_mid_ingest(pair, round_):
    primary, standby = pair
    schema = f"failover_{round_}"
    assert factledger("--db", primary.location(schema), "init").returncode == 0
    on_primary = primary.location(schema)
    writers = {name: start_writer(on_primary, name, cli=name.startswith("cli"))
               for name in ("lib-a", "lib-b", "cli-c")}
    lines = {name: [] for name in writers}
    try:
        acks_so_far(writers["lib-a"], lines["lib-a"], 15 + 10 * round_)
        acks_so_far(writers["cli-c"], lines["cli-c"], 2)
        acks_so_far(writers["lib-b"], lines["lib-b"], 10)
        outputs = [kill(writers.pop("lib-a"))]                  # a writer dies mid-ingest
        acks_so_far(writers["lib-b"], lines["lib-b"], len(lines["lib-b"]) + 5)
        primary.crash()                                          # then the primary, writers still at it
        time.sleep(0.5)                                          # they fail against the dead server
        outputs += [kill(process) for process in writers.values()]
    finally:
        for process in writers.values():
            if process.poll() is None:
                kill(process)
    outputs += ["\n".join(found) for found in lines.values()]
    acks = acknowledged(outputs)
    assert len(acks) >= 32

    standby.promote()
    on_new_primary = standby.location(schema)
    with Ledger(on_new_primary, read_only=True) as ledger:
        for user, fact_id in acks.items():
            facts = ledger.facts("fo", user)
            assert [f["fact_id"] for f in facts] == [fact_id], f"acknowledged write {user} lost"
    verify = factledger("--db", on_new_primary, "verify", "--json")
    assert verify.returncode == 0 and json.loads(verify.stdout)["ok"], verify.stdout + verify.stderr
    check = factledger("--db", on_new_primary, "replay", "--check")
    assert check.returncode == 0, check.stdout + check.stderr

    head_before = factledger("--db", on_new_primary, "head").stdout.strip()
    after = {name: start_writer(on_new_primary, name, start=10_000, cli=name.startswith("cli"))
             for name in ("lib-a", "cli-c")}
    seen = {name: [] for name in after}
    try:
        for name, process in after.items():
            acks_so_far(process, seen[name], 3)
    finally:
        for process in after.values():
            kill(process)
    going_on = acknowledged(["\n".join(found) for found in seen.values()])
    assert len(going_on) >= 6 and not set(going_on) & set(acks)
    verify = factledger("--db", on_new_primary, "verify", "--json")
    assert verify.returncode == 0 and json.loads(verify.stdout)["ok"], verify.stdout + verify.stderr
    result = json.loads(verify.stdout)
    assert int(result["head"].split(":")[0]) > int(head_before.split(":")[0])
    with Ledger(on_new_primary, read_only=True) as ledger:
        for user, fact_id in going_on.items():
            assert [f["fact_id"] for f in ledger.facts("fo", user)] == [fact_id]
