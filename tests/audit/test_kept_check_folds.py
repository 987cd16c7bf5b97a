"""The write path's key checks keep their folds of the log across transactions (ledger/audit/checkfolds.py).

A kept fold never serves a stale answer: the row compared is always the one read now (a forgery
made after the fold was kept is caught at the next write), another connection's appends are
folded on, and a forget, by this ledger or another connection, drops them.
"""

from __future__ import annotations

from contextlib import contextmanager, suppress

import pytest

from factledger.ledger import Ledger
from factledger.ledger.errors import LedgerError, ProjectionMismatch
from tests.audit.forger import raw_forger
from tests.audit.test_decisions_trust_the_log import FORGERIES, forge
from tests.conftest import MovableClock, cand

PUNE = cand(predicate="home_city", value="Pune", quote="we live in Pune")
OTHER = cand(user="u2", value="vegan")


def _pune_id(ledger: Ledger) -> str:
    return next(f["fact_id"] for f in ledger.facts("app", "u1") if f["value"] == "Pune")


def _kept(ledger: Ledger) -> dict:
    return ledger._check_folds.folds


def _restate_pune(ledger: Ledger, n: int) -> list:
    """Pune restated in session s{n}, beside another user's fact, as one batch that reads the key."""
    return ledger.observe_many([cand(predicate="home_city", value="Pune", quote="we live in Pune",
                                     session=f"s{n}", event=f"e{n}"), OTHER])


def _keep_pune(ledger: Ledger) -> None:
    """Pune observed, then a batch that reads its key: its fold is kept."""
    ledger.observe(PUNE)
    _restate_pune(ledger, 2)


@contextmanager
def _two_connections(tmp_path):
    """Two ledgers on one file, one clock; Pune's fold kept by the first."""
    clock = MovableClock()
    path = tmp_path / "l.db"
    with Ledger(path, clock=clock, create=True) as first, Ledger(path, clock=clock) as second:
        _keep_pune(first)
        assert _pune_id(first) in _kept(first)
        yield first, second, clock


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_a_row_forged_after_the_fold_was_kept_is_caught(tmp_path, name):
    with Ledger(tmp_path / "l.db", clock=MovableClock(), create=True) as ledger:
        _keep_pune(ledger)
        pune = _pune_id(ledger)
        assert pune in _kept(ledger)
        forge(ledger, *FORGERIES[name])
        before = ledger.head()
        with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
            ledger.observe_many([cand(predicate="home_city", value="Lima", quote="we moved to Lima",
                                      said_at="2026-09-01T10:00:00Z", session="s3", event="e3"), OTHER])
        assert ledger.head() == before
        with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
            ledger.observe(cand(predicate="home_city", value="Lima", quote="we moved to Lima",
                                said_at="2026-09-01T10:00:00Z", session="s3", event="e3"))
        assert ledger.head() == before


def test_another_connection_s_appends_are_folded_on(tmp_path):
    with _two_connections(tmp_path) as (first, second, clock):
        pune = _pune_id(first)
        seqs = set(_kept(first)[pune].seqs)
        # the other connection restates Pune: its row in facts_current changes (one more session)
        clock.tick(60)
        second.observe(cand(predicate="home_city", value="Pune", quote="we live in Pune",
                            session="s3", event="e3"))
        clock.tick(60)
        # a stale fold would call the restated row forged; the kept one reads the new seq and folds it
        outcome = _restate_pune(first, 4)[0]
        assert outcome.decision == second.observe(cand(predicate="home_city", value="Pune",
                                                       quote="we live in Pune", session="s5",
                                                       event="e5")).decision
        assert _kept(first)[pune].seqs > seqs
        # and what it folded is what a fold from nothing gives
        first._check_folds.clear()
        _restate_pune(first, 6)


def test_a_forget_drops_the_kept_folds(tmp_path):
    clock = MovableClock()
    path = tmp_path / "l.db"
    with Ledger(path, clock=clock, create=True) as ledger:
        _keep_pune(ledger)
        assert _kept(ledger)
        ledger.forget("app", "u1", session="s1", reason="a test")
        assert not _kept(ledger)


def test_another_connection_s_forget_drops_the_kept_folds(tmp_path):
    with _two_connections(tmp_path) as (first, second, _clock):
        pune = _pune_id(first)
        second.forget("app", "u1", reason="a test")   # the whole user: Pune's bodies scrubbed
        first.observe_many([cand(user="u3", value="vegan"), OTHER])
        assert pune not in _kept(first)


