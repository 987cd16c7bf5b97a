"""`replay --jobs N`: worker processes fold the partitions, the parent writes and commits once.

The tables a two-job rebuild writes must be the ones a one-job rebuild writes and the live fold
holds, on both backends (generated sequences, as tests/projections/test_fold_rebuild.py, and the
demo's ledger, which has sessions, a forget's receipts and rejections); `replay --check` must say
the same at one and two jobs; a worker that dies or raises fails the replay with `Error: ...`,
exit 1, and leaves the projections as they were; a bad `--jobs` is refused before anything opens;
on PostgreSQL the VACUUM after the commit is shared by as many sessions as there are jobs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from itertools import count
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from factledger.ledger import Ledger, LedgerError
from factledger.ledger.store.reads import partition_sizes
from factledger.projections import parallel
from tests.audit.forger import raw_forger
from tests.conftest import MovableClock, cand
from tests.projections.test_fold_rebuild import check_invariants, operations, run

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
ENV = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "FACTLEDGER_NOW")}
_schemas = count()


def fl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([FACTLEDGER, *args], capture_output=True, text=True, env=ENV)


def projection_rows(ledger: Ledger) -> dict[str, list]:
    """Every projection table's rows, sorted, in the columns both engines share (PostgreSQL's
    `facts_current` keeps an explicit rowid whose values a rebuild renumbers)."""
    out = {}
    for table in ledger.projector.all_tables:
        cursor = ledger._conn.execute(f"SELECT * FROM {table} LIMIT 0")
        columns = ", ".join(d[0] for d in cursor.description if d[0] != "rowid")
        out[table] = sorted(map(tuple, ledger._conn.execute(f"SELECT {columns} FROM {table}").fetchall()), key=repr)
    return out


def one_share_per_partition():
    """Every partition its own share, so the small ledgers here cross shares and workers."""
    patch = pytest.MonkeyPatch()
    patch.setattr(parallel, "MIN_SHARE", 1)
    patch.setattr(parallel, "SHARES_PER_JOB", 1_000)
    return patch


def check_jobs_agree(location) -> None:
    """Live == rebuilt at two jobs == rebuilt at one, and `--check` empty at both."""
    with Ledger(location) as ledger:
        live = projection_rows(ledger)
        assert ledger.replay_differences(jobs=2) == [] == ledger.replay_differences()
        assert ledger.replay(jobs=2) == ledger.event_count()
        assert projection_rows(ledger) == live
        ledger.replay()
        assert projection_rows(ledger) == live
        assert ledger.verify()["ok"]


def _fold_generated(location, ops) -> None:
    clock = MovableClock()
    with Ledger(location, clock=clock, create=True) as ledger:
        run(ledger, clock, ops)
        ledger.observe(cand(user="u3", predicate="no_such_predicate", value="x"))   # a held candidate
        if isinstance(location, Path):        # its SQL is SQLite's (a join PostgreSQL refuses)
            check_invariants(ledger)
    patch = one_share_per_partition()
    try:
        check_jobs_agree(location)
    finally:
        patch.undo()


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_two_jobs_rebuild_what_one_job_and_the_live_fold_hold(ops):
    with tempfile.TemporaryDirectory() as tmp:
        _fold_generated(Path(tmp) / "l.db", ops)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_two_jobs_rebuild_what_one_job_and_the_live_fold_hold_on_postgres(postgres, ops):
    _fold_generated(postgres.location(f"jobs_{next(_schemas)}"), ops)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_two_jobs_agree_deeper(ops):
    with tempfile.TemporaryDirectory() as tmp:
        _fold_generated(Path(tmp) / "l.db", ops)


@pytest.fixture(params=["sqlite", "postgres"])
def demo_ledger(request, tmp_path):
    """The demo's ledger (ingested sessions, a forget and its receipt, rejections), on each backend."""
    if request.param == "sqlite":
        location = str(tmp_path / "demo.db")
    else:
        location = request.getfixturevalue("postgres").location(f"jobs_demo_{next(_schemas)}")
    done = fl("demo", "--out", location)
    assert done.returncode == 0, done.stderr[-2000:]
    return location


