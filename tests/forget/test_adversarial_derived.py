"""Class 1 of issue 32: records derived from a statement outlive its forget.

* A rewording counted towards a fact (by meaning, or by form with meaning on: `already_counted` in
  the session that counted it, or a reinforcement from another) is not the forgotten value:
  `forget --fact` of that fact decides it again, to what a ledger that never heard the first
  wording holds (a fact of its own), and its first record is scrubbed.
* A negation learnt late that split a fact retracts the part split off, an event the log holds
  before the `FactSplit` naming that part: `forget --predicate` (`--sensitivity`, `--fact`,
  retention) takes it with the fact, so its quote leaves the log and no later statement is ended
  by it.

Each compares the ledger with one fed only what survives (`tests/forget/test_forget_sequences.py`'s
`state`), and reads the log's bytes.
"""

from __future__ import annotations

import pytest

from factledger.ledger import Ledger
from tests.conftest import MovableClock, cand
from tests.forget.test_forget_sequences import state


def _feed(ledger, clock, said) -> None:
    for predicate, value, session, day, negated in said:
        ledger.observe(cand(predicate=predicate, value=value, session=session, event=f"{session}-{day}",
                            said_at=f"2026-09-{day:02d}T10:00:00Z", negated=negated,
                            quote=f"{'not ' if negated else ''}{value}, said in {session}"))
        clock.tick()


def _fresh(tmp_path, said) -> dict:
    clock = MovableClock()
    with Ledger(tmp_path / "fresh.db", clock=clock, create=True) as fresh:
        _feed(fresh, clock, said)
        return state(fresh)


def _log(ledger) -> str:
    return "\n".join(b for (b,) in ledger._conn.execute("SELECT body FROM events WHERE body IS NOT NULL"))


def _fact_of(ledger, value: str) -> str:
    return next(f["fact_id"] for f in ledger.facts("app", "u1", include_sensitive=True) if f["value"] == value)


REWORDINGS = [
    # same session: the rewording is `already_counted` (a rejection carrying the fact's id)
    pytest.param([("allergy", "peanuts", "s0", 1, False), ("allergy", "peanut", "s0", 2, False)],
                 "same_meaning", id="same-meaning-counted"),
    pytest.param([("home_city", "Sao Paulo", "s0", 1, False), ("home_city", "São Paulo", "s0", 2, False)],
                 "same_form", id="same-form-counted"),
    # another session: the rewording reinforces the fact
    pytest.param([("allergy", "peanuts", "s0", 1, False), ("allergy", "peanut", "s1", 2, False)],
                 "same_meaning", id="same-meaning-reinforced"),
    pytest.param([("home_city", "Sao Paulo", "s0", 1, False), ("home_city", "São Paulo", "s1", 2, False)],
                 "same_form", id="same-form-reinforced"),
]


@pytest.mark.parametrize("said, rule", REWORDINGS)
def test_forgetting_a_fact_decides_its_rewording_again(tmp_path, meaning, said, rule):
    clock = MovableClock()
    with Ledger(tmp_path / "full.db", clock=clock, create=True) as full:
        _feed(full, clock, said)
        rules = [r for (r,) in full._conn.execute("SELECT json_extract(body, '$.rule') FROM events")]
        assert rule in rules                                  # the live ledger counted the rewording
        first, second = said[0][1], said[1][1]
        full.forget("app", "u1", fact=_fact_of(full, first), reason="erasure request")
        assert state(full) == _fresh(tmp_path, said[1:])      # as if the first wording was never said
        assert [f["value"] for f in full.facts("app", "u1", include_sensitive=True)] == [second]
        recorded = full._conn.execute(
            "SELECT type, json_extract(body, '$.restates') FROM events WHERE body IS NOT NULL"
            " AND type = 'FactObserved'").fetchall()
        assert recorded == [("FactObserved", 2)]              # recorded again, from its first record (seq 2)
        assert full._conn.execute("SELECT body FROM events WHERE seq = 2").fetchone() == (None,)
        assert f"{first}, said in" not in _log(full)
        assert full.verify()["ok"] and full.replay_differences() == []


def test_a_rewording_counted_with_meaning_on_is_a_fact_of_its_own_decided_with_it_off(tmp_path, monkeypatch):
    """Re-decision follows today's setting: counted by meaning, decided again with meaning off,
    "peanut" is a fact (as in a ledger fed it with meaning off), not lost with "peanuts"."""
    monkeypatch.delenv("FACTLEDGER_EMBEDDER", raising=False)
    said = REWORDINGS[0].values[0]
    clock = MovableClock()
    with Ledger(tmp_path / "full.db", clock=clock, create=True) as full:
        _feed(full, clock, said)
        monkeypatch.setenv("FACTLEDGER_EMBEDDER", "off")
        full.forget("app", "u1", fact=_fact_of(full, "peanuts"), reason="erasure request")
        assert state(full) == _fresh(tmp_path, said[1:])
        assert [f["value"] for f in full.facts("app", "u1", include_sensitive=True)] == ["peanut"]
        assert full.verify()["ok"] and full.replay_differences() == []


# "Pune" said on 09-01 (s0) and 09-10 (s1), then "not Pune" said 09-05 (s2), learnt last: it splits
# the fact, retracting the part said before it.
SPLIT = [("home_city", "Pune", "s0", 1, False), ("home_city", "Pune", "s1", 10, False),
         ("home_city", "Pune", "s2", 5, True)]
LATER = ("home_city", "Pune", "s3", 3, False)         # said before the negation, learnt after the forget


@pytest.mark.parametrize("scope", [{"predicate": "home_city"}, {"sensitivity": "personal"}, {"fact": None}])
def test_a_negation_that_split_a_fact_goes_with_it(tmp_path, scope):
    clock = MovableClock()
    with Ledger(tmp_path / "full.db", clock=clock, create=True) as full:
        _feed(full, clock, SPLIT)
        assert "FactSplit" in {t for (t,) in full._conn.execute("SELECT type FROM events")}
        if "fact" in scope:
            scope = {"fact": _fact_of(full, "Pune")}
        receipt = full.forget("app", "u1", reason="erasure request", **scope)
        assert receipt["counts"]["facts"] == 2               # the fact and the part split off it
        assert "not Pune" not in _log(full)                  # no rejection re-recorded in its place
        _feed(full, clock, [LATER])
        assert state(full) == _fresh(tmp_path, [LATER])      # "Pune" current, ended by nothing
        assert [(f["value"], f["status"]) for f in full.facts("app", "u1", include_sensitive=True)] == [
            ("Pune", "current")]
        assert full.verify()["ok"] and full.replay_differences() == []


def test_retention_takes_the_negation_that_split_an_expired_fact(tmp_path):
    clock = MovableClock()
    with Ledger(tmp_path / "full.db", clock=clock, create=True) as full:
        _feed(full, clock, SPLIT)
        receipt = full.retain(apply=True, older_than=30, predicate="home_city")
        assert receipt["counts"]["facts"] == 2
        assert "not Pune" not in _log(full) and "Pune" not in _log(full)
        assert state(full) == {"open": [], "valid": []}
        assert full.verify()["ok"] and full.replay_differences() == []
