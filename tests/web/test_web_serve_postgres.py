"""`factledger serve` on a PostgreSQL ledger (issue 30, item 5): a real server process over a real
PostgreSQL, signed in to and read over HTTP as a reviewer's browser would.  The plugin's pages
read through the facade; Datasette's own table and SQL pages, which open SQLite files only, are
not served and the page says so.  With `--read-db` the pages read a hot standby while a
reviewer's action writes to the primary."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("datasette", reason="the web view is the optional `ui` extra")

from factledger.ledger import Ledger  # noqa: E402
from tests.web.helpers import PASSWORDS, actors_toml, fill, wait_until_serving  # noqa: E402
from tests.web.test_web_browser import free_port  # noqa: E402

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))


class Browser:
    """Cookies kept between requests, forms posted with their CSRF token, redirects followed."""

    def __init__(self, base: str):
        self.base = base
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def get(self, path: str):
        try:
            response = self.opener.open(self.base + path, timeout=30)
            return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def post(self, path: str, form: dict, token_from: str = "/-/factledger/login"):
        _status, page = self.get(token_from)
        token = re.search(r'name="csrftoken" value="([^"]+)"', page).group(1)
        data = urllib.parse.urlencode({**form, "csrftoken": token}).encode()
        try:
            response = self.opener.open(self.base + path, data=data, timeout=30)
            return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def sign_in(self, name: str) -> None:
        status, _page = self.post("/-/factledger/login", {"username": name, "password": PASSWORDS[name]})
        assert status == 200, status


@contextmanager
def serving(*db_args: str):
    port = free_port()
    env = dict(os.environ, FACTLEDGER_UI_ACTORS=actors_toml())
    process = subprocess.Popen([FACTLEDGER, *db_args, "serve", "--port", str(port)], env=env,
                               stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(process, base)
        yield Browser(base)
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def pg_ledger(replicated):
    """The web tests' ledger (tests/web/helpers.py: fill) on the primary, the standby caught up."""
    primary, standby = replicated
    location = primary.location("web_view")
    fill(location)
    standby.catch_up()
    return location, standby.location("web_view")


def test_serve_on_postgresql_answers_the_user_page_of_a_partition(pg_ledger):
    location, _ = pg_ledger
    with Ledger(location, read_only=True) as ledger:
        expected = {f["value"] for f in ledger.facts("mealkit", "priya") if f["sensitivity"] != "health"}
    with serving("--db", location) as browser:
        status, _ = browser.get("/-/factledger/user?app=mealkit&user=priya")
        assert status == 401                                    # nobody signed in yet
        browser.sign_in("pat")                                  # personal clearance, a reviewer
        status, page = browser.get("/-/factledger/user?app=mealkit&user=priya")
        assert status == 200 and "Bengaluru" in page
        status, text = browser.get("/-/factledger/user.json?app=mealkit&user=priya")
        assert status == 200
        data = json.loads(text)
        assert {f["value"] for f in data["facts"]} == expected
        status, home = browser.get("/-/factledger/")
        assert status == 200 and "priya" in home
        status, timeline = browser.get("/-/factledger/timeline?app=mealkit&user=priya&predicate=home_city")
        assert status == 200 and "Pune" in timeline


def test_datasette_own_pages_are_not_served_for_a_postgresql_ledger_and_the_page_says_so(pg_ledger):
    location, _ = pg_ledger
    with serving("--db", location) as browser:
        browser.sign_in("rao")                                  # full clearance: SQL would be theirs
        status, home = browser.get("/-/factledger/")
        assert status == 200 and "SQL pages: SQLite ledgers only" in home
        assert 'href="/None"' not in home
        for path in ("/web_view", "/web_view/events", "/postgres/events?sql=select+1"):
            assert browser.get(path)[0] == 404, path                # no database of the ledger's
        assert browser.get("/_memory?sql=select+1")[0] == 403      # Datasette's own, empty: no SQL either


def test_pages_read_the_standby_and_an_action_writes_the_primary(pg_ledger, replicated):
    primary, standby = replicated
    location, on_standby = pg_ledger
    with serving("--db", location, "--read-db", on_standby) as browser:
        browser.sign_in("rao")
        status, page = browser.get("/-/factledger/user?app=mealkit&user=priya")
        assert status == 200 and "Bengaluru" in page
        status, review = browser.get("/-/factledger/review")
        assert status == 200
        hold = re.search(r'name="hold_id" value="([^"]+)"', review)
        assert hold, review[:2000]
        status, _ = browser.post("/-/factledger/review/reject", {"hold_id": hold.group(1), "reason": "noise"},
                                 token_from="/-/factledger/review")
        assert status == 200
        standby.catch_up()
        with Ledger(location, read_only=True) as on_primary, Ledger(on_standby, read_only=True) as replica:
            assert on_primary.head() == replica.head()
            assert [e["type"] for e in on_primary.stream_log()][-1] == "CandidateRejected"


def test_every_page_and_an_erasure_work_on_postgresql(replicated):
    """Each reading page of the plugin, then an erasure of a session, on a PostgreSQL ledger of
    its own (in process, Datasette's client): what the SQLite tests check of the pages, once here."""
    from tests.web.helpers import Client, web
    from tests.web.test_web_access import PAGES

    primary, _standby = replicated
    location = primary.location("web_pages")
    fill(location)
    client = Client(web(location))
    try:
        client.sign_in("rao")
        with Ledger(location, read_only=True) as ledger:
            bengaluru = next(f["fact_id"] for f in ledger.facts("mealkit", "priya") if f["value"] == "Bengaluru")
        for path in PAGES + [f"/-/factledger/fact?id={bengaluru}"]:
            page = client.get(path)
            assert page.status_code == 200 and "That did not work" not in page.text, (path, page.text[-800:])
        from tests.web.test_web_actions import finished

        integrity = finished(client, client.get("/-/factledger/integrity?run=1"))
        assert 'id="verify-ok"' in integrity and 'id="replay-ok"' in integrity
        scope = {"app": "mealkit", "user": "priya", "kind": "session", "target": "meal-2",
                 "reason": "user request", "ticket": "DPO-114", "confirm": "yes"}
        done = client.post("/-/factledger/erase/commit", scope)
        assert done.status_code == 200 and "Forgotten: session" in done.text, done.text[-800:]
        priya = client.get("/-/factledger/user?app=mealkit&user=priya").text
        assert "Pune" in priya and "Bengaluru" not in priya
        assert "DPO-114" in client.get("/-/factledger/erasures").text
    finally:
        client.close()
    with Ledger(location, read_only=True) as ledger:
        assert ledger.verify()["ok"]
