"""`factledger mcp --http --workers 2`: two server processes on one port.  Each worker is tested
alone by stopping the other (SIGSTOP: a stopped worker accepts no connection, so every request
goes to the one left): each refuses a request without a valid token and records its serves in the
log; both together serve sixteen clients; a forget planned in one is confirmed in the other; a
worker killed in a burst of writes holds no lock, is started again, and nothing acknowledged is lost."""

from __future__ import annotations

import json
import os
import signal
import time
from contextlib import contextmanager

import anyio
import pytest

pytest.importorskip("mcp")

import httpx2  # noqa: E402

from factledger.ledger.service import Ledger  # noqa: E402
from tests.mcp.helpers import cli, http_server, http_session, new_ledger, new_token, open_facts, said, sixteen_at_once  # noqa: E402

HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
PLAIN = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
         "mcp-protocol-version": "2025-06-18"}


def workers_of(server, db, count: int = 2, timeout: float = 30) -> list[int]:
    """The pids of the server's workers: its children that hold the ledger open (not the manager)."""
    deadline = time.monotonic() + timeout
    while True:
        found = []
        children = open(f"/proc/{server.pid}/task/{server.pid}/children").read().split()
        for pid in map(int, children):
            try:
                links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
            except (FileNotFoundError, ProcessLookupError):
                continue
            if str(db) in links:
                found.append(pid)
        if len(found) == count:
            return sorted(found)
        assert time.monotonic() < deadline, f"expected {count} workers, found {found}"
        time.sleep(0.2)


@contextmanager
def only(worker: int, workers: list[int]):
    """Every other worker stopped (SIGSTOP) for the block: new connections go to `worker`."""
    others = [w for w in workers if w != worker]
    for pid in others:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in others:
            os.kill(pid, signal.SIGCONT)


def call(url: str, token: str | None, name: str, arguments: dict, id_: int = 2) -> httpx2.Response:
    headers = {**PLAIN, **({"Authorization": "Bearer " + token} if token else {})}
    body = {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    return httpx2.post(url, json=body, headers=headers, timeout=60)


def test_each_worker_refuses_a_bad_token_and_records_its_serves(tmp_path):
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    token = new_token(db, tokens, user="u1")
    started = []
    with http_server(db, tokens, "--workers", "2", started=started) as url:
        workers = workers_of(started[0], db)
        assert call(url, token, "remember", said("Lisbon")).status_code == 200
        for n, worker in enumerate(workers):
            with only(worker, workers):
                none = httpx2.post(url, json=HELLO, headers=PLAIN)
                wrong = httpx2.post(url, json=HELLO, headers={**PLAIN, "Authorization": "Bearer " + token[:-1] + "x"})
                served = call(url, token, "recall", {"query": f"where do I live {n}"})
            assert none.status_code == 401 and wrong.status_code == 401, worker
            assert served.status_code == 200, worker
            assert [f["value"] for f in served.json()["result"]["structuredContent"]["facts"]] == ["Lisbon"]
    with Ledger(db, read_only=True) as ledger:
        records = ledger.served("mealkit", "u1")
    assert len(records) == 2 and {r["surface"] for r in records} == {"mcp"}


def test_two_workers_serve_sixteen_clients_and_both_work(tmp_path):
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    token = new_token(db, tokens, users="*")
    users = [f"u{i}" for i in range(16)]

    def cpu(pid: int) -> int:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])        # utime + stime, in clock ticks

    started = []
    with http_server(db, tokens, "--workers", "2", started=started) as url:
        workers = workers_of(started[0], db)
        before = {w: cpu(w) for w in workers}
        answers = sixteen_at_once(url, token, users)
        used = {w: cpu(w) - before[w] for w in workers}
    assert len(answers) == 48 and not any(d.is_error or s.is_error for _, d, s in answers)
    assert all(ticks > 0 for ticks in used.values()), used          # both processes served calls
    for user in users:
        assert [f["value"] for f in open_facts(db, "mealkit", user)] == ["City2"]
    with Ledger(db, read_only=True) as ledger:
        assert sum(len(ledger.served("mealkit", user)) for user in users) == 48    # every recall's record
    assert json.loads(cli(db, "verify", "--json").stdout)["ok"] is True


