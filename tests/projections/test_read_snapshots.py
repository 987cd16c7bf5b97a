"""Reads of several statements see one committed state, and never touch the connection's row factory.

A second writer (another `Ledger` on the same file, as another process would be) commits between
the statements of a read; the read must not see half of it.
"""

from __future__ import annotations

import sqlite3

from factledger.ledger import Ledger
from factledger.projections import queries
from tests.conftest import MovableClock, cand


def test_why_reads_the_fact_and_its_events_in_one_snapshot(tmp_path, monkeypatch):
    path = tmp_path / "ledger.db"
    clock = MovableClock()
    with Ledger(path, clock=clock, create=True) as reader, Ledger(path, clock=clock, create=True) as writer:
        fact_id = reader.observe(cand(value="vegan", session="s1")).fact_id
        real_fact = queries._fact

        def fact_then_a_concurrent_write(row, now, **kw):
            clock.tick()
            writer.observe(cand(value="vegan", session="s2"))       # reinforces the same fact
            return real_fact(row, now, **kw)

        monkeypatch.setattr(queries, "_fact", fact_then_a_concurrent_write)
        seen = reader.why(fact_id)
        monkeypatch.setattr(queries, "_fact", real_fact)
        assert [e["type"] for e in seen["events"]] == ["FactObserved"]
        assert [e["type"] for e in reader.why(fact_id)["events"]] == ["FactObserved", "FactReinforced"]
        assert not reader._conn.in_transaction


def test_the_data_subject_export_is_one_snapshot(tmp_path, monkeypatch):
    path = tmp_path / "ledger.db"
    clock = MovableClock()
    with Ledger(path, clock=clock, create=True) as reader, Ledger(path, clock=clock, create=True) as writer:
        reader.observe(cand(value="vegan", session="s1"))
        real_facts = queries.facts

        def facts_then_a_concurrent_write(*args, **kw):
            out = real_facts(*args, **kw)
            clock.tick()
            writer.observe(cand(predicate="home_city", value="Lisbon", session="s2"))
            return out

        monkeypatch.setattr(queries, "facts", facts_then_a_concurrent_write)
        export = reader.export_subject("app", "u1")
        assert len(export["facts"]) == 1
        assert len(export["history"]) == 1 and len(export["events"]) == 1


def test_reads_leave_the_connections_row_factory_alone(ledger):
    ledger.observe(cand(value="vegan"))
    sentinel = sqlite3.Row
    ledger._conn.row_factory = None
    fact_id = ledger.facts("app", "u1")[0]["fact_id"]
    ledger.history("app", "u1")
    ledger.facts("app", "u1", as_of="2027-01-01")
    ledger.why(fact_id)
    assert ledger._conn.row_factory is None
    ledger._conn.row_factory = sentinel
    try:
        assert ledger.facts("app", "u1")[0]["value"] == "vegan"
        assert ledger._conn.row_factory is sentinel
    finally:
        ledger._conn.row_factory = None
