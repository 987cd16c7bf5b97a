"""The web view's doors: sign-in, roles, clearance, CSRF, no action by GET, headers, Datasette's own pages."""

from __future__ import annotations

import re
import sqlite3

import pytest

pytest.importorskip("datasette", reason="the web view is the optional `ui` extra")

from factledger.ledger import Ledger  # noqa: E402
from tests.web.helpers import HEALTH_VALUE, HELD_VALUE, PASSWORDS, Client, fill, web  # noqa: E402

PAGES = ["/-/factledger/", "/-/factledger/user?app=clinic&user=arun", "/-/factledger/user.json?app=clinic&user=arun",
         "/-/factledger/timeline?app=mealkit&user=priya&predicate=home_city", "/-/factledger/review",
         "/-/factledger/erase", "/-/factledger/erasures", "/-/factledger/integrity?run=1",
         "/-/factledger/served?app=clinic&user=arun"]
ACTIONS = ["/-/factledger/review/accept", "/-/factledger/review/reject", "/-/factledger/resolve",
           "/-/factledger/erase/plan", "/-/factledger/erase/commit"]


@pytest.fixture
def ledger_file(tmp_path, clock):
    path = tmp_path / "ledger.db"
    fill(path, clock)
    return path


@pytest.fixture
def client(ledger_file, clock):
    c = Client(web(ledger_file, clock))
    yield c
    c.close()


def held_id(path) -> str:
    with Ledger(path) as ledger:
        return ledger.held()[0]["hold_id"]


def events(path) -> int:
    with Ledger(path) as ledger:
        return ledger.head()[0]


def health_fact(path) -> str:
    with Ledger(path) as ledger:
        return next(f["fact_id"] for f in ledger.facts("clinic", "arun", include_sensitive=True)
                    if f["predicate"] == "medication_dose")


def test_anonymous_gets_the_sign_in_form_on_pages_and_403_elsewhere(client, ledger_file):
    """Issue 29: a visitor who lands on a page is asked to sign in (401 with the form, back to
    that page once signed in), not shown a bare 403; Datasette's own routes stay 403."""
    for path in PAGES + [f"/-/factledger/fact?id={health_fact(ledger_file)}"]:
        response = client.get(path)
        assert response.status_code == 401, path
        assert 'id="sign-in"' in response.text and "Sign in to see this page" in response.text, path
        assert HEALTH_VALUE not in response.text
    for path in ["/ledger", "/ledger/events", "/ledger/facts_current.json", "/ledger.json?sql=select+1",
                 "/-/metadata.json"]:
        response = client.get(path)
        assert response.status_code == 403, path
        assert HEALTH_VALUE not in response.text
    before = events(ledger_file)
    for path in ACTIONS:
        assert client.post(path, {"hold_id": held_id(ledger_file), "predicate": "favorite_cuisine",
                                  "reason": "r"}).status_code == 403, path
    assert events(ledger_file) == before
    assert client.get("/").headers["location"] == "/-/factledger/"


def test_signing_in_from_a_page_returns_to_it_and_never_to_another_site(client):
    asked = client.get("/-/factledger/user?app=clinic&user=arun")
    assert '<input type="hidden" name="next" value="/-/factledger/user?app=clinic&amp;user=arun">' in asked.text
    back = client.post("/-/factledger/login", {"username": "rao", "password": PASSWORDS["rao"],
                                               "next": "/-/factledger/user?app=clinic&user=arun"})
    assert back.status_code == 302 and back.headers["location"] == "/-/factledger/user?app=clinic&user=arun"
    for elsewhere in ("https://evil.example/", "//evil.example/", "/-/factledger//evil.example", "/ledger"):
        away = client.post("/-/factledger/login", {"username": "rao", "password": PASSWORDS["rao"],
                                                   "next": elsewhere})
        assert away.headers["location"] == "/-/factledger/", elsewhere