def test_a_forget_planned_in_one_worker_is_confirmed_in_the_other(tmp_path):
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    reviewer = new_token(db, tokens, user="u1", role="reviewer")
    forget = {"predicate": "home_city", "reason": "user asked"}
    started = []
    with http_server(db, tokens, "--workers", "2", started=started) as url:
        first, second = workers_of(started[0], db)
        assert call(url, reviewer, "remember", said("Lisbon")).status_code == 200
        for worker in (first, second):                          # each has read it (and keeps what it read)
            with only(worker, [first, second]):
                assert "Lisbon" in call(url, reviewer, "recall", {"query": "where do I live"}).text
        with only(first, [first, second]):
            plan = call(url, reviewer, "forget", forget).json()["result"]["structuredContent"]
        with only(second, [first, second]):
            done = call(url, reviewer, "forget", {**forget, "confirm": plan["confirm"]}).json()["result"]
            again = call(url, reviewer, "forget", {**forget, "confirm": plan["confirm"]}).json()["result"]
        with only(first, [first, second]):
            after = call(url, reviewer, "recall", {"query": "where do I live"}).json()["result"]["structuredContent"]
    assert plan["committed"] is False and plan["confirm"]
    assert done["structuredContent"]["committed"] is True
    assert again["isError"] and "already used" in again["content"][0]["text"]
    assert after["facts"] == [] and open_facts(db, "mealkit", "u1") == []


def test_a_worker_killed_in_a_burst_of_writes_holds_no_lock_and_is_replaced(tmp_path):
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    token = new_token(db, tokens, users="*")
    acked: list[tuple[str, str]] = []

    async def writer(url, user, stop):
        try:
            async with http_session(url, token) as session:
                for n in range(1000):
                    if stop.is_set():
                        return
                    decided = await session.call_tool("remember", said(f"City{n}", user=user, session=f"s{n}"))
                    acked.append((user, decided.structured_content["fact_id"]))
        except Exception:          # noqa: BLE001 - the killed worker's connections break mid-call
            return

    async def burst(url, victim, workers):
        stop = anyio.Event()
        async with anyio.create_task_group() as group:
            with only(victim, workers):
                for i in range(8):
                    group.start_soon(writer, url, f"u{i}", stop)
                while len(acked) < 40:
                    await anyio.sleep(0.01)
                os.kill(victim, signal.SIGKILL)
            await anyio.sleep(0.5)
            stop.set()

    started = []
    with http_server(db, tokens, "--workers", "2", started=started) as url:
        workers = workers_of(started[0], db)
        victim, survivor = workers
        anyio.run(burst, url, victim, workers)
        with only(survivor, workers_of(started[0], db)):
            # a lock the victim left held would fail this write (SQLite's busy timeout) or hang it
            # (the flock: the call's own timeout): it lands, so both died with their holder
            wrote = call(url, token, "remember", said("Faro", user="u99"))
        assert wrote.status_code == 200 and not wrote.json()["result"].get("isError"), wrote.text
        replaced = workers_of(started[0], db)           # the supervisor started another
        assert victim not in replaced and survivor in replaced
        newcomer = next(w for w in replaced if w != survivor)
        with only(newcomer, replaced):
            refused = httpx2.post(url, json=HELLO, headers=PLAIN)
            served = call(url, token, "recall", {"query": "where do I live", "user": "u99"})
        assert refused.status_code == 401
        assert [f["value"] for f in served.json()["result"]["structuredContent"]["facts"]] == ["Faro"]
    with Ledger(db, read_only=True) as ledger:
        for user, fact_id in acked:
            assert ledger.why(fact_id)["fact"]["user"] == user
    assert json.loads(cli(db, "verify", "--json").stdout)["ok"] is True


HOLD = """
import sys, time
from factledger.mcp_server.tools import WriterLock
lock = WriterLock(sys.argv[1])
lock.__enter__()
print("held", flush=True)
time.sleep(600)
"""


def test_the_workers_writer_lock_excludes_another_process_and_dies_with_its_holder(tmp_path):
    import fcntl
    import subprocess
    import sys

    from factledger.mcp_server.tools import WriterLock

    path = tmp_path / "writer.lock"
    path.touch()
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with open(path, "r+") as probe:
            with pytest.raises(BlockingIOError):
                fcntl.flock(probe.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        with open(path, "r+") as probe:                 # free at once: taken without waiting
            fcntl.flock(probe.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(probe.fileno(), fcntl.LOCK_UN)
        lock = WriterLock(str(path))
        with lock:
            pass
        lock.close()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        holder.stdout.close()


def test_a_port_in_use_or_a_missing_ledger_is_an_error_line_and_no_worker(tmp_path):
    import socket

    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    new_token(db, tokens, user="u1")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        busy = [cli(db, "mcp", "--http", "--workers", n, "--port", port, "--tokens", str(tokens), check=False)
                for n in ("1", "2")]
    missing = cli(tmp_path / "nowhere.db", "mcp", "--http", "--workers", "2", "--port", "0", "--tokens",
                  str(tokens), check=False)
    for done in (*busy, missing):
        assert done.returncode == 1, done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
        assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
        assert "serving MCP" not in done.stderr, done.stderr       # announced only once the port is bound
    assert all("cannot listen" in done.stderr for done in busy)
