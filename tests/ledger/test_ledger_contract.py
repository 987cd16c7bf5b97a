"""Runs the ledger's contract suite (`tests/ledger/contract.py`) against every backend, and the
export/import round trip from each backend into the other.

SQLite: a file in the test's folder.  PostgreSQL: a schema of its own in the session's server
(the `postgres` fixture skips with its reason when no server is installed; CI sets
FACTLEDGER_REQUIRE_POSTGRES=1 so that it fails instead).
"""

from __future__ import annotations

import itertools
import os
import sqlite3
from contextlib import contextmanager

import pytest

from factledger.ledger import Ledger, LedgerError
from factledger.ledger.errors import ProjectionMismatch
from factledger.ledger.store.postgres.backend import split_location
from factledger.ledger.store.postgres.partitions import SUGGESTED_LEAVES
from tests.conftest import cand
from tests.ledger.contract import *  # noqa: F403  (the contract's tests, collected here)
from tests.ledger.contract import decide_a_story, facts_of


def _opener(backend, request, tmp_path, clock):
    numbers = itertools.count()
    opened = []

    def make(location=None):
        if location is None:
            if backend == "sqlite":
                location = str(tmp_path / f"ledger{next(numbers)}.db")
            else:
                location = request.getfixturevalue("postgres").location()
        with _leaves(SUGGESTED_LEAVES if backend == "postgresql-partitioned" else None):
            ledger = Ledger(location, clock=clock, create=True)
        opened.append(ledger)
        return ledger
    return make, opened


@contextmanager
def _leaves(count):
    """A new PostgreSQL ledger hash-partitioned into `count` leaves (None: the default, plain)."""
    saved = os.environ.pop("FACTLEDGER_PG_LEAVES", None)
    if count is not None:
        os.environ["FACTLEDGER_PG_LEAVES"] = str(count)
    try:
        yield
    finally:
        os.environ.pop("FACTLEDGER_PG_LEAVES", None)
        if saved is not None:
            os.environ["FACTLEDGER_PG_LEAVES"] = saved


# PostgreSQL twice: plain tables (a new ledger's default) and hash-partitioned (FACTLEDGER_PG_LEAVES)
@pytest.fixture(params=["sqlite", "postgresql", "postgresql-partitioned"])
def make(request, tmp_path, clock):
    make, opened = _opener(request.param, request, tmp_path, clock)
    yield make
    for ledger in opened:
        ledger.close()


def _raw_sqlite(location, statements):
    conn = sqlite3.connect(location)
    conn.execute("DROP TRIGGER events_refuse_delete")
    conn.execute("DROP TRIGGER events_refuse_update")
    for sql in statements:
        conn.execute(sql)
    conn.commit()
    conn.close()


def _raw_postgres(location, statements):
    import psycopg  # noqa: PLC0415 - the postgres extra; the SQLite half of this module runs without it

    conninfo, schema = split_location(location)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        for trigger in ("events_refuse_delete", "events_refuse_truncate", "events_refuse_update"):
            conn.execute(f"DROP TRIGGER {trigger} ON events")
        for sql in statements:
            conn.execute(sql)


@pytest.fixture
def raw():
    """raw(ledger, *sql): the guard triggers dropped, then each statement run, outside the ledger."""
    def run(ledger, *statements):
        location = ledger._work.location
        (_raw_postgres if ledger._work.postgres else _raw_sqlite)(location, statements)
    return run


@pytest.mark.parametrize("source,target", [("sqlite", "postgresql"), ("postgresql", "sqlite")])
def test_export_from_one_backend_imports_into_the_other_with_the_same_head(
        request, tmp_path, clock, source, target):
    make_source, opened = _opener(source, request, tmp_path / "a", clock)
    make_target, opened_too = _opener(target, request, tmp_path / "b", clock)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    try:
        ledger = make_source()
        decide_a_story(ledger, clock)
        ledger.observe(cand(user="u2", predicate="home_city", value="Lima"))
        ledger.forget("app", "u2", reason="erasure request")
        path = tmp_path / "log.jsonl"
        with open(path, "w") as out:
            ledger.export_log(out)
        copy = make_target()
        result = copy.import_log(path)
        assert result["head"] == f"{ledger.head()[0]}:{ledger.head()[1]}"
        assert result["redacted"] == ledger.verify()["redacted"] > 0
        assert facts_of(copy) == facts_of(ledger)
        assert copy.verify()["ok"] and copy.replay_differences() == []
        again = tmp_path / "again.jsonl"
        with open(again, "w") as out:
            copy.export_log(out)
        assert again.read_text().splitlines()[1:] == path.read_text().splitlines()[1:]
    finally:
        for each in opened + opened_too:
            each.close()


def _ddl(ledger, *statements):
    """Run statements on the ledger's database outside the ledger (its guards left as they are)."""
    location = ledger._work.location
    if ledger._work.postgres:
        import psycopg  # noqa: PLC0415 - the postgres extra

        conninfo, schema = split_location(location)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{schema}"')
            for sql in statements:
                conn.execute(sql)
        return
    conn = sqlite3.connect(location)
    for sql in statements:
        conn.execute(sql)
    conn.commit()
    conn.close()


