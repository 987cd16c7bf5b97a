"""Runs the event store's contract suite (`tests/store_contract.py`) against every backend.

A second backend adds one entry to BACKENDS: a function that opens a fresh, empty log for a test
(here a SQLite file in the test's folder, with the log's schema created).
"""

from __future__ import annotations

import pytest

from factledger.ledger.store import open_sqlite

from .conftest import MovableClock
from .store_contract import *  # noqa: F403  (the contract's tests, collected here)


def _sqlite(tmp_path, clock):
    log = open_sqlite(tmp_path / "contract.db", clock)
    log.conn.executescript(log.schema)
    return log


BACKENDS = {"sqlite": _sqlite}


@pytest.fixture
def clock() -> MovableClock:
    return MovableClock()


@pytest.fixture(params=sorted(BACKENDS))
def log(request, tmp_path, clock):
    opened = BACKENDS[request.param](tmp_path, clock)
    yield opened
    opened.conn.close()
