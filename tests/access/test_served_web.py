"""The web view: a page that displays a value above `normal` is a serve to the signed-in reviewer,
recorded before the page is sent; a page of normal values only records nothing."""

from __future__ import annotations

import hashlib

import pytest

pytest.importorskip("datasette", reason="the web view is the optional `ui` extra")

from factledger.ledger import Ledger  # noqa: E402
from tests.web.helpers import HEALTH_VALUE, Client, fill, web  # noqa: E402


def test_a_health_page_is_recorded_for_the_reviewer(tmp_path, clock):
    path = tmp_path / "ledger.db"
    fill(path, clock)
    client = Client(web(path, clock))
    try:
        client.sign_in("rao")
        page = client.get("/-/factledger/user?app=clinic&user=arun")
        assert HEALTH_VALUE in page.text
        with Ledger(path, read_only=True) as ledger:
            rows = ledger.served("clinic", "arun")
            head = ledger.head()
        assert [(r["caller"], r["surface"], r["clearance"]) for r in rows] == [("rao", "web", "health")]
        assert rows[0]["text_sha256"] == hashlib.sha256(page.content).hexdigest()
        client.sign_in("vic")                          # normal clearance: no value above normal shown
        client.get("/-/factledger/user?app=clinic&user=arun")
        with Ledger(path, read_only=True) as ledger:
            assert ledger.head() == head
    finally:
        client.close()
