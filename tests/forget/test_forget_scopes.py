"""Every forget scope on a real ledger file: what goes, what comes back, and rebuild == live."""

from __future__ import annotations

import orjson
import pytest

from factledger.ledger import LedgerError
from tests.conftest import cand, values


def settle(ledger):
    """After every forget: the chain verifies and the live tables equal a rebuild from the log."""
    assert ledger.verify()["ok"], ledger.verify()
    assert ledger.replay_differences() == []


def bodies(ledger, type_=None):
    rows = ledger._conn.execute("SELECT type, body FROM events ORDER BY seq").fetchall()
    return [(t, orjson.loads(b)) for t, b in rows if b is not None and (type_ is None or t == type_)]


def moved(ledger, clock):
    """Pune (session s1), then Bengaluru (session s2)."""
    ledger.observe(cand(predicate="city", value="Pune", quote="we're in Pune", session="s1",
                        said_at="2026-08-30T09:00:00Z"))
    clock.tick()
    ledger.observe(cand(predicate="home_city", value="Bengaluru", quote="We moved to Bengaluru",
                        session="s2", said_at="2026-09-30T18:00:00Z"))
    clock.tick()


def test_session_forget_makes_pune_current_again(ledger, clock):
    moved(ledger, clock)
    before_redaction = "2026-11-01T00:00:01.500000Z"
    assert values(ledger)[("user", "home_city")] == [("Bengaluru", "current", "stated")]
    receipt = ledger.forget("app", "u1", session="s2", reason="user request")
    assert values(ledger)[("user", "home_city")] == [("Pune", "current", "stated")]
    # Nothing after the forgotten statement survives on the key: nothing is recorded again, and
    # Pune, current again, is marked as reinstated by this erasure.
    reinstated = bodies(ledger, "FactReinstated")
    assert len(reinstated) == 1 and reinstated[0][1]["cause"] == receipt["redaction_seq"]
    assert receipt["counts"]["restated"] == 0
    assert receipt["counts"]["events"] == 2          # the observation and the supersession it caused
    history = ledger.history("app", "u1")
    assert {h["value"] for h in history} == {"Pune"}
    as_of = ledger.facts("app", "u1", as_of=before_redaction, include_sensitive=True)
    assert [f["value"] for f in as_of] == ["Pune"]
    assert ledger.erased.is_forgotten_session("app", "u1", "s2")
    assert not ledger.erased.is_forgotten_session("app", "u1", "s1")
    settle(ledger)


def test_session_that_only_reinforced_lowers_confidence(ledger, clock):
    ledger.observe(cand(value="vegetarian", session="s1"))
    alone = ledger.facts("app", "u1")[0]["confidence"]
    clock.tick()
    ledger.observe(cand(value="vegetarian", session="s2", said_at="2026-09-01T00:00:00Z"))
    assert ledger.facts("app", "u1")[0]["confidence"] > alone
    clock.tick()
    receipt = ledger.forget("app", "u1", session="s2", reason="r")
    fact = ledger.facts("app", "u1")[0]
    assert fact["confidence"] == alone and fact["confirmed_by"] == "s1"
    assert receipt["compensating_seqs"] == []
    settle(ledger)


def test_fact_forget_of_current_value_reinstates_earlier(ledger, clock):
    moved(ledger, clock)
    bengaluru = ledger.facts("app", "u1")[0]["fact_id"]
    ledger.forget("app", "u1", fact=bengaluru, reason="wrong")
    assert values(ledger) == {("user", "home_city"): [("Pune", "current", "stated")]}
    assert ledger.why(ledger.facts("app", "u1")[0]["fact_id"])["fact"]["value"] == "Pune"
    with pytest.raises(LedgerError):
        ledger.why(bengaluru)
    settle(ledger)


def test_fact_forget_of_only_value_leaves_key_empty(ledger, clock):
    ledger.observe(cand(predicate="home_city", value="Pune", session="s1"))
    fact = ledger.facts("app", "u1")[0]["fact_id"]
    clock.tick()
    receipt = ledger.forget("app", "u1", fact=fact, reason="r")
    assert values(ledger) == {} and ledger.history("app", "u1") == []
    assert receipt["counts"]["facts"] == 1
    again = ledger.forget("app", "u1", fact=fact, reason="r")   # safe to repeat
    assert again["noop"] and again["counts"]["events"] == 0
    settle(ledger)


