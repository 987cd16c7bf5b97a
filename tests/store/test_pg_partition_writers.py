"""Writers of different partitions of one PostgreSQL ledger decide in parallel, append in one order.

An observe takes the ledger's lock shared and a lock per (app, user) it names for its reads and
decisions, and the chain's lock from its first append to its commit (`backend.begin_partitions`,
`EventStore.transaction(partitions)`; docs/scale.md, "Writers").  Here, with real processes:

- writers of different partitions, racing, all land; the chain verifies, every projection equals
  a rebuild, and each candidate's decision is the one a serial run in the log's order makes;
- writers of one partition serialise: racing on the same keys, their decisions are still those
  of a serial run in the log's order;
- a writer deciding (its partition locked) lets another partition's writer through and holds
  back its own partition's and every whole-ledger writer; a writer appending (the chain locked)
  holds back every writer; killed in either state it leaves nothing and releases its locks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psycopg

from factledger.ledger import Ledger, make_candidate
from factledger.ledger.store.postgres.backend import chain_key, lock_key, partition_key, split_location
from tests.store.test_concurrency_writers import ENV, FACTLEDGER, ROOT

# One writer's candidates: its users' keys said, said again (reinforced), changed (superseded),
# denied and said anew, in a seeded order; printed as (first seq, action, reason, rule, events).
WRITER = r"""
import json, random, sys, time
from pathlib import Path
from factledger.ledger import Ledger, make_candidate
location, name, users, count, go = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4]), Path(sys.argv[5])
rng = random.Random(name)
VALUES = {"home_city": ["Pune", "Lima", "Oslo"], "diet": ["vegan", "vegetarian"], "job_title": ["nurse", "pilot"]}
out = []
with Ledger(location, busy_timeout=120, future_tolerance="100y", create=False) as ledger:
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.005)
    for n in range(count):
        user = rng.choice(users)
        predicate = rng.choice(sorted(VALUES))
        value = rng.choice(VALUES[predicate])
        spec = dict(app="race", user=user, predicate=predicate, value=value, quote=f"I said {value}",
                    session=f"{name}-s{n}", evidence_event="e", said_at=f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}Z")
        outcome = ledger.observe(make_candidate(**spec))
        out.append([outcome.seqs[0] if outcome.seqs else None, outcome.decision, outcome.reason, str(outcome.rule),
                    len(outcome.seqs), spec])
print(json.dumps(out), flush=True)
"""


def _race(location: str, tmp_path, users_of: list[list[str]], count: int) -> list[list]:
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, location, f"w{w}", ",".join(users), str(count), str(go)],
                              env=ENV, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w, users in enumerate(users_of)]
    for proc in procs:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()[-2000:]
    go.touch()
    decided = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr[-2000:]
        decided += json.loads(stdout.strip().splitlines()[-1])
    return decided


def _serial_equals(location: str, serial_location: str, decided: list[list]) -> None:
    """The log is whole and each decision is what one writer makes, given the candidates in the
    order the log holds them."""
    with Ledger(location, create=False) as ledger:
        check = ledger.verify()
        assert check["ok"], check
        assert check["events"] == sum(row[4] for row in decided)
        assert ledger.replay_differences() == []
        seqs = [seq for first, _action, _reason, _rule, n, _spec in decided for seq in range(first, first + n)]
        assert sorted(seqs) == list(range(1, check["events"] + 1))   # each seq once, each outcome's consecutive
    with Ledger(serial_location, future_tolerance="100y", create=True) as serial:
        for first, action, reason, rule, events, spec in sorted(decided, key=lambda row: row[0]):
            outcome = serial.observe(make_candidate(**spec))
            assert (outcome.decision, outcome.reason, str(outcome.rule), len(outcome.seqs)) == \
                (action, reason, rule, events), (first, spec)


def _created(location: str) -> str:
    with Ledger(location, create=True) as ledger:
        ledger.observe_many([])
    return location


def test_writers_of_different_partitions_all_land_and_decide_as_one_writer(postgres, tmp_path):
    location = _created(postgres.location())
    decided = _race(location, tmp_path, [[f"w{w}-u{u}" for u in range(3)] for w in range(4)], 40)
    assert {row[1] for row in decided} >= {"insert", "supersede"}
    _serial_equals(location, postgres.location(), decided)


def test_writers_of_one_partition_serialise(postgres, tmp_path):
    location = _created(postgres.location())
    decided = _race(location, tmp_path, [["shared"] for _w in range(3)], 30)
    assert {row[1] for row in decided} >= {"insert", "supersede"}
    _serial_equals(location, postgres.location(), decided)


def _observe(location: str, user: str, timeout: float = 0.5) -> subprocess.CompletedProcess:
    return subprocess.run([FACTLEDGER, "--db", location, "--busy-timeout", str(timeout), "observe", "--app", "race",
                           "--user", user, "--predicate", "diet", "--value", "vegan", "--quote", "I'm vegan",
                           "--session", f"s-{user}", "--event-id", "e1", "--said-at", "2026-10-01"],
                          capture_output=True, text=True, env=ENV, cwd=ROOT)


def _landed(result: subprocess.CompletedProcess) -> bool:
    if result.returncode == 0:
        return True
    assert result.returncode == 1 and result.stderr.startswith("Error: the ledger is busy"), result.stderr
    return False


def test_a_deciding_writer_holds_back_its_partition_and_whole_ledger_writers_only(postgres):
    location = _created(postgres.location())
    conninfo, schema = split_location(location)
    with psycopg.connect(conninfo, autocommit=True) as holder:    # the locks of an observe of "busy", deciding
        holder.execute("BEGIN")
        holder.execute("SELECT pg_advisory_xact_lock_shared(%s)", (lock_key(schema),))
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (partition_key(schema, "race", "busy"),))
        assert _landed(_observe(location, "other", timeout=30))
        assert not _landed(_observe(location, "busy"))
        with Ledger(location, busy_timeout=0.3, create=False) as ledger:   # a whole-ledger writer
            try:
                with ledger.transaction():
                    raise AssertionError("a whole-ledger transaction began beside a partition writer")
            except Exception as exc:                                      # noqa: BLE001 - its class is asserted
                assert type(exc).__name__ == "LedgerBusy", exc
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (chain_key(schema),))   # now appending
        assert not _landed(_observe(location, "third"))
        holder.execute("ROLLBACK")
    assert _landed(_observe(location, "busy", timeout=30))
    with Ledger(location, create=False) as ledger:
        assert sorted(u for (u,) in ledger._conn.execute("SELECT DISTINCT user FROM events WHERE app = 'race'")) \
            == ["busy", "other"]
        assert ledger.verify()["ok"]


# A writer that stops inside an observe of "held": before its first append (`decide`: its
# partition locked) or after it (`append`: the chain locked too), until killed.
HOLDER = r"""
import sys
from factledger.ledger import Ledger, make_candidate
from factledger.ledger import unit
location, mode = sys.argv[1], sys.argv[2]
plain = unit.UnitOfWork.append_candidate
def stopping(self, candidate, *args, **kwargs):
    if mode == "decide":
        print("holding", flush=True); sys.stdin.read()
    outcome = plain(self, candidate, *args, **kwargs)
    if mode == "append" and candidate.predicate == "job_title":
        print("holding", flush=True); sys.stdin.read()
    return outcome
