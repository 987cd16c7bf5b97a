"""The web view: a page that displays a value above `normal` is a serve to the signed-in reviewer,
recorded before the page is sent; a page of normal values only records nothing."""

from __future__ import annotations

import hashlib
import json

import pytest

pytest.importorskip("datasette", reason="the web view is the optional `ui` extra")

from factledger.ledger import Ledger  # noqa: E402
from tests.web.helpers import HEALTH_VALUE, HELD_VALUE, Client, fill, web  # noqa: E402


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


def _serves(path, app, user):
    with Ledger(path, read_only=True) as ledger:
        return ledger.served(app, user), ledger.head()


def test_a_health_timeline_is_recorded_and_a_normal_one_is_not(tmp_path, clock):
    path = tmp_path / "ledger.db"
    fill(path, clock)
    client = Client(web(path, clock))
    try:
        client.sign_in("rao")
        page = client.get("/-/factledger/timeline?app=clinic&user=arun&predicate=medication_dose")
        assert page.status_code == 200 and HEALTH_VALUE in page.text
        rows, head = _serves(path, "clinic", "arun")
        assert [(r["caller"], r["surface"], r["tool"], r["clearance"]) for r in rows] == [
            ("rao", "web", "timeline", "health")]
        assert rows[0]["text_sha256"] == hashlib.sha256(page.content).hexdigest()
        with Ledger(path, read_only=True) as ledger:
            dose = {r["fact_id"] for r in ledger.history("clinic", "arun", predicate="medication_dose")}
        assert set(rows[0]["fact_ids"]) == dose and len(rows[0]["fact_ids"]) == len(dose)   # every interval's fact, once
        assert client.get("/-/factledger/timeline?app=mealkit&user=priya&predicate=diet").status_code == 200
        client.sign_in("vic")                           # refused: nothing shown, nothing recorded
        assert client.get("/-/factledger/timeline?app=clinic&user=arun&predicate=medication_dose").status_code == 403
        assert _serves(path, "clinic", "arun")[1] == head
        assert _serves(path, "mealkit", "priya")[0] == []
    finally:
        client.close()


def test_the_review_queue_is_recorded_in_each_partition_it_shows_above_normal(tmp_path, clock):
    path = tmp_path / "ledger.db"
    fill(path, clock)
    client = Client(web(path, clock))
    try:
        client.sign_in("vic")                           # normal: the held candidate (unknown: health) withheld
        client.get("/-/factledger/review")
        assert _serves(path, "mealkit", "priya")[0] == []
        client.sign_in("rao")
        page = client.get("/-/factledger/review")
        assert HELD_VALUE in page.text
        rows, _head = _serves(path, "mealkit", "priya")
        assert [(r["caller"], r["tool"], r["clearance"]) for r in rows] == [("rao", "review", "health")]
        assert rows[0]["text_sha256"] == hashlib.sha256(page.content).hexdigest()
        with Ledger(path, read_only=True) as ledger:
            held = [h["hold_id"] for h in ledger.held("mealkit", "priya")]
            dispute = ledger.lookup.disputed_by_key()[0]
            shown = ledger.serves.served_show(rows[0]["seq"])
        assert shown["held"] == held
        assert set(rows[0]["fact_ids"]) == {dispute["fact_id"], *json.loads(dispute["disputes"])}
        # forgetting the session that said the held candidate takes the page's hash with it
        with Ledger(path, clock=clock) as ledger:
            receipt = ledger.forget("mealkit", "priya", session="meal-9", reason="request", requested_by="dpo")
            assert receipt["counts"]["serve_records"] == 1
            assert ledger.verify()["ok"]
        rows, _head = _serves(path, "mealkit", "priya")
        assert [(r["caller"], r["tool"], r["text_sha256"]) for r in rows] == [("rao", "review", None)]
    finally:
        client.close()


def test_the_partition_serves_page_is_for_reviewers_and_masked_by_clearance(tmp_path, clock):
    path = tmp_path / "ledger.db"
    fill(path, clock)
    client = Client(web(path, clock))
    try:
        client.sign_in("rao")
        user_page = client.get("/-/factledger/user?app=clinic&user=arun")
        assert 'href="/-/factledger/served?app=clinic&amp;user=arun"' in user_page.text
        _rows, head = _serves(path, "clinic", "arun")
        with Ledger(path, read_only=True) as ledger:
            dose = next(f["fact_id"] for f in ledger.facts("clinic", "arun", include_sensitive=True)
                        if f["predicate"] == "medication_dose")
        page = client.get("/-/factledger/served?app=clinic&user=arun")
        assert page.status_code == 200
        assert "user / medication_dose" in page.text and dose in page.text and "rao" in page.text
        assert HEALTH_VALUE not in page.text and "148/92" not in page.text     # ids and keys, never a value
        assert _serves(path, "clinic", "arun")[1] == head                      # so viewing it is no serve
        client.sign_in("pat")                           # a reviewer cleared for personal, not health
        masked = client.get("/-/factledger/served?app=clinic&user=arun")
        assert masked.status_code == 200 and 'id="masked"' in masked.text
        assert "medication_dose" not in masked.text and dose not in masked.text and "health" in masked.text
        client.sign_in("hal")                           # health, but a viewer: not for them
        assert client.get("/-/factledger/served?app=clinic&user=arun").status_code == 403
        assert "serves-link" not in client.get("/-/factledger/user?app=clinic&user=arun").text
        stranger = Client(web(path, clock))
        try:
            assert stranger.get("/-/factledger/served?app=clinic&user=arun").status_code == 401
        finally:
            stranger.close()
    finally:
        client.close()
