"""The timeline charts as a browser lays them out (issue 46): the title above the plot, every
label inside the picture, the ticks carrying dates.  Headless Chromium against `factledger serve`
of the demo ledger; a screenshot is saved under the test's tmp dir (`timeline.png`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

pytest.importorskip("datasette", reason="the web view is the optional `ui` extra")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the test extra")


from factledger.web.timeline import transaction_time_svg, valid_time_svg  # noqa: E402
from tests.web.helpers import wait_until_serving  # noqa: E402
from tests.web.test_web_browser import CHROMEDRIVER, CHROMIUM, MISSING, free_port  # noqa: E402

FACTLEDGER = Path(sys.executable).parent / "factledger"
DATE = re.compile(r"\d{4}-\d\d-\d\d")

# Every box the layout check needs, measured by the browser (getBoundingClientRect)
MEASURE = """
const out = [];
for (const figure of document.querySelectorAll('figure')) {
  const svg = figure.querySelector('svg');
  const box = r => { const b = r.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  out.push({id: figure.id, svg: box(svg),
            title: box(svg.querySelector('.axis-title')),
            plot: [...svg.querySelectorAll('rect.bar, line.axis')].map(box),
            marks: [...svg.querySelectorAll('.mark')].map(box),
            texts: [...svg.querySelectorAll('text')].map(t => ({box: box(t), text: t.textContent})),
            ticks: [...svg.querySelectorAll('text.tick')].map(t => t.textContent)});
}
return out;
"""


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory):
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip(MISSING)
    folder = tmp_path_factory.mktemp("demo")
    db = folder / "f.db"
    made = subprocess.run([str(FACTLEDGER), "demo", "--out", str(db)], capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr
    port = free_port()
    env = dict(os.environ, FACTLEDGER_UI_SECRET="browser-test-secret")
    process = subprocess.Popen([str(FACTLEDGER), "--db", str(db), "serve", "--port", str(port), "--public",
                                "--public-clearance", "personal"], env=env, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(process, base)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


def inside(inner, outer, slack=0.5) -> bool:
    return (inner[0] >= outer[0] - slack and inner[1] >= outer[1] - slack
            and inner[2] <= outer[2] + slack and inner[3] <= outer[3] + slack)


@pytest.mark.parametrize("predicate", ["home_city", "diet"])
def test_the_timeline_charts_lay_out_whole(demo_server, browser, tmp_path, predicate):
    browser.get(f"{demo_server}/-/factledger/timeline?app=mealkit&user=priya&subject=user&predicate={predicate}")
    figures = browser.execute_script(MEASURE)
    browser.save_screenshot(str(tmp_path / f"timeline-{predicate}.png"))
    assert {f["id"] for f in figures} == {"valid-time", "transaction-time"}
    for figure in figures:
        title, svg = figure["title"], figure["svg"]
        # the title sits above the plot and above every mark (an erasure's label among them)
        assert all(title[3] <= box[1] for box in figure["plot"] + figure["marks"]), figure["id"]
        # nothing drawn leaves the picture: values, marks, ticks
        outside = [t["text"] for t in figure["texts"] if not inside(t["box"], svg)]
        assert not outside, (figure["id"], outside)
        # every tick names a date
        assert figure["ticks"] and all(DATE.search(t) for t in figure["ticks"]), figure["ticks"]
    assert (tmp_path / f"timeline-{predicate}.png").stat().st_size > 0


def _row(fact_id, value, valid_from, recorded_from, recorded_to=None, state="current"):
    return {"fact_id": fact_id, "value": value, "basis": "stated", "state": state, "valid_from": valid_from,
            "valid_to": None, "recorded_from": recorded_from, "recorded_to": recorded_to}


def test_a_short_span_ticks_with_date_and_time_and_a_long_value_is_wrapped_whole():
    long = "metoprolol tartrate 50 mg twice daily with food, and a second line of instructions"
    rows = [_row("f1", "Pune", "2026-11-20T09:00:00.000000Z", "2026-11-20T09:05:00.000000Z"),
            _row("f2", long, "2026-11-20T09:30:00.000000Z", "2026-11-20T09:35:00.000000Z")]
    now = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
    for svg in (valid_time_svg(rows, [], now), transaction_time_svg(rows, [], now)):
        ticks = re.findall(r'class="tick">(.*?)</text>', svg)
        assert len(ticks) == 5 and all(DATE.match(t) and "UTC" in t for t in ticks)
        label = re.findall(r'class="lane-label">(.*?)</text>', svg)[1]
        assert " ".join(re.findall(r">([^<>]+)</tspan>", label)) == long      # every word, over lines