def test_sign_in_wrong_password_and_sign_out(client):
    assert client.sign_in("rao", "wrong").status_code == 403
    assert client.sign_in("nobody", "wrong").status_code == 403
    assert "ds_actor" not in client.cookies
    assert client.sign_in("rao").status_code == 302
    page = client.get("/-/factledger/")
    assert page.status_code == 200 and "rao · reviewer · clearance health" in page.text
    out = client.post("/-/factledger/logout", {})
    assert out.status_code == 302
    client.cookies["ds_actor"] = out.cookies.get("ds_actor", "")
    assert client.get("/-/factledger/").status_code == 401


def test_a_forged_or_unknown_actor_cookie_is_nobody(client):
    client.cookies["ds_actor"] = client.ds.sign({"a": {"id": "mallory"}}, "actor")
    assert client.get("/-/factledger/").status_code == 401
    client.cookies["ds_actor"] = "eyJhIjp7ImlkIjoicmFvIn19.forged"
    assert client.get("/-/factledger/").status_code == 401


def test_a_health_value_never_reaches_a_normal_viewer(client, ledger_file):
    client.sign_in("vic")
    user = client.get("/-/factledger/user?app=clinic&user=arun")
    assert user.status_code == 200
    assert HEALTH_VALUE not in user.text and "148/92" not in user.text
    assert re.search(r"3 values above your clearance \(normal\) withheld:\s*health 3", user.text)
    data = client.get("/-/factledger/user.json?app=clinic&user=arun").json()
    assert data["facts"] == [] and data["withheld"] == {"health": 3}
    assert HEALTH_VALUE not in client.get("/-/factledger/user.json?app=clinic&user=arun").text
    fact = client.get(f"/-/factledger/fact?id={health_fact(ledger_file)}")
    assert fact.status_code == 403 and HEALTH_VALUE not in fact.text
    timeline = client.get("/-/factledger/timeline?app=clinic&user=arun&predicate=medication_dose")
    assert timeline.status_code == 403 and HEALTH_VALUE not in timeline.text
    priya = client.get("/-/factledger/user?app=mealkit&user=priya")
    assert "Bengaluru" not in priya.text and "personal 1" in priya.text      # home_city is personal
    review = client.get("/-/factledger/review")
    assert HELD_VALUE not in review.text and "health 1" in review.text       # an unknown predicate
    for path in ["/ledger", "/ledger/facts_current", "/ledger/facts_current.json", "/ledger/events.json",
                 "/ledger.json?sql=select+value+from+facts_current", "/-/databases.json"]:
        response = client.get(path)
        assert response.status_code == 403, path
        assert HEALTH_VALUE not in response.text


def test_full_clearance_reads_sql_over_the_projections(client):
    client.sign_in("hal")
    assert client.get("/ledger").status_code == 200
    rows = client.get("/ledger/facts_current.json?_shape=array&predicate=medication_dose").json()
    assert [r["value"] for r in rows] == [HEALTH_VALUE]
    assert client.get("/ledger.json?sql=select+count(*)+from+events").status_code == 200
    assert client.get("/ledger/events.json").status_code == 200
    assert client.get("/_internal").status_code == 403
    assert client.get("/ledger.db").status_code in (403, 404)          # no download of the file


def test_personal_clearance_sees_personal_not_health(client):
    client.sign_in("pat")
    priya = client.get("/-/factledger/user?app=mealkit&user=priya")
    assert "Bengaluru" in priya.text
    arun = client.get("/-/factledger/user?app=clinic&user=arun")
    assert HEALTH_VALUE not in arun.text and "health 3" in arun.text
    assert client.get("/ledger").status_code == 403               # SQL is for full clearance only