def test_replay_check_says_the_same_at_one_and_two_jobs(demo_ledger):
    one = fl("--db", demo_ledger, "replay", "--check", "--json")
    two = fl("--db", demo_ledger, "replay", "--check", "--jobs", "2", "--json")
    assert one.returncode == two.returncode == 0, (one.stderr, two.stderr)
    assert json.loads(one.stdout) == json.loads(two.stdout)
    assert {k: v for k, v in json.loads(one.stdout).items() if k != "meaning"} == {"ok": True, "differences": []}
    with Ledger(demo_ledger, read_only=True) as ledger:
        before = projection_rows(ledger)
    done = fl("--db", demo_ledger, "replay", "--jobs", "2", "--json")
    assert done.returncode == 0, done.stderr
    with Ledger(demo_ledger, read_only=True) as ledger:
        assert json.loads(done.stdout) == {"replayed": ledger.event_count()}
        assert projection_rows(ledger) == before
    check_jobs_agree(demo_ledger)


def test_check_finds_the_same_difference_at_one_and_two_jobs(tmp_path):
    db = str(tmp_path / "d.db")
    assert fl("demo", "--out", db).returncode == 0
    with Ledger(db) as ledger, ledger.transaction():
        ledger._conn.execute("DELETE FROM fact_events WHERE rowid IN (SELECT rowid FROM fact_events LIMIT 3)")
    one = fl("--db", db, "replay", "--check", "--json")
    two = fl("--db", db, "replay", "--check", "--jobs", "2", "--json")
    assert one.returncode == two.returncode == 1
    assert json.loads(one.stdout) == json.loads(two.stdout)
    assert [line.split(":")[0] for line in json.loads(two.stdout)["differences"]] == ["fact_events"]
    assert one.stderr == two.stderr and one.stderr.startswith("Error: projections differ")


def test_a_bad_jobs_value_is_refused_before_anything_opens(tmp_path):
    db = tmp_path / "j.db"
    assert fl("demo", "--out", str(db)).returncode == 0
    stamp = (db.stat().st_mtime_ns, db.stat().st_size)
    for jobs in ("0", "-1", "65", "two", "1.5", "", "\uff12"):     # the last: a full-width digit two
        for command in (["replay", f"--jobs={jobs}"], ["replay", "--check", f"--jobs={jobs}"]):
            done = fl("--db", str(db), *command)
            assert done.returncode == 1 and done.stderr.startswith("Error: --jobs must be"), (jobs, done.stderr)
            assert "Traceback" not in done.stderr
    assert (db.stat().st_mtime_ns, db.stat().st_size) == stamp
    assert fl("--db", str(tmp_path / "none.db"), "replay", "--jobs=0").stderr.startswith("Error: --jobs")
    assert not (tmp_path / "none.db").exists()


def _busy_ledger(path: Path) -> None:
    """Enough partitions and events that workers are still starting when the test strikes."""
    clock = MovableClock()
    with Ledger(path, clock=clock, create=True) as ledger:
        for batch in range(4):
            clock.tick(60)
            ledger.observe_many([cand(user=f"u{n}", value=v, session=f"s{batch}", event=f"e{batch}-{n}-{v}")
                                 for n in range(100) for v in ("vegan", "vegetarian")])


def _put_body(db: Path, text: str, seq: int = 500) -> str:
    """Rewrite one event's body behind the ledger's back (a worker folding it then raises);
    returns the body it replaced."""
    forger = raw_forger(db)
    try:
        old = forger.execute("SELECT body FROM events WHERE seq = ?", (seq,)).fetchone()[0]
        forger.execute("UPDATE events SET body = ? WHERE seq = ?", (text, seq))
        return old
    finally:
        forger.close()


