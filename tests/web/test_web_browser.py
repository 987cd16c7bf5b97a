"""The web view in a real browser: headless Chromium (the system's, driven by Selenium through the
system chromedriver; nothing is downloaded) against `factledger serve` in a subprocess.

A reviewer signs in, opens a user, looks at the timeline and a fact, accepts a held candidate,
erases the session that moved the user to Bengaluru and sees Pune return, and runs the integrity
checks.  Screenshots of each step are saved under the test's tmp dir (`screens/`).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("datasette", reason="the web view is the optional `ui` extra")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the test extra")

from selenium.common.exceptions import StaleElementReferenceException, WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from factledger.ledger import Ledger, make_candidate  # noqa: E402
from tests.web.helpers import HELD_VALUE, PASSWORDS, actors_toml, fill, wait_until_serving  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
MISSING = "no system Chromium and chromedriver (apt-get install chromium chromium-driver; .ci/run does)"
if not (CHROMIUM and CHROMEDRIVER) and os.environ.get("FACTLEDGER_REQUIRE_BROWSER"):
    raise RuntimeError(MISSING + ", and FACTLEDGER_REQUIRE_BROWSER is set (CI must run this test)")
pytestmark = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason=MISSING)
BROWSER_ARGS = ("--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1360,960")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    db = tmp_path / "ledger.db"
    fill(db)
    actors = tmp_path / "actors.toml"
    actors.write_text(actors_toml())
    port = free_port()
    factledger = Path(sys.executable).parent / "factledger"
    env = dict(os.environ, FACTLEDGER_UI_SECRET="browser-test-secret")
    process = subprocess.Popen([str(factledger), "--db", str(db), "serve", "--port", str(port),
                                "--actors", str(actors)], env=env, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(process, base)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


def follow_click(browser, element) -> None:
    """Click a link or a submit button and wait for the next page (the old one goes stale).
    Chromedriver reports a node that left the document either as stale or, mid-navigation, as
    "does not belong to the document": both mean the next page has replaced it."""
    old = browser.find_element(By.TAG_NAME, "html")
    element.click()

    def replaced(_driver) -> bool:
        try:
            old.is_enabled()
        except (StaleElementReferenceException, WebDriverException):
            return True
        return False

    WebDriverWait(browser, 30).until(replaced)


def sign_in(browser, base: str, name: str) -> None:
    browser.get(base + "/-/factledger/login")
    browser.find_element(By.ID, "username").send_keys(name)
    browser.find_element(By.ID, "password").send_keys(PASSWORDS[name])
    follow_click(browser, browser.find_element(By.ID, "sign-in"))


def test_a_reviewer_works_through_the_ledger_in_a_browser(server, browser, tmp_path):
    screens = tmp_path / "screens"
    screens.mkdir()

    def shot(name: str) -> None:
        browser.save_screenshot(str(screens / f"{name}.png"))

    def text() -> str:
        return browser.find_element(By.TAG_NAME, "main").text

    def follow(element) -> None:
        follow_click(browser, element)

    browser.get(server + "/-/factledger/")
    assert "Sign in to see this page" in text()
    browser.get(server + "/-/factledger/login")
    browser.find_element(By.ID, "username").send_keys("rao")
    browser.find_element(By.ID, "password").send_keys(PASSWORDS["rao"])
    shot("01-sign-in")
    follow(browser.find_element(By.ID, "sign-in"))
    assert "Partitions" in browser.title
    assert "rao · reviewer · clearance health" in browser.find_element(By.TAG_NAME, "header").text
    shot("02-partitions")

    follow(browser.find_element(By.LINK_TEXT, "priya"))
    facts = browser.find_element(By.ID, "facts").text
    assert "Bengaluru" in facts and "Pune" not in facts
    shot("03-user-page")
    browser.execute_script("document.getElementById('valid_at').value = '2026-09-01'")
    follow(browser.find_element(By.XPATH, "//button[text()='Show']"))
    facts = browser.find_element(By.ID, "facts").text
    assert "Pune" in facts and "Bengaluru" not in facts
    shot("03b-user-valid-at")
    follow(browser.find_element(By.LINK_TEXT, "now"))

    row = browser.find_element(By.XPATH, "//table[@id='facts']//tr[td[2][text()='home_city']]")
    follow(row.find_element(By.LINK_TEXT, "timeline"))
    assert browser.find_element(By.CSS_SELECTOR, "#valid-time svg").is_displayed()
    assert "Pune" in browser.find_element(By.ID, "valid-time").text
    shot("04-timeline")

    follow(browser.find_element(By.XPATH, "//table[@id='intervals']//a[text()='Pune']"))
    assert "replaced by" in browser.find_element(By.ID, "related").text
    shot("05-fact-page")

    browser.get(server + "/-/factledger/review")
    held = browser.find_element(By.XPATH, f"//table[@id='held']//tr[contains(., '{HELD_VALUE}')]")
    assert held.find_element(By.CSS_SELECTOR, "td.suggestions").is_displayed()     # review help
    assert browser.find_element(By.XPATH, "//h2[text()='Contradictions']").is_displayed()
    assert Select(held.find_element(By.NAME, "predicate")).first_selected_option.get_attribute("value") == ""
    held.find_element(By.XPATH, ".//select[@name='predicate']/option[@value='favorite_cuisine']").click()
    held.find_element(By.XPATH, ".//input[@aria-label='reason to accept']").send_keys("a cuisine she named")
    shot("06-review-queue")
    follow(held.find_element(By.CSS_SELECTOR, "button.accept"))
    assert f"accepted favorite_cuisine = {HELD_VALUE} for mealkit/priya" in browser.find_element(By.ID, "done").text
    assert "No held candidates" in text()
    shot("07-accepted")

    browser.get(server + "/-/factledger/user?app=mealkit&user=priya")
    assert HELD_VALUE in browser.find_element(By.ID, "facts").text
    follow(browser.find_element(By.XPATH, "//tr[td[1][text()='meal-2']]//a[contains(., 'erase')]"))
    browser.find_element(By.ID, "reason").send_keys("user asked to forget the move")
    browser.find_element(By.ID, "ticket").send_keys("DPO-2026-114")
    follow(browser.find_element(By.ID, "plan"))
    assert "Dry run: nothing was changed" in text() and "Bengaluru" not in text()
    shot("08-erasure-plan")
    browser.find_element(By.ID, "confirm").click()
    follow(browser.find_element(By.ID, "commit"))
    assert "Forgotten: session" in browser.find_element(By.ID, "receipt").text
    assert "under ticket DPO-2026-114" in browser.find_element(By.ID, "receipt").text
    shot("09-erasure-receipt")

    follow(browser.find_element(By.LINK_TEXT, "priya's facts now"))
    facts = browser.find_element(By.ID, "facts").text
    assert "Pune" in facts and "Bengaluru" not in facts
    assert "Bengaluru" not in browser.page_source
    shot("10-earlier-value-back")
    row = browser.find_element(By.XPATH, "//table[@id='facts']//tr[td[2][text()='home_city']]")
    follow(row.find_element(By.LINK_TEXT, "timeline"))
    assert "reinstated after erasure" in browser.find_element(By.ID, "valid-time").text
    shot("10b-timeline-after-erasure")

    browser.get(server + "/-/factledger/integrity")
    follow(browser.find_element(By.ID, "run"))       # answers at once; the page reloads itself until done
    WebDriverWait(browser, 60).until(lambda b: b.find_elements(By.ID, "verify-ok"))
    assert browser.find_element(By.ID, "verify-ok").is_displayed()
    assert browser.find_element(By.ID, "replay-ok").is_displayed()
    shot("11-integrity")

    browser.get(server + "/-/factledger/erasures")
    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#receipts th")]
    cells = browser.find_elements(By.XPATH, "//table[@id='receipts']//tr[2]/td")
    assert cells[headers.index("ticket")].text == "DPO-2026-114"
    browser.find_element(By.ID, "ticket").send_keys("DPO-2026-114")
    follow(browser.find_element(By.ID, "find-ticket"))
    assert "1 receipt filed under ticket DPO-2026-114" in browser.find_element(By.ID, "ticket-filter").text
    follow(browser.find_element(By.LINK_TEXT, "record"))
    assert "DPO-2026-114" in text()
    shot("12-erasure-record")
    assert len(list(screens.glob("*.png"))) == 14


def test_a_reviewer_accepts_rejects_and_resolves_with_no_choice_made_for_them(server, browser, tmp_path):
    """Issue 29: every select and verdict starts unchosen; a predicate of another sensitivity is
    a second, confirmed step; each confirmation names the predicate, the value, the user and a seq."""
    db = tmp_path / "ledger.db"
    with Ledger(db) as ledger:
        for predicate, value, event in (("shoe_size", "39", "m12-e1"), ("fav_colour", "teal", "m12-e2")):
            ledger.observe(make_candidate(app="mealkit", user="priya", predicate=predicate, value=value,
                                          quote=f"about {value}", session="meal-12", evidence_event=event,
                                          said_at="2026-10-30T11:00:00Z"))
    screens = tmp_path / "screens"
    screens.mkdir()
    sign_in(browser, server, "rao")

    def row(predicate: str):
        # by the predicate's name: a value such as "39" can also be part of a row's time
        return browser.find_element(By.XPATH, f"//table[@id='held']//tr[.//strong[text()='{predicate}']]")

    def done() -> str:
        return browser.find_element(By.ID, "done").text

    browser.get(server + "/-/factledger/review")
    for select in browser.find_elements(By.CSS_SELECTOR, "#held select[name='predicate']"):
        assert Select(select).first_selected_option.get_attribute("value") == ""
    assert not [r for r in browser.find_elements(By.CSS_SELECTOR, "#disputes input[type='radio']") if r.is_selected()]
    shoe = row("shoe_size")
    options = [o.text for o in Select(shoe.find_element(By.NAME, "predicate")).options]
    assert "blood_pressure (health: asks to confirm)" in options and "household_size (normal)" in options
    shoe.find_element(By.XPATH, ".//input[@aria-label='reason to accept']").send_keys("closest reading")
    select = shoe.find_element(By.NAME, "predicate")
    shoe.find_element(By.CSS_SELECTOR, "button.accept").click()         # no predicate chosen: not sent
    assert browser.execute_script("return arguments[0].validity.valueMissing", select)
    assert browser.current_url.endswith("/-/factledger/review")
    Select(select).select_by_value("blood_pressure")
    follow_click(browser, shoe.find_element(By.CSS_SELECTOR, "button.accept"))
    question = browser.find_element(By.ID, "question").text
    assert "shoe_size = 39" in question and "health data" in question
    assert not browser.find_element(By.ID, "confirm-sensitivity").is_selected()
    browser.save_screenshot(str(screens / "01-confirm-sensitivity.png"))
    browser.find_element(By.ID, "confirm-sensitivity").click()
    follow_click(browser, browser.find_element(By.ID, "confirm-accept"))
    assert "accepted blood_pressure = 39 for mealkit/priya" in done() and " seq" in done()
    browser.save_screenshot(str(screens / "02-accepted.png"))

    teal = row("fav_colour")
    teal.find_element(By.XPATH, ".//input[@aria-label='reason to reject']").send_keys("a colour, not a fact")
    follow_click(browser, teal.find_element(By.CSS_SELECTOR, "button.reject"))
    assert "rejected fav_colour = teal for mealkit/priya" in done() and "CandidateRejected at seq" in done()

    dispute = browser.find_element(By.XPATH, "//table[@id='disputes']//tr[contains(., 'household_size')]")
    dispute.find_element(By.XPATH, ".//input[@aria-label='reason to settle']").send_keys("two of them, said by her")
    dispute.find_element(By.XPATH, ".//input[@name='verdict'][@value='reject']").click()
    browser.save_screenshot(str(screens / "03-verdict.png"))
    follow_click(browser, dispute.find_element(By.CSS_SELECTOR, "button[type='submit']"))
    assert "rejected household_size = 4 for mealkit/priya" in done() and "2 is the current value" in done()
    assert "DisputeResolved at seq" in done()
    browser.save_screenshot(str(screens / "04-resolved.png"))
