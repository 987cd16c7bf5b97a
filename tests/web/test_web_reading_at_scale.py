"""The web view a person can use on a large ledger (issue 46): partitions searched and paged,
receipts found by data subject, an Erase form a viewer cannot fill."""

from __future__ import annotations

import pytest

pytest.importorskip("datasette", reason="the web view is the optional `ui` extra")

from factledger.ledger import Ledger, make_candidate  # noqa: E402
from tests.web.helpers import Client, fill, web  # noqa: E402


@pytest.fixture
def ledger_file(tmp_path, clock):
    path = tmp_path / "ledger.db"
    fill(path, clock)
    with Ledger(path, clock=clock) as ledger:
        ledger.observe_many([make_candidate(
            app="bulk", user=f"user{n:04d}", predicate="diet", value="vegan", quote="I'm vegan", session="s1",
            evidence_event="e1", said_at="2026-10-01T00:00:00Z") for n in range(250)])
    return path


@pytest.fixture
def client(ledger_file, clock):
    c = Client(web(ledger_file, clock))
    yield c
    c.close()


def test_the_partitions_page_searches_and_pages(client):
    client.sign_in("rao")
    first = client.get("/-/factledger/")
    assert first.status_code == 200
    assert "page 1 of 3" in first.text and first.text.count('href="/-/factledger/user?') == 100
    assert "next</a>" in first.text and "previous</a>" not in first.text
    last = client.get("/-/factledger/?page=3")
    assert "page 3 of 3" in last.text and "previous</a>" in last.text and "priya" in last.text
    found = client.get("/-/factledger/?q=PRIYA")
    assert "1 partition matching" in found.text and "priya" in found.text and "user0001" not in found.text
    none = client.get("/-/factledger/?q=nobody-here")
    assert "No partition matches" in none.text
    assert client.get("/-/factledger/?page=zero").status_code == 200


def test_receipts_are_found_by_data_subject(client, ledger_file, clock):
    with Ledger(ledger_file, clock=clock) as ledger:
        ledger.forget("bulk", "user0007", reason="asked", ticket="CASE-A7")
        ledger.forget("bulk", "user0008", reason="asked", ticket="CASE-B8")
    client.sign_in("rao")
    page = client.get("/-/factledger/erasures?app=bulk&user=user0007")
    assert page.status_code == 200 and "1 receipt for user" in page.text
    assert "CASE-A7" in page.text and "CASE-B8" not in page.text
    assert "No erasure receipt for this data subject" in client.get(
        "/-/factledger/erasures?app=bulk&user=user9999").text


def test_a_viewer_sees_the_erase_form_disabled(client):
    client.sign_in("hal")                                   # full clearance, but a viewer
    page = client.get("/-/factledger/erase")
    assert page.status_code == 200
    assert '<fieldset disabled id="erase-fields">' in page.text and 'id="plan" disabled' in page.text
    assert 'href="/-/factledger/erase"' not in page.text    # no Erase link in the header for a viewer


def test_a_reviewer_gets_the_erase_form_enabled(client):
    client.sign_in("rao")
    page = client.get("/-/factledger/erase")
    assert '<fieldset id="erase-fields">' in page.text and 'id="plan">' in page.text
