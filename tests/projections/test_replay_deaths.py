"""Deaths during `replay --jobs N` leave nothing behind (issue 47 item 5).

A worker killed at any moment (starting, folding, halfway through sending its image, idle) fails
the replay with `Error: a replay worker process died ...`, exit 1, the transaction rolled back and
the write lock free; a parent killed at any moment takes its workers (and the multiprocessing
resource tracker) with it. The kills are real SIGKILLs of real processes at random moments; one
test strikes exactly in the middle of an image's message, which a random moment hits rarely on a
small ledger. "Hangs" are bounded generously (HANG seconds) only so that a regression fails
instead of stalling the suite; nothing here asserts how fast anything is.
"""

from __future__ import annotations

import fcntl
import os
import random
import signal
import socket
import sqlite3
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path

import pytest

from factledger.ledger import Ledger, LedgerError
from factledger.projections import parallel
from tests.conftest import MovableClock, cand
from tests.projections.test_parallel_replay import ENV, FACTLEDGER, projection_rows

HANG = 30          # seconds: a replay or a process still there after this is a hang or an orphan


def _ledger(path: Path, batches: int = 10, users: int = 200) -> None:
    """Enough events for several shares at two jobs (so one worker can be blocked sending an
    image while the parent copies the one before)."""
    clock = MovableClock()
    with Ledger(path, clock=clock, create=True) as ledger:
        for batch in range(batches):
            clock.tick(60)
            ledger.observe_many([cand(user=f"u{n}", value=v, session=f"s{batch}", event=f"e{batch}-{n}-{v}")
                                 for n in range(users) for v in ("vegan", "vegetarian")])