unit.UnitOfWork.append_candidate = stopping
with Ledger(location, future_tolerance="100y", create=False) as ledger:
    ledger.observe_many([make_candidate(app="race", user="held", predicate=p, value=v, quote=f"I said {v}",
        session="held", evidence_event="e", said_at="2026-05-01") for p, v in (("diet", "vegan"), ("job_title", "nurse"),
        ("home_city", "Lima"))])
"""


def test_a_writer_killed_deciding_or_appending_leaves_nothing_and_frees_its_locks(postgres):
    location = _created(postgres.location())
    for mode, others_pass in (("decide", True), ("append", False)):
        proc = subprocess.Popen([sys.executable, "-c", HOLDER, location, mode], env=ENV, cwd=ROOT,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "holding", proc.stderr.read()[-2000:]
        assert not _landed(_observe(location, "held"))                  # its own partition waits
        assert _landed(_observe(location, f"beside-{mode}", timeout=30 if others_pass else 0.5)) == others_pass
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
        started = time.monotonic()
        assert _landed(_observe(location, "held", timeout=30))            # its locks went with it
        assert time.monotonic() - started < 25
    with Ledger(location, create=False) as ledger:
        counts = dict(ledger._conn.execute("SELECT user, COUNT(*) FROM events WHERE app = 'race' GROUP BY user"))
        dead = ledger._conn.execute("SELECT COUNT(*) FROM events WHERE app = 'race' AND user = 'held'"
                                    " AND (body LIKE '%nurse%' OR body LIKE '%Lima%')").fetchone()[0]
        assert dead == 0 and counts.get("held")     # the later observes of "held" only
        assert "beside-append" not in counts and counts.get("beside-decide") == 1
        assert ledger.verify()["ok"]
        assert ledger.replay_differences() == []


def test_a_closing_write_that_fails_in_the_pipeline_is_raised_and_leaves_nothing(postgres):
    """The closing writes and the COMMIT go in one round trip (`PgConnection.pipelined`): a write
    the server refuses there is raised as factledger's error at the COMMIT, nothing of the
    transaction stays, and the connection writes again afterwards."""
    location = _created(postgres.location())
    conninfo, schema = split_location(location)
    with psycopg.connect(conninfo, autocommit=True) as admin:
        admin.execute(f'SET search_path TO "{schema}"')
        admin.execute("CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS"
                      " $$BEGIN RAISE EXCEPTION 'refused here'; END;$$")
        admin.execute("CREATE TRIGGER refuse BEFORE UPDATE ON projection_positions FOR EACH ROW EXECUTE FUNCTION refuse()")
        with Ledger(location, create=False) as ledger:
            before = ledger.head()
            candidate = make_candidate(app="race", user="pipe", predicate="diet", value="vegan", quote="I'm vegan",
                                       session="pipe", evidence_event="e", said_at="2026-05-01")
            try:
                ledger.observe(candidate)
                raise AssertionError("the refused write was not raised")
            except Exception as exc:                                      # noqa: BLE001 - its class is asserted
                assert type(exc).__name__ == "ConstraintViolation" and "refused here" in str(exc), exc
            assert ledger.head() == before
            admin.execute("DROP TRIGGER refuse ON projection_positions")
            admin.execute("DROP FUNCTION refuse()")
            assert ledger.observe(candidate).decision == "insert"
            assert ledger.head()[0] == before[0] + 1
            assert ledger.verify()["ok"]
