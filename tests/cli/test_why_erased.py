"""`why` of an erased fact answers in one shape whatever erased it (issue 46): the fact id, when,
the receipt (seq, scope kind, reason), and no value, quote or session; exit 0."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger
from tests.conftest import MovableClock, cand

SHAPE = {"fact_id", "status", "erased_at", "receipt_seq", "scope_kind", "reason", "ticket"}


@pytest.fixture
def erased(tmp_path) -> tuple[str, dict[str, str]]:
    """Facts erased by five routes: the user, a session, the fact, a predicate, a class."""
    path = str(tmp_path / "ledger.db")
    clock = MovableClock("2026-09-01T00:00:00Z")
    ids = {}
    with Ledger(path, clock=clock, create=True) as ledger:
        def observe(name, **fields):
            ids[name] = ledger.observe(cand(**fields)).fact_id
            clock.tick()
        observe("kept", predicate="home_city", value="Pune", session="s1", said_at="2026-08-01")
        observe("session", predicate="home_city", value="Bengaluru", session="s2", said_at="2026-08-20")
        observe("fact", predicate="diet", value="vegan", session="s3", said_at="2026-08-20")
        observe("predicate", predicate="email", value="priya@example.org", session="s4", said_at="2026-08-20")
        observe("sensitivity", predicate="medication", value="aspirin", session="s5", said_at="2026-08-20")
        observe("user", user="u2", predicate="diet", value="pescatarian", session="s9", said_at="2026-08-20")
        ledger.forget("app", "u1", session="s2", reason="asked by mail")
        ledger.forget("app", "u1", fact=ids["fact"], reason="asked by mail", ticket="DPO-7")
        ledger.forget("app", "u1", predicate="email", reason="asked by mail")
        ledger.forget("app", "u1", sensitivity="health", reason="asked by mail")
        ledger.forget("app", "u2", reason="asked by mail")
    return path, ids


def why(path, *args):
    return CliRunner().invoke(cli, ["--db", path, "why", *args])


VALUES = ("Bengaluru", "vegan", "priya@example.org", "aspirin", "pescatarian")


@pytest.mark.parametrize("route", ["session", "fact", "predicate", "sensitivity", "user"])
def test_why_of_an_erased_fact_has_one_shape_whatever_erased_it(erased, route):
    path, ids = erased
    done = why(path, ids[route], "--json")
    assert done.exit_code == 0, done.output
    answer = json.loads(done.stdout)
    assert set(answer) == SHAPE and answer["status"] == "erased" and answer["fact_id"] == ids[route]
    assert answer["scope_kind"] == route and answer["reason"] == "asked by mail"
    assert answer["erased_at"].startswith("2026-09-01") and answer["receipt_seq"] > 0
    text = why(path, ids[route], "-t").stdout
    assert text.splitlines()[0] == f"fact {ids[route]}: erased"
    assert f"by the receipt at seq {answer['receipt_seq']} ({route} scope" in text
    assert not any(v in done.stdout + text for v in VALUES)          # no value, whatever the route


def test_the_user_route_and_the_fact_route_answer_alike(erased):
    path, ids = erased
    by_user = json.loads(why(path, ids["user"], "--json").stdout)
    by_fact = json.loads(why(path, ids["fact"], "--json").stdout)
    assert set(by_user) == set(by_fact) == SHAPE
    assert by_fact["ticket"] == "DPO-7" and by_user["ticket"] is None
    lines = [why(path, ids[r], "-t").stdout.splitlines() for r in ("user", "fact")]
    assert [len(x) for x in lines] == [3, 3]
    assert [x[2].split(";")[0] for x in lines] == ["the ledger keeps no value, quote or session of it"] * 2


def test_a_fact_never_recorded_is_still_an_error_and_a_kept_fact_is_answered(erased):
    path, ids = erased
    unknown = why(path, "01a250be-0000-7000-8000-000000000000")
    assert unknown.exit_code == 1 and "Error:" in unknown.stderr
    kept = json.loads(why(path, ids["kept"], "--json").stdout)
    assert kept["fact"]["value"] == "Pune"
