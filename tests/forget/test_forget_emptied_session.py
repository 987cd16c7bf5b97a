"""`forget --session S` after fact-wide forgets took everything S still said is an honest no-op.

A predicate, sensitivity, fact or retention forget can take every event a session still had
(an `observe`d session has no `SessionIngested` of its own).  The session is then not unknown:
it was erased, by another request.  Its hash is recorded in that request's `Redacted` event
(`emptied_session_hashes`), so a later `forget --session S` is a no-op receipt, exit 0, saying
which receipt erased it, while a session the ledger never heard of is still an error.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger, LedgerError
from factledger.ledger.audit.presence import already_erased_at
from tests.conftest import MovableClock, cand

P = ["--app", "app", "--user", "u1"]


@pytest.fixture
def db(tmp_path) -> str:
    path = tmp_path / "ledger.db"
    clock = MovableClock("2026-09-01T00:00:00Z")
    with Ledger(path, clock=clock, create=True) as ledger:
        ledger.observe(cand(predicate="diet", value="vegan", session="s1", said_at="2026-08-01"))
        ledger.observe(cand(predicate="home_city", value="Pune", session="s2", said_at="2026-08-02"))
        ledger.observe(cand(predicate="allergy", value="peanuts", session="s2", event="e2",
                            said_at="2026-08-02"))
    return str(path)


def invoke(db: str, *args: str):
    return CliRunner(env={"FACTLEDGER_NOW": "2026-11-01T00:00:00Z"}).invoke(cli, ["--db", db, *args])


def test_a_session_a_predicate_forget_emptied_is_already_erased(db):
    first = json.loads(invoke(db, "forget", *P, "--predicate", "diet", "--reason", "r", "--yes",
                              "--json").stdout)
    again = invoke(db, "forget", *P, "--session", "s1", "--reason", "r", "--yes", "--json")
    assert again.exit_code == 0, again.output
    receipt = json.loads(again.stdout)
    assert receipt["noop"] is True and receipt["counts"]["events"] == 0
    assert receipt["already_erased_at"] == first["redaction_seq"]
    assert f"already erased at seq {first['redaction_seq']}" in again.stderr
    text = invoke(db, "forget", *P, "--session", "s1", "--reason", "r", "--yes", "-t")
    assert text.exit_code == 0 and "nothing left to forget" in text.stdout
    listed = json.loads(invoke(db, "erasures", *P, "--session", "s1", "--json").stdout)
    assert [r["redaction_seq"] for r in listed] == [first["redaction_seq"]]


def test_a_session_emptied_over_two_fact_wide_forgets(db):
    with Ledger(db) as ledger:
        ledger.forget("app", "u1", predicate="home_city", reason="r")
        assert ledger.forget("app", "u1", session="s2", reason="r", dry_run=True)["plan"]   # peanuts left
        second = ledger.forget("app", "u1", sensitivity=ledger.registry.resolve("allergy").sensitivity,
                               reason="r")
        receipt = ledger.forget("app", "u1", session="s2", reason="r")
        assert receipt["noop"] is True
        assert already_erased_at(ledger._conn, "app", "u1", session="s2") == second["redaction_seq"]
        assert ledger.verify()["ok"] and ledger.replay_differences() == []


def test_a_session_never_heard_of_is_still_an_error(db):
    invoke(db, "forget", *P, "--predicate", "diet", "--reason", "r", "--yes")
    result = invoke(db, "forget", *P, "--session", "s7", "--reason", "r", "--yes")
    assert result.exit_code == 1 and "no session 's7'" in result.stderr
    with Ledger(db) as ledger, pytest.raises(LedgerError, match="no session"):
        ledger.forget("app", "u1", session="s7", reason="r")


def test_an_emptied_session_is_not_a_forgotten_one(db):
    """Only a session forgotten as such is refused later; one a fact-wide forget emptied may be
    said again (the user asked to forget a value, not the conversation)."""
    invoke(db, "forget", *P, "--predicate", "diet", "--reason", "r", "--yes")
    with Ledger(db) as ledger:
        assert not ledger.erased.is_forgotten_session("app", "u1", "s1")
        ledger.observe(cand(predicate="home_city", value="Mumbai", session="s1", event="e9",
                            said_at="2026-08-05"))
        receipt = ledger.forget("app", "u1", session="s1", reason="r")
        assert receipt["noop"] is False and receipt["counts"]["facts"] == 1
