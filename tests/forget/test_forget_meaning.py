"""Re-decision after a forget dedups by meaning as the live ledger does (the semantic extra).

With meaning on, the live ledger asks `ledger.semantic.dedup` before the decision table: another
wording of an open value ("peanut" for "peanuts" on a `many` key; "São Paulo" for "Sao Paulo" on
a `one` key) reinforces it.  Re-decision asks the same question through the same function, and a
`many` key's cut is the whole key (a decision then looks beyond the values equal to the
candidate's), so a forget ends where a ledger fed only the survivors, with meaning on, would.
"""

from __future__ import annotations

import pytest

from factledger.ledger import Ledger
from tests.conftest import MovableClock, cand
from tests.forget.test_forget_sequences import state

PEANUTS = [("allergy", "peanuts", "s0", "2026-09-01"), ("allergy", "peanuts", "s1", "2026-09-02"),
           ("allergy", "peanut", "s2", "2026-09-03")]
SAO_PAULO = [("home_city", "Pune", "s0", "2026-09-01"), ("home_city", "Sao Paulo", "s1", "2026-09-02"),
             ("home_city", "São Paulo", "s2", "2026-09-03")]


def fed(ledger, clock, said):
    for i, (predicate, value, session, day) in enumerate(said):
        ledger.observe(cand(predicate=predicate, value=value, session=session, event=f"e{i}", said_at=day,
                            quote=f"I said {value}"))
        clock.tick()


@pytest.mark.parametrize("said, rule", [(PEANUTS, "same_meaning"), (SAO_PAULO, "same_form")])
def test_forgetting_the_first_wording_leaves_what_the_survivors_say(tmp_path, meaning, said, rule):
    clock = MovableClock()
    with Ledger(tmp_path / "full.db", clock=clock, create=True) as full:
        fed(full, clock, said)
        rules = [r for (r,) in full._conn.execute("SELECT json_extract(body, '$.rule') FROM events"
                                                 " WHERE type = 'FactReinforced'")]
        assert rule in rules                          # the live ledger merged the rewording
        full.forget("app", "u1", session="s0", reason="r")
        survivors = [s for s in said if s[2] != "s0"]
        clock_fresh = MovableClock()
        with Ledger(tmp_path / "fresh.db", clock=clock_fresh, create=True) as fresh:
            for i, (predicate, value, session, day) in enumerate(said):
                if session != "s0":
                    fresh.observe(cand(predicate=predicate, value=value, session=session, event=f"e{i}",
                                       said_at=day, quote=f"I said {value}"))
                clock_fresh.tick()
            assert state(full) == state(fresh)
        open_ = full._conn.execute("SELECT value, reinforcements FROM facts_current").fetchall()
        assert open_ == [(survivors[0][1], 1)]
        assert full.verify()["ok"] and full.replay_differences() == []


def test_with_meaning_off_a_rewording_stays_its_own_fact_after_a_forget(tmp_path, monkeypatch):
    """Re-decision follows today's setting, as the live ledger does: recorded with meaning on,
    decided again with it off, "peanut" is a fact of its own (as in a ledger fed the survivors
    with meaning off), and nothing of it is lost."""
    monkeypatch.delenv("FACTLEDGER_EMBEDDER", raising=False)
    clock = MovableClock()
    with Ledger(tmp_path / "full.db", clock=clock, create=True) as full:
        fed(full, clock, PEANUTS)
        monkeypatch.setenv("FACTLEDGER_EMBEDDER", "off")
        full.forget("app", "u1", session="s0", reason="r")
        assert sorted(f["value"] for f in full.facts("app", "u1", include_sensitive=True)) == ["peanut", "peanuts"]
        assert full.verify()["ok"] and full.replay_differences() == []
