"""The web tests' shared fixture: one headless Chromium a test (the system's, through the system
chromedriver; tests/web/test_web_browser.py finds them and says what to install)."""

from __future__ import annotations

import pytest


@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    from tests.web.test_web_browser import BROWSER_ARGS, CHROMEDRIVER, CHROMIUM

    options = Options()
    options.binary_location = CHROMIUM
    for arg in BROWSER_ARGS:
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(10)
    yield driver
    driver.quit()