def test_a_rolled_back_or_replaced_log_is_not_trusted(tmp_path):
    """The kept folds are checked against the chain hash of the last event they read: a log
    that no longer holds it (a rolled-back write's seq taken by another event, another file put
    in its place; here the hash rewritten) starts them afresh."""
    clock = MovableClock()
    path = tmp_path / "l.db"
    with Ledger(path, clock=clock, create=True) as ledger:
        _keep_pune(ledger)
        assert _kept(ledger)
        mark = ledger._check_folds.mark
        conn = raw_forger(path)
        conn.execute("UPDATE events SET hash = ? WHERE seq = ?", ("0" * 64, mark[0]))
        conn.close()
        with suppress(LedgerError):          # the chain is broken; whatever the write says, nothing kept is used
            _restate_pune(ledger, 3)
        assert ledger._check_folds.mark != mark


# --- the keys' checks kept (checkfolds.plan_keys): a later batch compares what moved ----------

HOME = ("app", "u1", "user", "home_city")


def _keys(ledger: Ledger) -> dict:
    return ledger._check_folds.keys


def _full_keys(monkeypatch) -> list:
    """The keys each batch checks in full (reads their intervals from `fact_history`)."""
    from factledger.ledger.audit import served

    seen: list = []
    real = served._intervals_of_keys

    def spy(conn, keys):
        seen.extend(keys)
        return real(conn, keys)

    monkeypatch.setattr(served, "_intervals_of_keys", spy)
    return seen


def test_a_key_s_check_is_kept_and_carried_on(tmp_path, monkeypatch):
    with Ledger(tmp_path / "l.db", clock=MovableClock(), create=True) as ledger:
        _keep_pune(ledger)
        pune = _pune_id(ledger)
        assert set(_keys(ledger)[HOME].open) == {pune}
        full = _full_keys(monkeypatch)
        _restate_pune(ledger, 3)
        assert HOME not in full                          # carried on from the kept check
        assert set(_keys(ledger)[HOME].open) == {pune}
        ledger._check_folds.clear()
        _restate_pune(ledger, 4)
        assert HOME in full                              # nothing kept: checked in full


def test_a_past_forged_after_the_key_was_kept_is_caught(tmp_path):
    from tests.audit.test_decisions_trust_the_log import KEY_FORGERIES

    for name in ("past value", "past deleted", "past every interval deleted", "past said later"):
        setup, statements, late = KEY_FORGERIES[name]
        with Ledger(tmp_path / f"{name}.db", clock=MovableClock(), create=True) as ledger:
            for candidate in setup:
                ledger.observe(candidate)
            ledger.observe_many([cand(predicate="home_city", value="Lima", quote="we moved to Lima",
                                      said_at="2026-08-25T10:00:00Z", session="s9", event="e9"), OTHER])
            assert _keys(ledger)[HOME].past                   # Pune, closed on the key
            forge(ledger, *statements)
            before = ledger.head()
            with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
                ledger.observe_many([late, OTHER])
            assert ledger.head() == before, name


def _rows_of(path, user: str) -> dict:
    conn = raw_forger(path)
    rows = {table: conn.execute(f"SELECT * FROM {table} WHERE user = ?", (user,)).fetchall()
            for table in ("facts_current", "fact_history")}
    conn.close()
    return rows


def _put_back(path, user: str, rows: dict) -> None:
    conn = raw_forger(path)
    for table, found in rows.items():
        conn.execute(f"DELETE FROM {table} WHERE user = ?", (user,))
        if found:
            conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' for _ in found[0])})", found)
    conn.close()


def test_another_connection_s_write_is_seen_by_the_kept_key(tmp_path):
    """The other connection supersedes Pune by Lima; the first connection's next batch carries its
    kept check of the key on through the log's new events, and agrees."""
    with _two_connections(tmp_path) as (first, second, clock):
        pune = _pune_id(first)
        clock.tick(60)
        second.observe(cand(predicate="home_city", value="Lima", quote="we moved to Lima",
                            said_at="2026-09-01T10:00:00Z", session="s3", event="e3"))
        clock.tick(60)
        lima = next(f["fact_id"] for f in second.facts("app", "u1") if f["value"] == "Lima")
        outcome = first.observe_many([cand(predicate="home_city", value="Lima", quote="we moved to Lima",
                                           said_at="2026-09-02T10:00:00Z", session="s4", event="e4"), OTHER])[0]
        assert outcome.fact_id == lima
        state = _keys(first)[HOME]
        assert set(state.open) == {lima} and set(state.past) == {pune}


def test_rows_put_back_as_kept_after_another_connection_s_write_are_caught(tmp_path):
    """A forger who restores the key's rows as they were when the check was kept, after another
    connection moved them on, does not pass as the kept check: the log touched the key since."""
    with _two_connections(tmp_path) as (first, second, clock):
        path = tmp_path / "l.db"
        stale = _rows_of(path, "u1")
        clock.tick(60)
        second.observe(cand(predicate="home_city", value="Lima", quote="we moved to Lima",
                            said_at="2026-09-01T10:00:00Z", session="s3", event="e3"))
        clock.tick(60)
        _put_back(path, "u1", stale)
        before = first.head()
        with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
            _restate_pune(first, 4)
        assert first.head() == before
