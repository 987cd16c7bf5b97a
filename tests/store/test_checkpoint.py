"""WAL checkpoints run on the ledger's own thread (ledger/store/sqlite/wal.py), never inside a commit."""

from __future__ import annotations

import time

import pytest

from factledger.ledger import Ledger
from tests.conftest import MovableClock, cand


def _wait(predicate, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def test_commits_leave_checkpointing_to_the_thread(tmp_path, clock):
    path = tmp_path / "ledger.db"
    with Ledger(path, clock=clock, create=True) as ledger:
        assert ledger._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        before = path.stat().st_size
        for i in range(60):
            ledger.observe(cand(user=f"u{i}", session=f"s{i}", event=f"e{i}"))
        # Autocheckpoint is off on the writer, so the main file can only grow if the thread
        # copied the WAL into it while the ledger stayed open.
        assert _wait(lambda: path.stat().st_size > before)
        thread = ledger.checkpointer._thread
        assert thread is not None and thread.name == "factledger-checkpoint"
    assert not thread.is_alive()          # close() stopped it and waited
    with Ledger(path, clock=clock) as again:
        assert again.verify()["ok"]
        assert len(again.facts("app", "u59")) == 1


def _wal_pages_after_steady_writes(path) -> float:
    with Ledger(path, clock=MovableClock(), create=True) as ledger:
        for i in range(300):
            ledger.observe(cand(user=f"u{i}", session=f"s{i}", event=f"e{i}",
                                quote=f"I said vegetarian {'x' * 1500}"))
        size = (path.parent / (path.name + "-wal")).stat().st_size
        return size / ledger._conn.execute("PRAGMA page_size").fetchone()[0]


def test_the_wal_starts_over_under_a_steady_writer(tmp_path, monkeypatch):
    """A background checkpoint alone never lets a steady writer start the WAL over (it grew to
    hundreds of MB in a benchmark): past RESTART_FRAMES the writer finishes one itself before
    it begins."""
    monkeypatch.setattr("factledger.ledger.store.sqlite.wal.RESTART_FRAMES", 40)
    monkeypatch.setattr("factledger.ledger.store.sqlite.wal.MIN_INTERVAL", 0.001)
    bounded = _wal_pages_after_steady_writes(tmp_path / "bounded.db")
    monkeypatch.setattr("factledger.ledger.store.sqlite.wal.WalCheckpointer.before_begin", lambda self, conn: None)
    unbounded = _wal_pages_after_steady_writes(tmp_path / "unbounded.db")   # every frame kept
    assert bounded < unbounded / 4, (bounded, unbounded)


def test_the_thread_ends_when_the_ledger_goes_quiet(tmp_path, clock, monkeypatch):
    monkeypatch.setattr("factledger.ledger.store.sqlite.wal.IDLE_SECONDS", 0.1)
    with Ledger(tmp_path / "ledger.db", clock=clock, create=True) as ledger:
        ledger.observe(cand())
        thread = ledger.checkpointer._thread
        assert _wait(lambda: not thread.is_alive())
        ledger.observe(cand(value="vegan", session="s2", event="e2"))   # starts a new one
        assert ledger.checkpointer._thread is not thread
        assert ledger.facts("app", "u1")[0]["value"] == "vegan"


def test_a_memory_ledger_has_no_checkpointer(clock):
    with Ledger(":memory:", clock=clock) as ledger:
        ledger.observe(cand())
        assert ledger.checkpointer is None


def test_a_failing_after_commit_hook_does_not_fail_a_durable_commit(tmp_path, clock, monkeypatch):
    def broken(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr("factledger.ledger.store.sqlite.wal.WalCheckpointer.after_commit", broken)
    with Ledger(tmp_path / "ledger.db", clock=clock, create=True) as ledger, \
            pytest.warns(RuntimeWarning, match="after-commit step failed"):
        outcome = ledger.observe(cand())
        assert outcome.decision == "insert"
        assert ledger.facts("app", "u1")[0]["value"] == "vegetarian"


def test_the_thread_opens_the_writers_file_by_absolute_path(tmp_path, clock, monkeypatch):
    """A relative path names another file after a chdir; the thread must never create one."""
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    with Ledger("rel.db", clock=clock, create=True) as ledger:
        monkeypatch.chdir(tmp_path / "elsewhere")
        for i in range(20):
            ledger.observe(cand(user=f"u{i}", session=f"s{i}", event=f"e{i}"))
        thread = ledger.checkpointer._thread
        assert thread is not None
        assert _wait(lambda: ledger.checkpointer.wal_frames > 0)
    assert not (tmp_path / "elsewhere" / "rel.db").exists()
    assert (tmp_path / "rel.db").exists()


def test_the_wal_file_is_cut_back_when_it_starts_over(tmp_path, clock, monkeypatch):
    """Starting the WAL over reuses the file; journal_size_limit cuts it back to RESTART_FRAMES."""
    monkeypatch.setattr("factledger.ledger.store.sqlite.wal.RESTART_FRAMES", 40)
    wal = tmp_path / "ledger.db-wal"
    with Ledger(tmp_path / "ledger.db", clock=clock, create=True) as ledger:
        page = ledger._conn.execute("PRAGMA page_size").fetchone()[0]
        assert ledger._conn.execute("PRAGMA journal_size_limit").fetchone()[0] == 40 * page
        with ledger.transaction():                 # one large transaction: a long WAL
            for i in range(150):
                ledger.append_candidate(cand(user=f"u{i}", session=f"s{i}", event=f"e{i}",
                                             quote=f"I said vegetarian {'x' * 1500}"))
        grown = wal.stat().st_size
        assert _wait(lambda: ledger.checkpointer.wal_frames > 40)    # the thread copied it
        ledger.observe(cand(user="last", session="s-last", event="e-last"))  # starts it over
        assert grown > 200 * page
        assert wal.stat().st_size < 100 * page, (grown, wal.stat().st_size)


def test_a_thread_that_cannot_open_the_file_gives_autocheckpoint_back(tmp_path, clock):
    with Ledger(tmp_path / "ledger.db", clock=clock, create=True) as ledger:
        ledger.checkpointer._uri = "file:/nonexistent/dir/x.db?mode=rw"
        ledger.observe(cand())
        assert _wait(lambda: ledger.checkpointer._thread is None)
        ledger.observe(cand(value="vegan", session="s2", event="e2"))   # the writer's next BEGIN
        assert ledger._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
        assert ledger.facts("app", "u1")[0]["value"] == "vegan"
