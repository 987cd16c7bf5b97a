"""A reviewer's judgement outlives forgets that make its dispute vanish and come back.

The history: Bengaluru said in s2 (day 1) and again in s4 (day 3) is one fact; Pune, said in s1
on day 2 and learnt after both, splits it (docs/decisions.md, "Late arrivals"): Bengaluru holds
again from day 3, under the fact's id.  An agent's Pune (s3, day 4, inferred) disputes it, and a
reviewer rejects Bengaluru.  Forget s4: Pune (day 2) is the latest value and the agent's Pune
only reinforces it, so the dispute and the judgement do not arise.  Forget s1: Bengaluru (day 1)
is current again, the agent disputes it, and the reviewer's rejection must apply again, as in a
ledger that never heard s1 or s4.  That needs the judgement to be kept, settling nothing, while
its dispute does not arise (`reviewer_unsettled`), and to name the fact its statement first
observed (Bengaluru's s2 observation), which every re-decision keeps.

(An earlier history reached the same states through a value said at the instant of Pune's first
statement, which a forget of that statement made late; a value said between two statements of
one fact now splits the fact in any order, so it no longer shows this.)
"""

from __future__ import annotations

import orjson

from tests.conftest import cand, values

H = "home_city"


def history(ledger, clock) -> str:
    """Feeds the history; returns Bengaluru's fact id."""
    bengaluru = ledger.observe(cand(predicate=H, value="Bengaluru", session="s2", event="e2",
                                    said_at="2026-09-01")).fact_id
    ledger.observe(cand(predicate=H, value="Bengaluru", session="s4", event="e4", said_at="2026-09-03"))
    assert ledger.observe(cand(predicate=H, value="Pune", session="s1", event="e1",
                               said_at="2026-09-02")).reason == "split"
    guess = ledger.observe(cand(predicate=H, value="Pune", session="s3", event="e3", said_at="2026-09-04",
                                author="agent", basis="inferred"))
    assert guess.decision == "dispute"
    ledger.resolve(bengaluru, False, "dr-k", "asked the user")
    clock.tick()
    return bengaluru


def bodies(ledger, type_: str) -> list[dict]:
    return [orjson.loads(b) for (b,) in ledger._conn.execute(
        "SELECT body FROM events WHERE type = ? AND body IS NOT NULL ORDER BY seq", (type_,))]


def check(ledger):
    assert ledger.verify()["ok"]
    assert ledger.replay_differences() == []


def test_the_judgement_applies_again_when_its_dispute_comes_back(ledger, clock):
    bengaluru = history(ledger, clock)
    assert values(ledger) == {("user", H): [("Pune", "current", "inferred")]}

    ledger.forget("app", "u1", session="s4", reason="r")
    clock.tick()
    assert values(ledger) == {("user", H): [("Pune", "current", "stated")]}
    kept = bodies(ledger, "DisputeResolved")
    assert [(b["rule"], b["fact_id"], b["loser_ids"], b.get("winner_id"), b["subject"], b["predicate"])
            for b in kept] == [("reviewer_unsettled", bengaluru, [], None, "user", H)]
    check(ledger)

    ledger.forget("app", "u1", session="s1", reason="r")
    assert values(ledger) == {("user", H): [("Pune", "current", "inferred")]}
    rejected = ledger.history("app", "u1", predicate=H)
    assert [(f["fact_id"], f["state"]) for f in rejected if f["value"] == "Bengaluru"][-1] == (
        bengaluru, "rejected")
    applied = bodies(ledger, "DisputeResolved")
    assert [(b["rule"], b["loser_ids"], b["resolved_by"]) for b in applied] == [
        ("reviewer", [bengaluru], "dr-k")]
    check(ledger)


def test_the_kept_judgement_goes_with_the_statement_it_judged(ledger, clock):
    """Forgetting the session that first said Bengaluru (the observation of the fact the
    judgement names) takes the reviewer's kept judgement of that fact, reason and all."""
    history(ledger, clock)
    ledger.forget("app", "u1", session="s4", reason="r")
    clock.tick()
    ledger.forget("app", "u1", session="s2", reason="r")
    assert values(ledger) == {("user", H): [("Pune", "current", "stated")]}
    assert bodies(ledger, "DisputeResolved") == []
    assert not ledger._conn.execute("SELECT 1 FROM events WHERE body LIKE '%asked the user%'").fetchone()
    check(ledger)


def test_a_fact_wide_forget_takes_the_kept_judgement_too(ledger, clock):
    """Forgetting Pune's fact takes every statement of it, among them none of Bengaluru's; then
    Bengaluru is current again and the reviewer's rejection applies only if its dispute arises:
    with the agent's Pune gone with the fact, it does not, and the judgement stays kept."""
    bengaluru = history(ledger, clock)
    ledger.forget("app", "u1", session="s4", reason="r")
    clock.tick()
    pune = ledger.facts("app", "u1")[0]["fact_id"]
    ledger.forget("app", "u1", fact=pune, reason="r")
    assert values(ledger) == {("user", H): [("Bengaluru", "current", "stated")]}
    assert ledger.facts("app", "u1")[0]["fact_id"] == bengaluru
    assert [b["rule"] for b in bodies(ledger, "DisputeResolved")] == ["reviewer_unsettled"]
    check(ledger)
    ledger.forget("app", "u1", fact=bengaluru, reason="r")
    assert values(ledger) == {}
    assert bodies(ledger, "DisputeResolved") == []
    check(ledger)
