"""Verified reads on PostgreSQL: the same forged projection rows as `test_verified_reads.py` (the
same edits, in the same SQL, translated as the store's own statements are) are never served by a
library read, and the served-fact check of a recall costs a fixed number of statements whatever
the number of facts it serves (issue 50: lookups by key, never a statement per fact nor a scan
of the log).  Each on plain tables and on a partitioned ledger."""

from __future__ import annotations

import json
import re

import pytest

from factledger.ledger import Ledger
from factledger.ledger.audit import served
from factledger.ledger.errors import ProjectionMismatch
from factledger.ledger.store.postgres import backend
from tests.audit.test_verified_reads import APP, FORGED, TAMPERS, USER
from tests.conftest import MovableClock, cand

pytestmark = pytest.mark.usefixtures("postgres")


@pytest.fixture(autouse=True, params=["plain", "partitioned"])
def layout(request, monkeypatch):
    """Each test on plain tables and on a ledger of 8 hash leaves."""
    monkeypatch.setenv("FACTLEDGER_PG_LEAVES", "0" if request.param == "plain" else "8")
    return request.param


def _pristine(location: str) -> None:
    """The history of `test_verified_reads.pristine`, in a schema of the server."""
    clock = MovableClock("2026-09-01T00:00:00Z")
    with Ledger(location, clock=clock, create=True) as ledger:
        for i, city in enumerate(("Pune", "Bengaluru", "Mysuru")):
            clock.tick(60)
            ledger.observe(cand(predicate="home_city", value=city, session=f"c{i}", event=f"c{i}",
                                said_at=f"2026-08-{i + 1:02d}T10:00:00Z"))
        for session, day in (("d", 10), ("d2", 11)):
            clock.tick(60)
            ledger.observe(cand(predicate="diet", value="pescatarian", session=session, event=session,
                                said_at=f"2026-08-{day}T10:00:00Z"))
        clock.tick(60)
        ledger.observe(cand(predicate="medication_dose", value="metoprolol tartrate 50 mg", session="m",
                            event="m", said_at="2026-08-12T10:00:00Z", basis="verified", author="document"))


def _edit(location: str, statements: list[str]) -> None:
    """A forger's edit, through the ledger's own connection (its SQL translated as the store's
    is); a row added to `facts_current` names its columns (PostgreSQL's table has a `rowid` first)."""
    with Ledger(location, create=False) as ledger:
        conn = ledger._conn
        for sql in statements:
            if sql.startswith("INSERT INTO facts_current SELECT"):
                columns = [c for c in conn.columns_of("facts_current")[0] if c != "rowid"]
                names = ", ".join(f'"{c}"' if c == "user" else c for c in columns)
                sql = sql.replace("INSERT INTO facts_current SELECT", f"INSERT INTO facts_current ({names}) SELECT")
            conn.execute(sql)


def _reads(location: str) -> dict:
    out = {}
    with Ledger(location, clock=MovableClock("2026-09-02T00:00:00Z")) as ledger:
        observed = ledger._conn.execute("SELECT json_extract(body, '$.fact_id'), json_extract(body, '$.value')"
                                        " FROM events WHERE type = 'FactObserved'").fetchall()
        now = [f for f, value in observed if value not in ("Pune", "Bengaluru")]
        old = [f for f, value in observed if value in ("Pune", "Bengaluru")]
        reads = {
            "facts": lambda: ledger.facts(APP, USER, include_sensitive=True),
            "history": lambda: ledger.history(APP, USER),
            "why": lambda: [ledger.why(f) for f in now],
            "why_old": lambda: [ledger.why(f) for f in old],
            "recall": lambda: [ledger.recall(APP, USER, "", clearance=c, explain=True).as_dict()
                               for c in ("normal", "personal,health")],
        }
        for name, read in reads.items():
            try:
                out[name] = json.dumps(read(), default=str)
            except ProjectionMismatch as exc:
                out[name] = exc
    return out


def test_the_untouched_ledger_serves_on_postgres(postgres):
    location = postgres.location()
    _pristine(location)
    for name, answer in _reads(location).items():
        assert not isinstance(answer, Exception), (name, answer)


@pytest.mark.parametrize("name,statements,table,refusing", TAMPERS, ids=[t[0] for t in TAMPERS])
def test_a_forged_projection_row_is_never_served_on_postgres(postgres, name, statements, table, refusing):
    location = postgres.location()
    _pristine(location)
    _edit(location, statements)
    answers = _reads(location)
    for read in refusing & set(answers):
        assert isinstance(answers[read], ProjectionMismatch), (read, answers[read])
        assert str(answers[read]).startswith("the ledger is damaged: ")
    for read, what in answers.items():
        if not isinstance(what, Exception):
            assert FORGED not in what and FORGED.lower() not in what and "500 mg" not in what, read


def test_the_recall_check_costs_the_same_statements_for_one_fact_and_for_forty(postgres, monkeypatch, layout):
    """What the served-fact check sends to the server for a recall: the same statements whether
    it serves one fact or forty (each fold reads `fact_events`, then the events, by key)."""
    location = postgres.location()
    sent: list[str] = []
    run = backend.PgConnection._run

    def counted(self, text, args, then=None):
        sent.append(text)
        return run(self, text, args, then)

    counts = {}
    with Ledger(location, clock=MovableClock("2026-09-01T00:00:00Z"), create=True) as ledger:
        for user, facts in (("one", 1), ("forty", 40)):
            ledger.observe_many([cand(user=user, predicate="allergy", value=f"pollen{i}", session=f"s{i}",
                                      event=f"{user}{i}") for i in range(facts)])
        for user, facts in (("one", 1), ("forty", 40)):
            result = ledger.recall(APP, user, "pollen", limit=100, clearance="personal,health", preload=True, record=False)
            assert len(result.selected) == facts
            monkeypatch.setattr(backend.PgConnection, "_run", counted)
            sent.clear()
            served.check_recall(ledger._conn, APP, [user], result.selected)     # nothing kept: a fold
            monkeypatch.setattr(backend.PgConnection, "_run", run)
            counts[user] = len(sent)
            # (on 8 leaves, from the user's leaf by name: `fact_events_p3`, `events_p3`)
            assert sum(bool(re.search(r"FROM fact_events(_p\d+)? ", s)) for s in sent) == 1, sent
            # (a list of 16 or more goes as an array: `seq = ANY(...)`, ledger/store/postgres/arrays.py)
            assert sum(bool(re.search(r"FROM events(_p\d+)? WHERE seq (IN|= ANY)", s)) for s in sent) == 1, sent
            if layout == "partitioned":
                assert all("FROM fact_events_p" in s for s in sent if "FROM fact_events" in s), sent
            assert not any("JOIN events" in s for s in sent), sent
    assert counts["one"] == counts["forty"]