def test_fact_forget_takes_reinforcements_from_other_sessions(ledger, clock):
    ledger.observe(cand(value="vegan", session="s1"))
    ledger.observe(cand(value="vegan", session="s2", said_at="2026-09-01T00:00:00Z"))
    fact = ledger.facts("app", "u1")[0]["fact_id"]
    clock.tick()
    receipt = ledger.forget("app", "u1", fact=fact, reason="r")
    assert receipt["counts"]["events"] == 2 and values(ledger) == {}
    assert not any("vegan" in orjson.dumps(b).decode() for _, b in bodies(ledger))
    settle(ledger)


def test_predicate_scope(ledger, clock):
    moved(ledger, clock)
    ledger.observe(cand(value="vegetarian", session="s1"))
    clock.tick()
    receipt = ledger.forget("app", "u1", predicate="city", reason="r")   # alias resolves
    assert values(ledger) == {("user", "diet"): [("vegetarian", "current", "stated")]}
    assert receipt["counts"]["facts"] == 2 and receipt["compensating_seqs"] == []
    settle(ledger)


def test_sensitivity_scope(ledger, clock):
    ledger.observe(cand(predicate="allergy", value="peanuts", session="s1"))
    ledger.observe(cand(predicate="medication_dose", value="metoprolol 25 mg", session="s1"))
    ledger.observe(cand(value="vegetarian", session="s1"))
    clock.tick()
    ledger.forget("app", "u1", sensitivity="health", reason="health data request")
    assert values(ledger) == {("user", "diet"): [("vegetarian", "current", "stated")]}
    assert not ledger.erased.is_forgotten_session("app", "u1", "s1")     # the session itself stays
    settle(ledger)


def test_user_scope_pseudonymises_and_clears_every_projection(ledger, clock):
    moved(ledger, clock)
    ledger.observe(cand(user="u2", value="vegan"))
    clock.tick()
    receipt = ledger.forget("app", "u1", reason="erase me")
    assert values(ledger) == {}
    users = {r[0] for r in ledger._conn.execute("SELECT user FROM events")}
    assert "u1" not in users and any(u.startswith("erased:") for u in users)
    for table in ledger.projector.tables:
        assert ledger._conn.execute(f"SELECT COUNT(*) FROM {table} WHERE user = 'u1'").fetchone()[0] == 0
    assert values(ledger, user="u2") == {("user", "diet"): [("vegan", "current", "stated")]}
    assert receipt["counts"]["pseudonymised"] == 3
    assert ledger.erased.is_forgotten_session("app", "u1", "s1")          # its sessions stay forgotten
    assert ledger.forget("app", "u1", reason="again")["noop"]
    assert ledger.forget("app", "u1", session="s1", reason="again")["noop"]
    settle(ledger)


def test_user_scope_after_a_session_forget_pseudonymises_old_scrubs_too(ledger, clock):
    moved(ledger, clock)
    ledger.forget("app", "u1", session="s2", reason="r")
    clock.tick()
    ledger.forget("app", "u1", reason="r")
    assert ledger._conn.execute("SELECT COUNT(*) FROM events WHERE user = 'u1'").fetchone()[0] == 0
    settle(ledger)


def test_retention_by_registry_retention_days(ledger, clock):
    clock.set("2026-11-01T00:00:00Z")
    ledger.observe(cand(predicate="support_ticket", value="T-1", session="s1",
                        said_at="2026-06-01T00:00:00Z"))
    ledger.observe(cand(predicate="support_ticket", value="T-2", session="s2",
                        said_at="2026-10-20T00:00:00Z"))
    ledger.observe(cand(user="u2", predicate="support_ticket", value="T-3", session="s3",
                        said_at="2026-05-01T00:00:00Z"))
    clock.tick()
    dry = ledger.retain()
    assert dry["dry_run"] and len(dry["plan"]) == 2
    assert {v for (_, p), vs in values(ledger).items() for v, *_ in vs} == {"T-1", "T-2"}
    receipt = ledger.retain(apply=True)
    assert receipt["partitions"] == 2 and receipt["counts"]["facts"] == 2
    assert values(ledger) == {("user", "support_ticket"): [("T-2", "current", "stated")]}
    assert values(ledger, user="u2") == {}
    assert len(ledger.erasures()) == 1                              # one receipt
    settle(ledger)


