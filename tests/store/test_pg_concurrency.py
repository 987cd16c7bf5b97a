"""The concurrency and crash suites on PostgreSQL: many processes, one ledger, nothing lost.

- the four writers of `tests/store/test_concurrency_writers.py` (two observe, one ingest, one forget)
  race on one PostgreSQL ledger: seqs 1..N each claimed once, every operation's events
  consecutive, the chain verifies, every projection equals a rebuild;
- a writer killed (SIGKILL) at random moments leaves no half-written transaction: each batch is
  in the log whole or not at all, and the next writer is not blocked by a lock the dead one held;
- a writer queued behind the lock past the busy timeout gets `Error: ... busy`, exit 1.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from contextlib import nullcontext

import psycopg
import pytest

from factledger.ledger import Ledger
from factledger.ledger.store.postgres.backend import lock_key, split_location
from tests.store.test_concurrency_writers import ENV, FACTLEDGER, OBSERVE, ROOT, writers_test


def test_four_writers_lose_and_interleave_nothing_on_postgres(postgres, tmp_path, capsys):
    writers_test(tmp_path, capsys, observe_ops=380, sessions=64, forgets=30, db=postgres.location())


@pytest.mark.slow
def test_four_writers_lose_and_interleave_nothing_on_postgres_long(postgres, tmp_path, capsys):
    writers_test(tmp_path, capsys, observe_ops=700, sessions=120, forgets=60, db=postgres.location())


KILLED = r"""
import sys
from factledger.ledger import Ledger, make_candidate
db, trial, mode = sys.argv[1], sys.argv[2], sys.argv[3]
PREDICATES = ["home_city", "diet", "plan", "favorite_cuisine", "job_title"]
with Ledger(db, future_tolerance="100y", create=True) as ledger:
    if mode == "hold":                       # die holding the lock, events appended, uncommitted
        with ledger.transaction():
            for n, predicate in enumerate(PREDICATES):
                ledger.append_candidate(make_candidate(app="kill", user=f"held-{trial}", predicate=predicate,
                    value=f"v{n}", quote=f"I said v{n}", session=f"held-{trial}", evidence_event="e",
                    said_at="2026-05-01"))
            print("holding", flush=True)
            sys.stdin.read()
    batch = 0
    while True:                              # batches of five new facts (five events), until killed
        session = f"t{trial}-b{batch}"
        ledger.observe_many([make_candidate(app="kill", user=session, predicate=predicate, value=f"v{n}",
            quote=f"I said v{n}", session=session, evidence_event="e", said_at="2026-05-01")
            for n, predicate in enumerate(PREDICATES)])
        if batch == 0:
            print("writing", flush=True)
        batch += 1
"""


def _start(location: str, trial: int, mode: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", KILLED, location, str(trial), mode], env=ENV, cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.strip() in ("writing", "holding"), proc.stderr.read()[-2000:]
    return proc


def _check_whole(location: str) -> dict:
    with Ledger(location, create=False) as ledger:
        sizes = dict(ledger._conn.execute(
            "SELECT user, COUNT(*) FROM events WHERE app = 'kill' GROUP BY user").fetchall())
        assert ledger.verify()["ok"]
        assert ledger.replay_differences() == []
    assert all(size == 5 for size in sizes.values()), sizes
    return sizes


@pytest.mark.parametrize("trials", [4])
def test_a_killed_writer_leaves_no_half_written_transaction(postgres, trials, capsys):
    location = postgres.location()
    rng = random.Random(5)
    batches = 0
    for trial in range(trials):
        proc = _start(location, trial, "write")
        time.sleep(rng.uniform(0.05, 0.6))
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
        batches = len(_check_whole(location))
    with capsys.disabled():
        print(f"\nPostgreSQL: {trials} writers killed mid-stream; {batches} batches in the log, each whole")
    assert batches > 0


@pytest.mark.slow
def test_a_killed_writer_leaves_no_half_written_transaction_long(postgres):
    test_a_killed_writer_leaves_no_half_written_transaction(postgres, 25, _NoCapsys())


class _NoCapsys:
    def disabled(self):
        return nullcontext()


def test_a_writer_killed_holding_the_lock_frees_it_and_leaves_nothing(postgres):
    location = postgres.location()
    with Ledger(location, create=True) as ledger:
        ledger.observe_many([])
        before = ledger.head()
    proc = _start(location, 0, "hold")
    blocked = subprocess.run([FACTLEDGER, "--db", location, "--busy-timeout", "0.3", *OBSERVE],
                             capture_output=True, text=True, env=ENV)
    assert blocked.returncode == 1 and "busy" in blocked.stderr and "Traceback" not in blocked.stderr
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    after = subprocess.run([FACTLEDGER, "--db", location, "--busy-timeout", "30", *OBSERVE],
                           capture_output=True, text=True, env=ENV)
    assert after.returncode == 0, after.stderr
    with Ledger(location, create=False) as ledger:
        assert ledger.head()[0] == before[0] + 1
        assert ledger._conn.execute("SELECT COUNT(*) FROM events WHERE app = 'kill'").fetchone()[0] == 0
        assert ledger.verify()["ok"]


def test_a_writer_past_the_busy_timeout_gets_a_clear_error_and_writes_nothing(postgres):
    location = postgres.location()
    with Ledger(location, create=True) as ledger:
        ledger.observe_many([])
    conninfo, schema = split_location(location)
    with psycopg.connect(conninfo, autocommit=True) as holder:
        holder.execute("BEGIN")
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(schema),))
        result = subprocess.run([FACTLEDGER, "--db", location, "--busy-timeout", "0.3", *OBSERVE],
                                capture_output=True, text=True, env=ENV)
        holder.execute("ROLLBACK")
    assert result.returncode == 1
    assert result.stderr.startswith("Error: the ledger is busy"), result.stderr
    with Ledger(location, create=False) as ledger:
        assert ledger.head()[0] == 0


def test_separate_ledgers_do_not_share_a_lock(postgres):
    """A writer holding one ledger's lock does not block a writer of another ledger (schema)."""
    one, other = postgres.location(), postgres.location()
    for location in (one, other):
        with Ledger(location, create=True) as ledger:
            ledger.observe_many([])
    conninfo, schema = split_location(one)
    with psycopg.connect(conninfo, autocommit=True) as holder:
        holder.execute("BEGIN")
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(schema),))
        result = subprocess.run([FACTLEDGER, "--db", other, "--busy-timeout", "0.3", *OBSERVE],
                                capture_output=True, text=True, env=ENV)
        holder.execute("ROLLBACK")
    assert result.returncode == 0, result.stderr
