"""Concurrent recalls share their serve records' commits (`mcp_server/tools.py: GroupCommit`):
every recall's record is in the log, once, before its answer returns; records that arrive while
one commits are written together; a record that fails fails only its own caller."""

from __future__ import annotations

import threading
import time

import pytest

from factledger.ledger import Ledger, make_candidate
from factledger.ledger.errors import LedgerError
from factledger.mcp_server.scope import Scope
from factledger.mcp_server.tools import GroupCommit, MemoryTools

USERS = 8


def test_sixteen_threads_of_recalls_each_find_their_serve_in_the_log(tmp_path):
    db = tmp_path / "ledger.db"
    tools = MemoryTools(lambda read_only: Ledger(db, create=not read_only, read_only=read_only))
    tools.writer.observe_many([make_candidate(
        app="app", user=f"u{u}", predicate="home_city", value="Lisbon", quote="I live in Lisbon", session="s",
        evidence_event=f"e{u}", said_at="2025-12-01T00:00:00Z") for u in range(USERS)])
    scope = Scope.build("app", ["*"], "personal", "agent", "bench")
    recorded: list[tuple[str, int]] = []
    seen = threading.Lock()
    written = []
    batch = tools._serves._write

    def counting(items):
        written.append(len(items))
        return batch(items)

    tools._serves._write = counting

    def client(u: int) -> None:
        for _ in range(5):
            answer = tools.recall(scope, "where do I live", user=f"u{u % USERS}")
            assert "Lisbon" in answer["text"]
            # the record committed before the answer came back: a fresh open of the file sees it
            with Ledger(db, read_only=True) as reader:
                mine = reader.served("app", f"u{u % USERS}", by="bench")
            with seen:
                recorded.append((f"u{u % USERS}", len(mine)))

    threads = [threading.Thread(target=client, args=(u,)) for u in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tools.close()
    assert len(recorded) == 80
    assert sum(written) == 80                       # each record written once
    with Ledger(db, read_only=True) as ledger:
        per_user = {f"u{u}": ledger.served("app", f"u{u}", by="bench") for u in range(USERS)}
        assert ledger.verify()["ok"]
    assert sum(len(rows) for rows in per_user.values()) == 80
    assert len({row["seq"] for rows in per_user.values() for row in rows}) == 80


def test_records_that_arrive_during_a_commit_are_written_together():
    lock = threading.Lock()
    calls: list[list[int]] = []
    first = threading.Event()

    def write(items):
        calls.append(list(items))
        if len(calls) == 1:
            first.set()
            time.sleep(0.3)                         # a slow commit: the others queue meanwhile
        return [item * 10 for item in items]

    group = GroupCommit(lock, write)
    answers: dict[int, int] = {}

    def caller(n: int) -> None:
        answers[n] = group.submit(n)

    leader = threading.Thread(target=caller, args=(0,))
    leader.start()
    first.wait(5)
    others = [threading.Thread(target=caller, args=(n,)) for n in range(1, 9)]
    for t in others:
        t.start()
    for t in [leader, *others]:
        t.join(10)
    assert answers == {n: n * 10 for n in range(9)}
    assert calls[0] == [0] and sorted(calls[1]) == list(range(1, 9)) and len(calls) == 2


def test_a_record_that_fails_fails_only_its_own_caller():
    lock = threading.Lock()
    first = threading.Event()
    release = threading.Event()

    def write(items):
        if items == ["slow"]:
            first.set()
            release.wait(5)
        if "bad" in items:
            raise LedgerError("the caller a serve is recorded for is not a valid id")
        return [f"ok {item}" for item in items]

    group = GroupCommit(lock, write)
    answers: dict[str, object] = {}

    def caller(item: str) -> None:
        try:
            answers[item] = group.submit(item)
        except LedgerError as exc:
            answers[item] = exc

    leader = threading.Thread(target=caller, args=("slow",))
    leader.start()
    first.wait(5)
    others = [threading.Thread(target=caller, args=(item,)) for item in ("a", "bad", "b")]
    for t in others:
        t.start()
    time.sleep(0.2)                                 # all three queued behind the slow commit
    release.set()
    for t in [leader, *others]:
        t.join(10)
    assert answers["slow"] == "ok slow" and answers["a"] == "ok a" and answers["b"] == "ok b"
    assert isinstance(answers["bad"], LedgerError)
    with pytest.raises(LedgerError):
        group.submit("bad")
    assert group.submit("c") == "ok c"
