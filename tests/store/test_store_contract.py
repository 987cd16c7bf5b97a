"""Runs the event store's contract suite (`tests/store/contract.py`) against every backend.

Each entry of BACKENDS opens a fresh, empty log for a test: a SQLite file in the test's folder,
or a schema of its own in the session's PostgreSQL server (the `postgres` fixture, which skips
with its reason when no server is installed, and fails instead under FACTLEDGER_REQUIRE_POSTGRES=1).
"""

from __future__ import annotations

import pytest

from factledger.ledger.store.eventlog import open_sqlite
from factledger.ledger.store.postgres.backend import open_postgres
from tests.conftest import MovableClock
from tests.store.contract import *  # noqa: F403  (the contract's tests, collected here)


def _sqlite(request, tmp_path, clock):
    log = open_sqlite(tmp_path / "contract.db", clock)
    log.conn.executescript(log.schema)
    return log


def _postgresql(request, tmp_path, clock):
    server = request.getfixturevalue("postgres")
    log = open_postgres(server.location(), clock)
    log.conn.native(log.schema)
    return log


BACKENDS = {"sqlite": _sqlite, "postgresql": _postgresql}


@pytest.fixture
def clock() -> MovableClock:
    return MovableClock()


@pytest.fixture(params=sorted(BACKENDS))
def log(request, tmp_path, clock):
    opened = BACKENDS[request.param](request, tmp_path, clock)
    yield opened
    opened.conn.close()
