"""The event store's contract, for every backend (`ledger/store/backend.py: EventLog`).

Collected through `tests/store/test_store_contract.py`, which lists the backends and opens a fresh,
empty log for each test as the fixture `log` (and `clock`, the injected clock).  These tests use
only the protocol (and, for the append-only guard, one plain DELETE through the connection), so
a second backend runs them unchanged.
"""

from __future__ import annotations

import pytest

from factledger.ledger.domain.events import SessionIngested
from factledger.ledger.errors import LedgerError
from factledger.ledger.store import chain


def body(n: int = 0, app: str = "app", user: str = "u1") -> SessionIngested:
    return SessionIngested(app=app, user=user, session=f"s{n}", watermark=f"e{n}", events_read=1,
                           extractor="patterns")


def test_an_empty_log_has_the_genesis_head(log):
    assert log.head() == (0, chain.GENESIS)
    assert list(log.events()) == []
    assert log.last_seq == 0


def test_appending_outside_a_transaction_is_refused(log):
    with pytest.raises(LedgerError):
        log.append(body())
    assert log.head() == (0, chain.GENESIS)


def test_a_transaction_appends_in_seq_order_with_one_recorded_at(log, clock):
    with log.transaction():
        seqs = [log.append(body(n)).seq for n in range(3)]
        assert log.last_seq == 3
    assert seqs == [1, 2, 3]
    events = list(log.events())
    assert [e.seq for e in events] == [1, 2, 3]
    assert len({e.recorded_at for e in events}) == 1
    assert [e.body["session"] for e in events] == ["s0", "s1", "s2"]
    assert log.head()[0] == 3 and log.head()[1] != chain.GENESIS


def test_a_failed_transaction_leaves_nothing(log):
    with log.transaction():
        log.append(body(0))
    head = log.head()
    with pytest.raises(RuntimeError):
        with log.transaction():
            log.append(body(1))
            raise RuntimeError("boom")
    assert log.head() == head
    assert [e.seq for e in log.events()] == [1]


def test_transactions_do_not_nest(log):
    with log.transaction():
        with pytest.raises(LedgerError):
            with log.transaction():
                pass


def test_recorded_at_never_goes_backwards(log, clock):
    clock.set("2026-07-03T00:00:00Z")
    with log.transaction():
        log.append(body(0))
    clock.set("2026-07-01T00:00:00Z")
    with log.transaction():
        log.append(body(1))
    first, second = log.events()
    assert second.recorded_at >= first.recorded_at


def test_events_stream_one_partition_after_a_seq(log):
    with log.transaction():
        for n, user in enumerate(["u1", "u2", "u1", "u1"]):
            log.append(body(n, user=user))
    assert [e.seq for e in log.events(app="app", user="u1")] == [1, 3, 4]
    assert [e.seq for e in log.events(app="app", user="u1", after=3)] == [4]
    assert [e.seq for e in log.events(after=2)] == [3, 4]


def test_the_hooks_run_in_their_places(log):
    seen = []
    log.before_begin(lambda: seen.append("begin"))
    log.on_append(lambda event: seen.append(("append", event.seq)))
    log.on_commit(lambda: seen.append("commit"))
    with log.transaction():
        log.append(body(0))
        assert seen == ["begin", ("append", 1)]
    assert seen == ["begin", ("append", 1), "commit"]
    with pytest.raises(RuntimeError), log.transaction():
        raise RuntimeError("boom")
    assert seen[-1] == "begin"                  # a failed transaction commits nothing


def test_a_snapshot_reads_the_committed_log(log):
    with log.transaction():
        log.append(body(0))
    with log.snapshot():
        assert [e.seq for e in log.events()] == [1]
        assert log.head()[0] == 1


def test_the_log_refuses_delete(log):
    with log.transaction():
        log.append(body(0))
    with pytest.raises(Exception, match="append-only"):
        log.conn.execute("DELETE FROM events")
    assert [e.seq for e in log.events()] == [1]
