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
from contextlib import contextmanager
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


@contextmanager
def replicated_pair(bindir, synchronous: bool):
    """A primary and a standby; `synchronous`: every commit waits for it (synchronous_commit =
    remote_apply: acknowledged means applied on the standby, so it is also readable there at once)."""
    primary = Server(bindir).start()
    standby = None
    try:
        standby = Standby(primary, name="standby1").start()
        if synchronous:
            primary.require_synchronous("standby1", commit="remote_apply")
        deadline = time.monotonic() + 60
        wanted = [("sync" if synchronous else "async",)]
        while primary.sql("SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'") \
                != wanted:
            assert time.monotonic() < deadline, f"the standby did not stream as {wanted}"
            time.sleep(0.1)
        yield primary, standby
    finally:
        if standby is not None:
            standby.stop()
        primary.stop()


@pytest.fixture
def pair(postgres):
    with replicated_pair(postgres.bindir, synchronous=True) as servers:
        yield servers


def crash_mid_ingest(primary: Server, on_primary: str, first: int, before_crash=None) -> dict[str, str]:
    """Writers at work on the primary, one SIGKILLed, then the primary stopped at once while the
    others write (`before_crash` runs just before it); the writes they saw acknowledged."""
    writers = {name: start_writer(on_primary, name, cli=name.startswith("cli"))
               for name in ("lib-a", "lib-b", "cli-c")}
    lines = {name: [] for name in writers}
    outputs = []
    try:
        acks_so_far(writers["lib-a"], lines["lib-a"], first)
        acks_so_far(writers["cli-c"], lines["cli-c"], 2)
        acks_so_far(writers["lib-b"], lines["lib-b"], 10)
        outputs.append(kill(writers.pop("lib-a")))              # a writer dies mid-ingest
        if before_crash is not None:
            before_crash()
        acks_so_far(writers["lib-b"], lines["lib-b"], len(lines["lib-b"]) + 5)
        primary.crash()                                          # then the primary, writers still at it
        time.sleep(0.5)                                          # they fail against the dead server
        outputs += [kill(process) for process in writers.values()]
    finally:
        for process in writers.values():
            if process.poll() is None:
                kill(process)
    return acknowledged(outputs + ["\n".join(found) for found in lines.values()])


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(2))
def test_no_acknowledged_write_is_lost_when_the_primary_dies_mid_ingest(pair, round_):
    primary, standby = pair
    schema = f"failover_{round_}"
    assert factledger("--db", primary.location(schema), "init").returncode == 0
    on_primary = primary.location(schema)
    acks = crash_mid_ingest(primary, on_primary, first=15 + 10 * round_)
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


@pytest.mark.slow
def test_the_same_check_finds_lost_writes_when_the_standby_is_not_synchronous(postgres):
    """The control: an asynchronous standby cut off from the primary (its primary_conninfo
    emptied) while the writers go on; the primary acknowledges what the standby never receives,
    and after the failover the check above finds those writes missing."""
    with replicated_pair(postgres.bindir, synchronous=False) as (primary, standby):
        on_primary = primary.location("failover_async")
        assert factledger("--db", on_primary, "init").returncode == 0

        def cut_off():
            standby.catch_up()
            standby.sql("ALTER SYSTEM SET primary_conninfo = ''", "SELECT pg_reload_conf()")
            deadline = time.monotonic() + 60
            while primary.sql("SELECT count(*) FROM pg_stat_replication")[0][0]:
                assert time.monotonic() < deadline, "the standby did not stop streaming"
                time.sleep(0.1)
            time.sleep(1.0)                          # the writers go on, acknowledged by the primary alone

        acks = crash_mid_ingest(primary, on_primary, first=10, before_crash=cut_off)
        standby.promote()
        with Ledger(standby.location("failover_async"), read_only=True) as ledger:
            lost = [user for user in acks if not ledger.facts("fo", user)]
        assert len(lost) >= 5, "an asynchronous standby cut off should have missed acknowledged writes"