def test_a_viewer_cannot_act(client, ledger_file):
    client.sign_in("hal")                                          # full clearance, but a viewer
    review = client.get("/-/factledger/review")
    assert HELD_VALUE in review.text and 'action="/-/factledger/review/accept"' not in review.text
    before = events(ledger_file)
    response = client.post("/-/factledger/review/accept", {"hold_id": held_id(ledger_file),
                                                           "predicate": "favorite_cuisine", "reason": "r"})
    assert response.status_code == 403 and "reviewer" in response.text
    response = client.post("/-/factledger/erase/commit", {"app": "mealkit", "user": "priya", "kind": "user",
                                                          "reason": "r", "ticket": "t", "confirm": "yes"})
    assert response.status_code == 403
    assert events(ledger_file) == before


def test_csrf_is_required_for_every_action(client, ledger_file):
    client.sign_in("rao")
    before = events(ledger_file)
    for path in ACTIONS + ["/-/factledger/logout"]:
        response = client.post(path, {"hold_id": held_id(ledger_file), "predicate": "favorite_cuisine",
                                      "reason": "r"}, csrf=False)
        assert response.status_code == 403, path
        response = client.post(path, {"hold_id": held_id(ledger_file), "predicate": "favorite_cuisine",
                                      "reason": "r", "csrftoken": "not-the-token"}, csrf=False)
        assert response.status_code == 403, path
    assert events(ledger_file) == before


def test_no_action_by_get(client, ledger_file):
    client.sign_in("rao")
    before = events(ledger_file)
    for path in ACTIONS:
        response = client.get(path + f"?hold_id={held_id(ledger_file)}&predicate=favorite_cuisine&reason=r")
        assert response.status_code == 405, path
    assert client.get("/-/factledger/logout").status_code == 405
    assert events(ledger_file) == before


def test_a_reviewer_below_the_candidates_clearance_cannot_accept_it(client, ledger_file):
    client.sign_in("pat")                                          # personal; the held predicate is unknown
    before = events(ledger_file)
    response = client.post("/-/factledger/review/accept", {"hold_id": held_id(ledger_file),
                                                           "predicate": "favorite_cuisine", "reason": "r"})
    assert response.status_code == 403 and HELD_VALUE not in response.text
    assert events(ledger_file) == before


def test_every_response_is_no_store_and_our_pages_load_nothing_from_elsewhere(client):
    client.sign_in("rao")
    for path in PAGES + ["/-/factledger/login", "/ledger", "/ledger/facts_current", "/-/static/app.css"]:
        response = client.get(path)
        assert response.headers["cache-control"] == "no-store", path
        if path.startswith("/-/factledger"):
            assert "default-src 'none'" in response.headers["content-security-policy"]
            assert not re.search(r"""(src|href|action)=["']?(https?:)?//""", response.text), path
            assert "@import" not in response.text and "url(http" not in response.text


def test_public_lets_anyone_look_at_normal_values_but_not_act(ledger_file, clock):
    c = Client(web(ledger_file, clock, public=True))
    try:
        home = c.get("/-/factledger/")
        assert home.status_code == 200 and "anonymous viewer" in home.text
        arun = c.get("/-/factledger/user?app=clinic&user=arun")
        assert HEALTH_VALUE not in arun.text and "health 3" in arun.text
        assert c.get("/ledger").status_code == 403
        before = events(ledger_file)
        response = c.post("/-/factledger/review/accept", {"hold_id": held_id(ledger_file),
                                                          "predicate": "favorite_cuisine", "reason": "r"})
        assert response.status_code == 403
        assert events(ledger_file) == before
    finally:
        c.close()


def test_datasette_reads_the_file_read_only(client):
    conn = client.ds.get_database("ledger").connect()
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("INSERT INTO projection_positions VALUES ('x', 1)")
    finally:
        conn.close()


def test_a_datasette_without_factledger_settings_is_left_alone(ledger_file):
    from datasette.app import Datasette

    from factledger.web.hooks import permission_allowed

    plain = Datasette(files=[str(ledger_file)])
    c = Client(plain)
    try:
        assert c.get("/-/factledger/review").status_code == 404
        assert permission_allowed(plain, None, "view-table", ("ledger", "events")) is None
    finally:
        c.close()
