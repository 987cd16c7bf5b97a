"""The web timeline decides per fact, not from the key's first row (issue 47, class 3).

A registry change can give one key's facts different sensitivity classes: `employer` recorded
`normal`, then the registry makes it `health` and a newer value is recorded so.  The timeline once
took the key's level from its first row and showed the newer health value to a `normal` viewer.
The property draws random registry changes between statements and checks every viewer level:
no value of a fact above the viewer's clearance is on the page's rows or in its pictures.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("datasette", reason="the web view is the optional `ui` extra")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from factledger.ledger import Ledger, make_candidate  # noqa: E402
from factledger.ledger.registry.predicates import SENSITIVITIES, default_registry_path  # noqa: E402
from factledger.web import reading  # noqa: E402
from factledger.web.actors import Actor, hash_password  # noqa: E402
from factledger.web.timeline import transaction_time_svg, valid_time_svg  # noqa: E402
from tests.conftest import MovableClock  # noqa: E402

APP, USER = "shop", "kim"
VALUES = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay"]


def registry_with(folder: Path, level: str) -> Path:
    """The packaged registry with `employer` of sensitivity `level`."""
    text = Path(default_registry_path()).read_text(encoding="utf-8")
    text, n = re.subn(r'(\[predicates\.employer\]\ncardinality = "one"\nsensitivity = )"\w+"',
                      rf'\1"{level}"', text)
    assert n == 1
    path = folder / f"registry-{level}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def viewer(level: str) -> Actor:
    return Actor(f"reader-{level}", level, "viewer", hash_password("pw", iterations=1000))


def write(path: Path, steps: list[tuple[str, int]]) -> dict[str, set[str]]:
    """Each step states a value under a registry giving `employer` that level; value -> the
    levels its facts were recorded at."""
    clock = MovableClock("2026-09-01T00:00:00Z")
    said: dict[str, set[str]] = {}
    for n, (level, which) in enumerate(steps):
        value = VALUES[which]
        with Ledger(path, registry=registry_with(path.parent, level), clock=clock, create=True) as ledger:
            ledger.observe(make_candidate(app=APP, user=USER, predicate="employer", value=value,
                                          quote=f"I work at {value}", session=f"s{n}", evidence_event=f"s{n}-e1",
                                          said_at=f"2026-08-{n + 1:02d}T10:00:00Z"))
            clock.tick(60)
            for fact in ledger.history(APP, USER, predicate="employer"):
                said.setdefault(fact["value"], set()).add(fact["sensitivity"])
    return said


def shown(path: Path, level: str) -> str | None:
    """The timeline's rows and pictures for a viewer at `level` as one text; None when refused."""
    with Ledger(path, clock=MovableClock("2026-10-01T00:00:00Z")) as ledger:
        try:
            rows, withheld = reading.key_history(ledger, viewer(level), APP, USER, "user", "employer")
        except reading.Withheld:
            return None
        now = ledger.clock()
        marks = reading.key_erasures(ledger, APP, USER, {r["fact_id"] for r in rows})
        return repr(rows) + valid_time_svg(rows, marks, now) + transaction_time_svg(rows, marks, now)


def test_a_newer_health_value_under_a_registry_change_is_not_shown_to_a_normal_viewer(tmp_path):
    path = tmp_path / "ledger.db"
    write(path, [("normal", 0), ("health", 1)])
    page = shown(path, "normal")
    assert page is not None and "Acme" in page and "Globex" not in page
    assert "Globex" in shown(path, "health")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(SENSITIVITIES), st.integers(0, len(VALUES) - 1)),
                min_size=1, max_size=6))
def test_no_value_above_the_viewer_is_on_the_timeline_whatever_the_registry_did(tmp_path_factory, steps):
    path = tmp_path_factory.mktemp("timeline") / "ledger.db"
    said = write(path, steps)
    levels = list(SENSITIVITIES)
    for level in levels:
        page = shown(path, level)
        # a value said again after a change can have a fact at each level: shown if one is cleared
        cleared = {v for v, found in said.items() if any(levels.index(s) <= levels.index(level) for s in found)}
        hidden = set(said) - cleared
        if page is None:
            assert not cleared
            continue
        for value in hidden:
            assert value not in page, (level, value, said)