def _workers_of(pid: int) -> list[int]:
    """The pool's worker processes (spawned children running `spawn_main`, not its resource tracker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == pid and b"spawn_main" in cmdline:
            found.append(int(entry.name))
    return found


def _replay_killing_a_worker(db: Path) -> tuple[int | None, subprocess.CompletedProcess]:
    """Run `replay --jobs 2` and SIGKILL the first worker process seen; (its pid, the outcome)."""
    proc = subprocess.Popen([FACTLEDGER, "--db", str(db), "replay", "--jobs", "2"], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    killed = None
    while killed is None and proc.poll() is None and time.monotonic() < deadline:
        workers = _workers_of(proc.pid)
        if workers:
            os.kill(workers[0], signal.SIGKILL)
            killed = workers[0]
        time.sleep(0.002)
    out, err = proc.communicate(timeout=120)
    return killed, subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_a_killed_worker_fails_the_replay_and_leaves_the_projections(tmp_path):
    db = tmp_path / "k.db"
    _busy_ledger(db)
    with Ledger(db, read_only=True) as ledger:
        before = projection_rows(ledger)
    # On a loaded machine the kill can land after the worker sent its last rows; then the replay
    # rightly succeeds (with the same tables) and the kill is tried again, a few times at most.
    for _attempt in range(5):
        killed, done = _replay_killing_a_worker(db)
        if done.returncode != 0:
            break
    assert killed is not None, f"the replay ended before a worker was seen: {done.stderr}"
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr.strip().splitlines()[-1].startswith("Error: a replay worker process died"), done.stderr
    assert "Traceback" not in done.stderr
    with Ledger(db, read_only=True) as ledger:
        assert projection_rows(ledger) == before
        assert ledger.replay_differences() == []


def test_a_worker_that_raises_fails_the_replay_and_leaves_the_projections(tmp_path):
    db = tmp_path / "r.db"
    _busy_ledger(db)
    _put_body(db, "{not json")
    with Ledger(db) as ledger:
        before = projection_rows(ledger)
    done = fl("--db", str(db), "replay", "--jobs", "2")
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("Error: a replay worker failed: "), done.stderr
    assert "Traceback" not in done.stderr
    with Ledger(db, read_only=True) as ledger:
        assert projection_rows(ledger) == before


def test_a_ledger_in_memory_is_refused_more_than_one_job():
    with Ledger(":memory:", create=True) as ledger:
        ledger.observe(cand())
        with pytest.raises(LedgerError, match="in memory"):
            ledger.replay(jobs=2)
        assert ledger.replay() == 1


def test_the_parents_connection_holds_nothing_of_the_images_after_a_replay_or_a_failure(tmp_path):
    """The shares' images are attached to the ledger's own connection in memory while they are
    copied (`ledger/store/sqlite/images.py`): afterwards nothing stays attached, after a failed
    replay too (the same ledger object replays again), and no file was made beside the ledger."""
    db = tmp_path / "i.db"
    _busy_ledger(db)
    files = {p.name for p in tmp_path.iterdir()}
    patch = one_share_per_partition()
    try:
        with Ledger(db) as ledger:
            conn = ledger._conn
            assert ledger.replay(jobs=2) == ledger.event_count()
            assert [row[1] for row in conn.execute("PRAGMA database_list")] == ["main"]
            body = _put_body(db, "{not json")
            with pytest.raises(LedgerError, match="a replay worker failed"):
                ledger.replay(jobs=2)
            assert [row[1] for row in conn.execute("PRAGMA database_list")] == ["main"]
            _put_body(db, body)
            assert ledger.replay(jobs=2) == ledger.event_count()
            assert ledger.replay_differences() == []
            assert [row[1] for row in conn.execute("PRAGMA database_list")] == ["main"]
    finally:
        patch.undo()
    assert {p.name for p in tmp_path.iterdir()} <= files | {"i.db-wal", "i.db-shm"}


def test_shares_are_cut_by_size_up_to_a_bound(tmp_path, monkeypatch):
    """A share is about 1/(8 x jobs) of the log, but never above MAX_SHARE events unless one
    partition alone holds more: what the parent holds in images stays bounded as the ledger grows.
    Over the last `jobs` shares' worth, shares are TAIL_SPLIT times smaller (a short serial end)."""
    db = tmp_path / "s.db"
    _busy_ledger(db)            # 100 partitions
    with Ledger(db) as ledger:
        conn, upto = ledger._conn, ledger.event_count()
        sizes = [n for *_, n in partition_sizes(conn, upto)]
        monkeypatch.setattr(parallel, "MIN_SHARE", 1)
        for bound in (10_000, 2 * max(sizes), min(sizes) - 1):
            monkeypatch.setattr(parallel, "MAX_SHARE", bound)
            shares = parallel.plan(conn, upto, 2)
            assert sum(n for *_, n in shares) == upto
            # in (app, user) order, each share's first partition after the one before's last
            assert all(a[1] < b[0] for a, b in zip(shares, shares[1:]))
            if bound == 10_000:                              # about 1/(8 x 2) of the log each
                target, planned = -(-upto // 16), 0
                for i, (*_, n) in enumerate(shares):
                    if upto - planned > 2 * target:
                        assert n >= target
                    elif i < len(shares) - 1:                # the tail, but for what is left last
                        assert target // parallel.TAIL_SPLIT <= n < target
                    planned += n
                # the tail starts with between one and two shares' worth of events left
                assert sum(n < target for *_, n in shares) >= parallel.TAIL_SPLIT - 1
            elif bound < min(sizes):
                assert len(shares) == len(sizes)             # a partition above the bound: alone
            else:
                assert all(n <= bound for *_, n in shares) and len(shares) > 16


def _vacuums(ledger: Ledger) -> dict[str, int]:
    conn = ledger._conn
    return dict(conn.raw.execute("SELECT relname, vacuum_count FROM pg_stat_user_tables WHERE schemaname = %s",
                                 (conn.schema,)).fetchall())


def _replay_and_count_vacuums(ledger: Ledger, jobs: int) -> dict[str, int]:
    """Replay at `jobs` and say how many times each rewritten table was vacuumed meanwhile."""
    rewritten = ledger._work.projector.all_tables
    before = _vacuums(ledger)
    ledger.replay(jobs=jobs)
    deadline = time.monotonic() + 10
    while True:                          # a VACUUM's count is reported as it ends; read until seen
        after = _vacuums(ledger)
        counts = {t: after.get(t, 0) - before.get(t, 0) for t in rewritten}
        if all(counts.values()) or time.monotonic() > deadline:
            return counts
        time.sleep(0.05)


def _pg_ledger_with_facts(postgres) -> Ledger:
    ledger = Ledger(postgres.location(f"jobs_vacuum_{next(_schemas)}"), create=True)
    for i in range(40):
        ledger.observe(cand(user=f"u{i % 6}", value=f"v{i % 4}", session=f"s{i}", event=f"e{i}"))
    return ledger


def test_a_two_job_replay_on_postgres_vacuums_what_it_rewrote_in_two_sessions(postgres, monkeypatch):
    """The VACUUM after the commit is serial time at any number of jobs: at two, two sessions
    share it, every rewritten table vacuumed once, and the extra session is closed after."""
    from factledger.ledger.store.postgres import vacuum

    opened, waits = [], []
    connect = vacuum.connect

    def recorded(*args, **kwargs):
        opened.append(connect(*args, **kwargs))
        execute = opened[-1].raw.execute

        def spied(sql, args=None):                   # the session's lock wait, as VACUUM has it
            done = execute(sql, args)
            if sql.startswith("VACUUM"):
                waits.append(execute("SHOW lock_timeout").fetchone()[0])
            return done

        opened[-1].raw.execute = spied
        return opened[-1]

    monkeypatch.setattr(vacuum, "connect", recorded)
    with _pg_ledger_with_facts(postgres) as ledger:
        rewritten = sorted(ledger._work.projector.all_tables)
        lots = vacuum._dealt(ledger._conn, rewritten, 2)
        assert len(lots) == 2 and sorted(sum(lots, [])) == rewritten
        ledger._conn.raw.execute("SET lock_timeout = '17s'")       # as --busy-timeout 17 sets it
        assert set(_replay_and_count_vacuums(ledger, 2).values()) == {1}
        assert len(opened) == 1 and opened[0].raw.closed
        assert waits == ["17s"]
        assert ledger.replay_differences() == []


def test_with_no_session_to_spare_the_replays_own_session_vacuums_it_all(postgres, monkeypatch):
    """A server at max_connections: the replay's own session VACUUMs the other lot too."""
    from factledger.ledger.store.postgres import vacuum

    def refused(*args, **kwargs):
        raise LedgerError("cannot open ledger: too many clients already")

    monkeypatch.setattr(vacuum, "connect", refused)
    with _pg_ledger_with_facts(postgres) as ledger:
        assert set(_replay_and_count_vacuums(ledger, 2).values()) == {1}
        assert ledger.replay_differences() == []