def test_an_index_recreated_non_unique_under_its_name_is_altered_and_repair_rebuilds_it(make, clock):
    """`fact_history_open` (one open interval per fact) dropped and made again without UNIQUE
    keeps its name: `verify` names it altered on both backends, and a repair open rebuilds it."""
    ledger = make()
    ledger.observe(cand())
    location = ledger._work.location
    ledger.close()
    _ddl(ledger, "DROP INDEX fact_history_open",
         "CREATE INDEX fact_history_open ON fact_history (fact_id) WHERE recorded_to IS NULL")
    with pytest.warns(RuntimeWarning):
        reader = Ledger(location, clock=clock, read_only=True)
    try:
        assert "index fact_history_open is altered" in " ".join(reader._work.schema_report)
        result = reader.verify()
        assert not result["ok"] and "index fact_history_open is altered" in result["problem"]
    finally:
        reader.close()
    with pytest.warns(RuntimeWarning, match="index fact_history_open was altered; rebuilt"):
        fixer = Ledger(location, clock=clock, repair=True)
    try:
        assert fixer.verify()["ok"]
    finally:
        fixer.close()
    with Ledger(location, clock=clock, read_only=True) as again:
        assert again._work.schema_report == [] and again.verify()["ok"]


def _plant(ledger):
    """What the fourth adversary planted: a side table, and a trigger on `events` that copies
    every body and salt a forget scrubs into it; and a view over the log."""
    if ledger._work.postgres:
        _ddl(ledger, "CREATE TABLE stash (body TEXT, salt BYTEA)",
             "CREATE FUNCTION keep_scrubbed() RETURNS trigger LANGUAGE plpgsql AS "
             "$$BEGIN INSERT INTO stash VALUES (OLD.body, OLD.salt); RETURN NEW; END$$",
             "CREATE TRIGGER events_keep AFTER UPDATE ON events FOR EACH ROW EXECUTE FUNCTION keep_scrubbed()",
             "CREATE VIEW every_body AS SELECT body FROM events",
             "CREATE INDEX events_by_type ON events (type)")
    else:
        _ddl(ledger, "CREATE TABLE stash (body TEXT, salt BLOB)",
             "CREATE TRIGGER events_keep AFTER UPDATE ON events BEGIN"
             " INSERT INTO stash VALUES (OLD.body, OLD.salt); END",
             "CREATE VIEW every_body AS SELECT body FROM events",
             "CREATE INDEX events_by_type ON events (type)")


def test_a_planted_trigger_is_named_by_verify_blocks_forget_and_repair_drops_it(make, clock):
    """Issue 47: the schema is part of what verify checks.  Each object the ledger did not make is
    named; a forget refuses while one is there (nothing scrubbed, nothing copied); a repair open
    drops them all, and the forget then leaves no copy."""
    ledger = make()
    ledger.observe(cand(value="vegan", session="s1"))
    ledger.observe(cand(predicate="home_city", value="Oslo", session="s2"))
    _plant(ledger)
    result = ledger.verify()
    assert not result["ok"]
    for name in ("events_keep", "stash", "every_body", "events_by_type"):
        assert name in result["problem"], result["problem"]
    before = ledger.head()
    with pytest.raises(LedgerError, match="events_keep.*not created by the ledger"):
        ledger.forget("app", "u1", session="s1", reason="erasure request")
    assert ledger.head() == before
    assert ledger.forget("app", "u1", session="s1", reason="dry", dry_run=True)["dry_run"]
    location = ledger._work.location
    ledger.close()
    with pytest.warns(RuntimeWarning, match="trigger events_keep on events was not created by the ledger; dropped"):
        fixer = Ledger(location, clock=clock, repair=True)
    try:
        assert fixer.verify()["ok"], fixer.verify()["problem"]
        assert fixer._work.foreign_objects() == []
        fixer.forget("app", "u1", session="s1", reason="erasure request")
        assert fixer.verify()["ok"]
    finally:
        fixer.close()


def test_the_key_checks_hold_on_every_backend(make, raw):
    """The decision table's past, negations and an open key's kind are checked against the log on
    both engines: honest late statements, negations and open keys decide with no alarm, in one
    observation and in a batch, and a deleted negation row is "the ledger is damaged"."""
    ledger = make()
    ledger.observe_many([cand(predicate="home_city", value="Pune", said_at="2026-08-01T10:00:00Z"),
                         cand(predicate="x_fav_band", value="Queen", kind="preference"),
                         cand(predicate="diet", value="vegan", negated=True, said_at="2026-08-20T10:00:00Z",
                              session="s2", event="e2")])
    ledger.observe(cand(predicate="home_city", value="Lima", said_at="2026-08-20T10:00:00Z", session="s3"))
    late = ledger.observe(cand(predicate="home_city", value="Pune", said_at="2026-08-10T10:00:00Z", session="s4"))
    assert late.decision == "reinforce"
    assert ledger.observe_many([cand(predicate="x_fav_band", value="Abba", session="s5"),
                                cand(predicate="diet", value="vegan", said_at="2026-08-10T10:00:00Z",
                                     session="s6")])[0].decision == "supersede"
    assert ledger.verify()["ok"]
    raw(ledger, "DELETE FROM key_negations")
    before = ledger.head()
    with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
        ledger.observe(cand(predicate="diet", value="vegan", said_at="2026-08-11T10:00:00Z", session="s7"))
    assert ledger.head() == before
