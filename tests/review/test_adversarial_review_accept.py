"""A reviewer's accept of a held candidate of any kind is stamped and closes its item (issue 32, class 6).

Accepting a held candidate appends the events its decision causes with the hold id (and the
reviewer) on them: that is what closes the queue item, lets `why` say who accepted it, and ties
the held candidate to its statement for a forget.  `FactRetracted` and `FactNegated` had no
`hold_id`, so a held negation accepted into a retraction left the item open and unsigned, and a
second accept appended a second statement.  A statement and a series reading were stamped already;
the three kinds are held to the same promise here, through the command line.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger
from tests.conftest import MovableClock, cand

P = ["--app", "app", "--user", "u1"]
# the held predicates are unknown to the registry (normal until placed): placing one under a
# personal or health predicate is confirmed by naming the class
CONFIRM = {"home_city": ["--confirm-sensitivity", "personal"], "weight": ["--confirm-sensitivity", "health"]}
# a misspelt predicate that is held, the registry predicate the reviewer accepts it as, the value,
# negated, and what the accept decides
KINDS = {
    "statement": ("hometwon", "home_city", "Lisbon", False, "supersede"),
    "negation": ("hometwon", "home_city", "Pune", True, "retract"),
    "series reading": ("wieght", "weight", "71 kg", False, "insert"),
}


def invoke(db: str, *args: str):
    return CliRunner(env={"FACTLEDGER_NOW": "2026-11-01T00:00:00Z"}).invoke(cli, ["--db", db, *args])


@pytest.fixture
def db(tmp_path) -> str:
    path = tmp_path / "ledger.db"
    with Ledger(path, clock=MovableClock("2026-10-01T00:00:00Z"), create=True) as ledger:
        ledger.observe(cand(predicate="home_city", value="Pune", said_at="2026-08-01T00:00:00Z"))
    return str(path)


def hold(db: str, held_as: str, value: str, negated: bool) -> str:
    quote = f"well, not {value} any more" if negated else f"well, {value}"   # what observe checks
    args = ["observe", *P, "--predicate", held_as, "--value", value, "--quote", quote,
            "--session", "s2", "--event-id", "e9", "--said-at", "2026-09-01T00:00:00Z"]
    decided = json.loads(invoke(db, *args, *(["--negated"] if negated else []), "--json").stdout)
    assert decided["decision"] == "hold", decided
    (item,) = json.loads(invoke(db, "review", "--json").stdout)
    return item["item"]


@pytest.mark.parametrize("kind", list(KINDS))
def test_an_accept_closes_its_item_signed_and_a_second_is_refused(db, kind):
    held_as, predicate, value, negated, decision = KINDS[kind]
    item = hold(db, held_as, value, negated)
    accepted = invoke(db, "review", "accept", item, "--as", predicate, *CONFIRM[predicate], "--by", "ana",
                      "--reason", "a typo", "--json")
    assert accepted.exit_code == 0, accepted.output
    outcome = json.loads(accepted.stdout)
    assert outcome["decision"] == decision, outcome

    assert json.loads(invoke(db, "review", "--json").stdout) == []        # nothing left open
    stamped = [e for e in json.loads(invoke(db, "log", "--json").stdout)
               if (e["body"] or {}).get("hold_id") == item and e["type"] != "CandidateHeld"]
    assert stamped and stamped[0]["seq"] == outcome["seqs"][0]          # the statement, first
    assert {e["seq"] for e in stamped} <= set(outcome["seqs"])
    assert all(e["body"]["reviewed_by"] == "ana" for e in stamped)

    why = invoke(db, "why", outcome["fact_id"], "-t").stdout
    assert "by ana: a typo" in why, why

    again = invoke(db, "review", "accept", item, "--as", predicate, *CONFIRM[predicate], "--by", "bo")
    assert again.exit_code == 1
    assert again.stderr.startswith("Error: ") and "already accepted" in again.stderr, again.stderr
    assert [e["seq"] for e in json.loads(invoke(db, "log", "--json").stdout)][-1] == outcome["seqs"][-1]


def test_an_accepted_negation_decided_again_after_a_forget_stays_closed_and_signed(db):
    """Forgetting the statement it retracted: re-decision records the negation again (as a
    rejection, nothing to retract), still the reviewer's accept: the item does not reopen."""
    item = hold(db, "hometwon", "Pune", True)
    assert invoke(db, "review", "accept", item, "--as", "home_city", *CONFIRM["home_city"], "--by", "ana").exit_code == 0
    assert invoke(db, "forget", *P, "--session", "s1", "--reason", "asked", "--yes").exit_code == 0
    assert json.loads(invoke(db, "review", "--json").stdout) == []
    again = [e for e in json.loads(invoke(db, "log", "--json").stdout)
             if (e["body"] or {}).get("hold_id") == item and e["type"] != "CandidateHeld"
             and e["body"].get("restates") is not None]
    assert [(e["type"], e["body"]["reviewed_by"]) for e in again] == [("CandidateRejected", "ana")]
    refused = invoke(db, "review", "accept", item, "--as", "home_city", *CONFIRM["home_city"])
    assert refused.exit_code == 1 and refused.stderr.startswith("Error: "), refused.output