def _children(pid: int) -> dict[int, bytes]:
    """The live children of `pid`: their pids and command lines."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        state, parent = stat.rsplit(")", 1)[1].split()[:2]
        if int(parent) == pid and state != "Z":
            found[int(entry.name)] = cmdline
    return found


def _alive(pid: int) -> bool:
    """Running (a zombie holds no memory, no file and no pipe: it is not left behind)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _left_behind(children: dict[int, bytes]) -> list[bytes]:
    """The command lines of the children still running HANG seconds after they could have
    gone (the resource tracker leaves a moment after the last holder of its pipe); those are
    then killed, so one failure does not pile up processes."""
    deadline = time.monotonic() + HANG
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.01)
    left = [pid for pid in children if _alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return [children[pid] for pid in left]


def _workers(children: dict[int, bytes]) -> list[int]:
    return [pid for pid, cmdline in children.items() if b"spawn_main" in cmdline]


def _lock_is_free(db: Path) -> bool:
    conn = sqlite3.connect(db, isolation_level=None, timeout=0)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


class Trial:
    """One `replay --jobs 2` subprocess and what the test saw of it."""

    def __init__(self, db: Path):
        self.proc = subprocess.Popen([FACTLEDGER, "--db", str(db), "replay", "--jobs", "2"], env=ENV,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.seen: dict[int, bytes] = {}        # every child it had: workers and resource tracker

    def look(self) -> list[int]:
        now = _children(self.proc.pid)
        self.seen.update(now)
        return _workers(now)

    def finish(self) -> tuple[subprocess.CompletedProcess | None, float]:
        """Its outcome (None: a hang, then killed) and the seconds from now to its end. The
        pipes close only when every process holding them (an orphan would) has gone."""
        start = time.monotonic()
        try:
            out, err = self.proc.communicate(timeout=HANG)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            for pid in self.seen:
                if _alive(pid):
                    os.kill(pid, signal.SIGKILL)
            self.proc.communicate()
            return None, time.monotonic() - start
        return (subprocess.CompletedProcess(self.proc.args, self.proc.returncode, out, err),
                time.monotonic() - start)


def kill_a_worker(db: Path, rng: random.Random, window: float) -> dict:
    """SIGKILL one worker of a replay at a random moment up to `window` seconds after the first
    worker is seen; what happened."""
    trial = Trial(db)
    while trial.proc.poll() is None and not trial.look():
        time.sleep(0.001)
    time.sleep(rng.uniform(0, window))
    workers = trial.look()
    killed = None
    if workers and trial.proc.poll() is None:
        killed = rng.choice(workers)
        os.kill(killed, signal.SIGKILL)
    done, waited = trial.finish()
    return {"killed": killed, "done": done, "waited": waited, "orphans": _left_behind(trial.seen)}


def kill_the_parent(db: Path, rng: random.Random, window: float) -> dict:
    """SIGKILL the replaying process at a random moment up to `window` seconds after its first
    worker is seen; whether its children outlive it."""
    trial = Trial(db)
    while trial.proc.poll() is None and not trial.look():
        time.sleep(0.001)
    time.sleep(rng.uniform(0, window))
    trial.look()
    killed = trial.proc.poll() is None
    if killed:
        trial.proc.kill()
    start = time.monotonic()
    done, _waited = trial.finish()
    orphans = _left_behind(trial.seen)
    return {"killed": killed, "done": done, "waited": time.monotonic() - start, "orphans": orphans}


def _fold_window(db: Path) -> float:
    """Seconds from the first worker seen to the end of an undisturbed replay: the span a kill
    is aimed into."""
    trial = Trial(db)
    while trial.proc.poll() is None and not trial.look():
        time.sleep(0.001)
    start = time.monotonic()
    done, _ = trial.finish()
    assert done is not None and done.returncode == 0, done
    return time.monotonic() - start


def run_kills(db: Path, worker_kills: int, parent_kills: int, seed: int) -> dict:
    """Kill workers, then parents, at random moments; every outcome checked as it comes, and
    the figures (for the report of a long run)."""
    _ledger(db)
    with Ledger(db, read_only=True) as ledger:
        before = projection_rows(ledger)
    window = _fold_window(db)
    rng = random.Random(seed)
    figures = {"worker_kills": 0, "failed": 0, "succeeded": 0, "hangs": 0, "orphans": 0,
               "max_seconds_to_end": 0.0, "parent_kills": 0, "max_seconds_children_gone": 0.0}
    attempts = 0
    while figures["worker_kills"] < worker_kills and attempts < 3 * worker_kills:
        attempts += 1
        seen = kill_a_worker(db, rng, window)
        done = seen["done"]
        figures["hangs"] += done is None
        figures["orphans"] += len(seen["orphans"])
        assert done is not None, "the replay hung after a worker was killed"
        assert not seen["orphans"], seen
        if seen["killed"] is None:
            continue
        figures["worker_kills"] += 1
        figures["max_seconds_to_end"] = max(figures["max_seconds_to_end"], seen["waited"])
        assert "Traceback" not in done.stderr, done.stderr
        if done.returncode == 0:          # the kill landed after the worker's last answer
            figures["succeeded"] += 1
        else:
            figures["failed"] += 1
            assert done.returncode == 1, done.stderr
            assert done.stderr.strip().splitlines()[-1].startswith("Error: a replay worker process died"), done.stderr
        assert _lock_is_free(db)
    attempts = 0
    while figures["parent_kills"] < parent_kills and attempts < 3 * parent_kills:
        attempts += 1
        seen = kill_the_parent(db, rng, window)
        figures["hangs"] += seen["done"] is None
        figures["orphans"] += len(seen["orphans"])
        assert not seen["orphans"], seen
        if seen["killed"]:
            figures["parent_kills"] += 1
            figures["max_seconds_children_gone"] = max(figures["max_seconds_children_gone"], seen["waited"])
        assert _lock_is_free(db)
    with Ledger(db) as ledger:                # read-write: a killed writer's journal is recovered
        assert projection_rows(ledger) == before
        assert ledger.replay_differences() == []
        assert ledger.verify()["ok"]
    return figures


def test_a_few_random_kills_of_workers_and_parents_leave_nothing_behind(tmp_path):
    figures = run_kills(tmp_path / "k.db", worker_kills=5, parent_kills=2, seed=47)
    assert figures["hangs"] == figures["orphans"] == 0, figures
    assert figures["worker_kills"] == 5 and figures["parent_kills"] == 2, figures


@pytest.mark.slow
def test_a_hundred_worker_kills_and_twenty_parent_kills_leave_nothing_behind(tmp_path):
    figures = run_kills(tmp_path / "k.db", worker_kills=100, parent_kills=20, seed=4747)
    print("replay deaths:", figures)
    assert figures["hangs"] == figures["orphans"] == 0, figures
    assert figures["worker_kills"] == 100 and figures["parent_kills"] == 20, figures


def _queued(conn) -> bytes:
    """What the worker has written into its pipe and the parent has not read yet (peeked)."""
    sock = socket.socket(fileno=os.dup(conn.fileno()))
    try:
        size = struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0" * 4))[0]
        return sock.recv(size, socket.MSG_PEEK) if size else b""
    finally:
        sock.close()


def _halfway(queued: bytes) -> bool:
    """The queue holds the answer's header and part, not all, of the image's message."""
    if len(queued) < 4:
        return False
    head = struct.unpack("!i", queued[:4])[0]
    rest = queued[4 + head:]
    if len(rest) < 4:
        return False
    image = struct.unpack("!i", rest[:4])[0]
    return 0 < len(rest) - 4 < image


def test_a_worker_killed_halfway_through_sending_its_image_fails_the_replay_at_once(tmp_path):
    """The case that hung the process pool forever: the worker is blocked in the middle of its
    image's message (the pipe is full, the parent is not reading) when it is killed."""
    db = tmp_path / "h.db"
    _ledger(db, batches=3)
    with Ledger(db, read_only=True) as ledger:
        upto = ledger.event_count()
        projector = type(ledger.projector)
        shares = parallel.plan(ledger._conn, upto, 2)
    workers = parallel.Workers(str(db), 2, upto, projector, shares)
    pids = [worker.process.pid for worker in workers.workers]
    try:
        sender = None
        deadline = time.monotonic() + 120
        while sender is None and time.monotonic() < deadline:
            for worker in workers.workers:
                queued = _queued(worker.conn)
                if _halfway(queued):
                    time.sleep(0.05)           # still halfway a moment later: blocked, not racing
                    if _halfway(_queued(worker.conn)) and len(_queued(worker.conn)) == len(queued):
                        sender = worker
            time.sleep(0.01)
        assert sender is not None, "no worker was ever seen halfway through an image"
        os.kill(sender.process.pid, signal.SIGKILL)
        outcome = []

        def drain():
            try:
                list(workers.folded())
                workers.log_wide_image()
                outcome.append("finished")
            except LedgerError as exc:
                outcome.append(str(exc))

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        reader.join(HANG)
        assert not reader.is_alive(), "the parent hung on the dead worker's half message"
        assert outcome[0].startswith("a replay worker process died"), outcome
    finally:
        workers.close()
    assert not any(_alive(pid) for pid in pids)
