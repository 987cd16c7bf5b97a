"""A ledger with something to review, the web view's Datasette over it, and a synchronous client.

The ledger: the bundled meal-kit and clinical sessions ingested (Pune, then Bengaluru; health
readings and a medication dose), one held candidate (an unknown predicate, a cuisine by its value), one open dispute.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from factledger.ledger import Ledger, make_candidate
from factledger.ledger.registry.predicates import load_registry
from factledger.web.actors import Actor, hash_password
from factledger.web.config import WebConfig
from factledger.web.server import build

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sessions"
HEALTH_VALUE = "metoprolol tartrate 50 mg"
HELD_VALUE = "ethiopian"          # a word of favorite_cuisine's vocabulary, held under an unknown name
PASSWORDS = {"rao": "rao-secret", "vic": "vic-secret", "pat": "pat-secret", "hal": "hal-secret"}
ACTORS = {  # name: (clearance, role); a low iteration count keeps the tests quick
    "rao": ("health", "reviewer"), "vic": ("normal", "viewer"), "pat": ("personal", "reviewer"),
    "hal": ("health", "viewer")}


def actors(iterations: int = 1000) -> dict[str, Actor]:
    return {name: Actor(name, clearance, role, hash_password(PASSWORDS[name], iterations=iterations))
            for name, (clearance, role) in ACTORS.items()}


def actors_toml(iterations: int = 1000) -> str:
    return "".join(f'[actors.{a.name}]\npassword = "{a.password}"\nclearance = "{a.clearance}"\n'
                   f'role = "{a.role}"\n\n' for a in actors(iterations).values())


def fill(path: Path, clock=None) -> None:
    with Ledger(path, clock=clock, create=True) as ledger:
        for folder in ("meal-kit", "clinical"):
            for file in sorted((EXAMPLES / folder).glob("*.json")):
                ledger.ingest_session(json.loads(file.read_text()), extractor="patterns")
        ledger.observe(make_candidate(
            app="mealkit", user="priya", predicate="snack", value=HELD_VALUE, quote="I love ethiopian food",
            session="meal-9", evidence_event="m9-e1", said_at="2026-10-30T09:00:00Z"))
        ledger.observe(make_candidate(
            app="mealkit", user="priya", predicate="household_size", value="2", quote="there are two of us",
            session="meal-10", evidence_event="m10-e1", said_at="2026-10-30T10:00:00Z"))
        ledger.observe(make_candidate(
            app="mealkit", user="priya", predicate="household_size", value="4", quote="orders look like a family of four",
            session="meal-11", evidence_event="m11-e1", said_at="2026-10-31T10:00:00Z", author="agent"))


def web(path: Path, clock=None, public: bool = False, public_clearance: str = "normal"):
    config = WebConfig(path, load_registry(None), actors(), public=public, public_clearance=public_clearance)
    if clock is not None:
        config.clock = clock
    return build(config)


class Client:
    """Datasette's own test client (`datasette.client`), driven from synchronous tests."""

    def __init__(self, datasette):
        self.ds = datasette
        self.loop = asyncio.new_event_loop()
        self.cookies: dict[str, str] = {}

    def close(self) -> None:
        self.loop.close()

    def request(self, method: str, path: str, **kwargs):
        kwargs.setdefault("cookies", dict(self.cookies))
        response = self.loop.run_until_complete(getattr(self.ds.client, method)(path, **kwargs))
        return response

    def get(self, path: str, **kwargs):
        return self.request("get", path, **kwargs)

    def csrftoken(self) -> str:
        """A CSRF token and its cookie, as a browser gets them from any page with a form."""
        page = self.get("/-/factledger/login")
        if "ds_csrftoken" in page.cookies:
            self.cookies["ds_csrftoken"] = page.cookies["ds_csrftoken"]
        return re.search(r'name="csrftoken" value="([^"]+)"', page.text).group(1)

    def post(self, path: str, data: dict, csrf: bool = True, **kwargs):
        data = dict(data)
        if csrf:
            data["csrftoken"] = self.csrftoken()
        return self.request("post", path, data=data, **kwargs)

    def sign_in(self, name: str, password: str | None = None):
        response = self.post("/-/factledger/login", {"username": name, "password": password or PASSWORDS[name]})
        if "ds_actor" in response.cookies:
            self.cookies["ds_actor"] = response.cookies["ds_actor"]
        return response


def wait_until_serving(process, base: str) -> None:
    """Until a `factledger serve` subprocess answers its sign-in page (readiness, not a timing
    assertion); its stderr in the failure if it exits first."""
    import time
    import urllib.request

    for _ in range(300):
        try:
            urllib.request.urlopen(base + "/-/factledger/login", timeout=2)
            return
        except OSError:
            if process.poll() is not None:
                raise AssertionError(f"factledger serve exited: {process.stderr.read()}") from None
            time.sleep(0.1)
    raise AssertionError("factledger serve did not answer in 30 s")
