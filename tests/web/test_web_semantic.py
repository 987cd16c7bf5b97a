"""The review page shows the semantic review help: the registry predicates closest to each held
candidate (the first one chosen in its accept form), and the contradicting pairs of open facts,
declared or inferred by meaning, within the viewer's clearance."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("datasette", reason="the web view is the optional `ui` extra")

from factledger.ledger import Ledger  # noqa: E402
from factledger.ledger.registry.predicates import default_registry_path, parse_registry  # noqa: E402
from factledger.web.config import WebConfig  # noqa: E402
from factledger.web.server import build  # noqa: E402
from tests.conftest import cand  # noqa: E402
from tests.web.helpers import Client, actors  # noqa: E402

SNACKS = (b'\n[predicates.snack]\ncardinality = "many"\nsensitivity = "personal"\n'
          b'description = "A snack the user likes to eat"\n'
          b'[predicates.avoided_snack]\ncardinality = "many"\nsensitivity = "personal"\n'
          b'description = "A snack the user must not eat"\n')


@pytest.fixture
def site(tmp_path, clock, meaning):
    registry = parse_registry(default_registry_path().read_bytes() + SNACKS)
    path = tmp_path / "ledger.db"
    ops = dict(app="ops", user="team")
    with Ledger(path, registry=registry, clock=clock, create=True) as ledger:
        ledger.observe(cand(predicate="residence_town", value="Pune", quote="we live in Pune", session="h1"))
        ledger.observe(cand(predicate="deploy.region", value="us-east", quote="we moved everything to us-east",
                            session="d1", **ops))
        ledger.observe(cand(predicate="deploy.avoided_region", value="us-east", quote="never use us-east",
                            session="d2", **ops))
        ledger.observe(cand(predicate="snack", value="peanuts", quote="I snack on peanuts", session="s1"))
        ledger.observe(cand(predicate="avoided_snack", value="peanuts", quote="no peanuts", session="s2"))
        suggested = ledger.held()[0]["suggestions"]
    clients = []

    def client(name: str) -> Client:
        c = Client(build(WebConfig(path, registry, actors())))
        c.sign_in(name)
        clients.append(c)
        return c
    yield client, suggested
    for c in clients:
        c.close()


def table(page: str, name: str) -> str:
    found = re.search(rf'<table id="{name}">(.*?)</table>', page, re.S)
    return found.group(1) if found else ""


def test_the_review_page_shows_suggestions_and_contradictions(site):
    client, suggested = site
    page = client("rao").get("/-/factledger/review").text          # a health reviewer sees all
    held = table(page, "held")
    assert suggested and suggested[0] == "home_city"
    assert all(f'<span class="suggestion">{p}</span>' in held for p in suggested)
    # suggested, never chosen for the reviewer: the select starts on no predicate (issue 29)
    assert '<option value="" selected disabled>choose a predicate…</option>' in held
    assert held.count(" selected") == 1
    pairs = table(page, "contradictions")
    assert "deploy.region = us-east" in pairs and "deploy.avoided_region = us-east" in pairs
    assert "declared in the registry" in pairs
    assert "avoided_snack = peanuts" in pairs and "inferred by meaning" in pairs
    assert re.search(r"cosine 0\.\d\d", pairs)


def test_a_contradiction_above_clearance_is_withheld(site):
    client, _ = site
    page = client("vic").get("/-/factledger/review").text          # clearance normal
    pairs = table(page, "contradictions")
    assert "deploy.avoided_region = us-east" in pairs
    assert "peanuts" not in page and "avoided_snack" not in page
    assert re.search(r'id="withheld">\d+ items? above your clearance', page) and "personal" in page
