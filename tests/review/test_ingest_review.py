"""The review verbs find their queue item by its hold_id, not by reading the whole queue."""

from __future__ import annotations

import pytest

from factledger.ledger import LedgerError
from tests.ingest.test_validator_session import c, ingest


def test_accept_and_reject_read_one_queue_item(ledger):
    ingest(ledger, c(predicate="favourite_colour"),
           c(predicate="favourite_food", value="Pune", quote="we're in Pune"))
    first, second = [r["hold_id"] for r in ledger.held("app", "u1")]
    statements: list[str] = []
    ledger._conn.set_trace_callback(statements.append)
    try:
        ledger.review_accept(first, "diet")
        ledger.review_reject(second, "not a fact")
    finally:
        ledger._conn.set_trace_callback(None)
    reads = [s for s in statements if "FROM review_queue" in s]
    assert len(reads) == 2 and all("WHERE hold_id = " in s for s in reads), reads
    assert [r["status"] for r in ledger.held("app", "u1", status=None)] == ["accepted", "rejected"]
    with pytest.raises(LedgerError, match="already"):
        ledger.review_reject(first, "again")
    with pytest.raises(LedgerError, match="no held candidate"):
        ledger.review_accept("nope", "diet")