def test_retention_older_than_for_a_class(ledger, clock):
    clock.set("2026-11-01T00:00:00Z")
    ledger.observe(cand(predicate="blood_pressure", value="148/92 mmHg", session="s1",
                        said_at="2026-07-10T00:00:00Z"))
    ledger.observe(cand(predicate="blood_pressure", value="131/85 mmHg", session="s2",
                        said_at="2026-10-30T00:00:00Z"))
    ledger.observe(cand(value="vegan", session="s1", said_at="2026-07-10T00:00:00Z"))
    clock.tick()
    ledger.retain(apply=True, older_than=30, sensitivity="health")
    assert values(ledger) == {("user", "blood_pressure"): [("131/85 mmHg", "current", "stated")],
                              ("user", "diet"): [("vegan", "current", "stated")]}
    settle(ledger)
    with pytest.raises(LedgerError):
        ledger.retain(older_than=30)                                # needs a class
    with pytest.raises(LedgerError):
        ledger.retain(predicate="diet")                             # no retention_days


def test_unknown_fact_and_session_are_errors_and_change_nothing(ledger, clock):
    moved(ledger, clock)
    head = ledger.head()
    with pytest.raises(LedgerError, match="no session"):
        ledger.forget("app", "u1", session="nope", reason="r")
    with pytest.raises(LedgerError, match="no fact"):
        ledger.forget("app", "u1", fact="nope", reason="r")
    with pytest.raises(LedgerError, match="at most one"):
        ledger.forget("app", "u1", session="s1", fact="x", reason="r")
    with pytest.raises(LedgerError, match="reason"):
        ledger.forget("app", "u1", session="s1", reason=" ")
    with pytest.raises(LedgerError, match="predicate"):
        ledger.forget("app", "u1", predicate="shoe_size", reason="r")
    fact = ledger.facts("app", "u1")[0]["fact_id"]
    with pytest.raises(LedgerError, match="does not belong"):
        ledger.forget("app", "u2", fact=fact, reason="r")
    assert ledger.head() == head


def test_dry_run_changes_nothing(ledger, clock):
    moved(ledger, clock)
    head = ledger.head()
    receipt = ledger.forget("app", "u1", session="s2", reason="r", dry_run=True)
    assert receipt["dry_run"] and receipt["plan"][0]["events"] == 2
    assert ledger.head() == head and values(ledger)[("user", "home_city")][0][0] == "Bengaluru"
    assert ledger.erasures() == []


def test_forgetting_an_accepted_held_candidate_takes_the_held_copy_too(ledger, clock):
    ledger.observe(cand(predicate="hometown_zz", value="Secretville", session="s1"))
    hold = ledger.held("app", "u1")[0]["hold_id"]
    fact = ledger.review_accept(hold, "home_city", confirm_sensitivity="personal").fact_id
    clock.tick()
    receipt = ledger.forget("app", "u1", fact=fact, reason="r")
    assert receipt["counts"]["events"] == 2
    assert not [b for _, b in bodies(ledger) if "Secretville" in orjson.dumps(b).decode()]
    assert ledger.held("app", "u1", status=None) == []          # the queue item does not reopen
    settle(ledger)


@pytest.mark.parametrize("by", ["session", "fact"])
def test_a_dispute_against_a_forgotten_fact_goes_with_it(ledger, clock, by):
    pune = ledger.observe(cand(predicate="home_city", value="Pune", session="s1",
                               said_at="2026-09-01"))
    clock.tick()
    ledger.observe(cand(predicate="home_city", value="Mumbai", session="s2", said_at="2026-09-02",
                        author="agent", basis="inferred"))
    clock.tick()
    scope = {"session": "s1"} if by == "session" else {"fact": pune.fact_id}
    ledger.forget("app", "u1", reason="r", **scope)
    assert values(ledger) == {("user", "home_city"): [("Mumbai", "current", "inferred")]}
    assert not [b for _, b in bodies(ledger, "FactDisputed") if b["disputes"] == pune.fact_id]
    settle(ledger)
