"""Shared fixtures: a real SQLite ledger file per test, with a fixed, movable clock."""

from __future__ import annotations

import importlib.util
import os
import tempfile
from datetime import datetime, timedelta

import pytest

from factledger.ledger import Ledger, make_candidate
from factledger.ledger.vocabulary.clock import parse_time
from tests.pg_server import Server, Standby, find_bindir

# Nothing downloads at test time.  Meaning (the semantic extra) is off for the suite as a whole,
# so the thousands of facts other tests write are not each embedded; tests/semantic/test_semantic_*.py
# turn it on (the `meaning` fixture), and subprocesses inherit whichever setting a test has.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("FACTLEDGER_EMBEDDER", "off")
# `factledger verify` keeps a record of its last full check in the verifier's folder: the tests'
# own, never the home directory of whoever runs them (subprocesses inherit it).
os.environ.setdefault("FACTLEDGER_VERIFY_STATE", tempfile.mkdtemp(prefix="factledger-verified-"))


@pytest.fixture
def meaning(monkeypatch):
    """The bundled encoder, on (skips nothing: the extra is part of the test install)."""
    monkeypatch.delenv("FACTLEDGER_EMBEDDER", raising=False)


class MovableClock:
    """A clock tests can set and advance, so transaction times are repeatable."""

    def __init__(self, start: str = "2026-11-01T00:00:00Z"):
        self.now = parse_time(start)

    def __call__(self) -> datetime:
        return self.now

    def set(self, when: str) -> None:
        self.now = parse_time(when)

    def tick(self, seconds: float = 1.0) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> MovableClock:
    return MovableClock()


@pytest.fixture
def ledger(tmp_path, clock):
    with Ledger(tmp_path / "ledger.db", clock=clock, create=True) as opened:
        yield opened


def cand(app="app", user="u1", predicate="diet", value="vegetarian", *, session="s1",
         event="e1", said_at="2026-08-30T10:00:00Z", quote=None, **extra):
    """A candidate with sensible defaults; the quote defaults to the value (and a negation's to
    words that negate it), so it passes the quote checks `observe` makes."""
    default = f"I no longer say {value}" if extra.get("negated") else f"I said {value}"
    return make_candidate(app=app, user=user, predicate=predicate, value=value,
                          quote=quote or default, session=session, evidence_event=event,
                          said_at=said_at, **extra)


def values(ledger: Ledger, app="app", user="u1", **filters) -> dict:
    """{(subject, predicate): sorted [(value, status, basis)]} of the open facts."""
    out: dict = {}
    for f in ledger.facts(app, user, include_sensitive=True, **filters):
        out.setdefault((f["subject"], f["predicate"]), []).append((f["value"], f["status"], f["basis"]))
    return {k: sorted(v) for k, v in out.items()}


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server for the session (tests/pg_server.py), or a skip that says why.

    With FACTLEDGER_REQUIRE_POSTGRES=1 (CI) a missing server or driver fails instead."""
    required = os.environ.get("FACTLEDGER_REQUIRE_POSTGRES") == "1"
    bindir = find_bindir()
    problem = None
    if bindir is None:
        problem = "no PostgreSQL server binaries (pg_config --bindir, /usr/lib/postgresql/*/bin)"
    elif importlib.util.find_spec("psycopg") is None:
        problem = "psycopg is not installed (pip install -e '.[postgres]')"
    if problem:
        if required:
            pytest.fail(f"FACTLEDGER_REQUIRE_POSTGRES=1 but {problem}")
        pytest.skip(f"PostgreSQL tests skipped: {problem}")
    server = Server(bindir).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def replicated(postgres):
    """A primary of its own and a hot standby streaming from it (tests/pg_server.py: Standby),
    for a module's tests; skipped or failed as `postgres` is when there is no server."""
    primary = Server(postgres.bindir).start()
    try:
        standby = Standby(primary).start()
        try:
            yield primary, standby
        finally:
            standby.stop()
    finally:
        primary.stop()
