"""Re-decision: forgetting a session leaves every key as if that session had never been said.

The worked cases pin the compensating events; the property checks, over generated histories, that
the open facts after forgetting equal those of a fresh ledger fed only the surviving statements,
and that the live tables equal a rebuild from the log.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from factledger.ledger import Ledger
from tests.conftest import MovableClock, cand, values


def types_after(ledger, seq):
    return [t for (t,) in ledger._conn.execute("SELECT type FROM events WHERE seq > ? ORDER BY seq",
                                              (seq,))]


def check(ledger):
    assert ledger.verify()["ok"]
    assert ledger.replay_differences() == []


def test_reinforcement_of_a_forgotten_fact_becomes_its_own_observation(ledger, clock):
    ledger.observe(cand(predicate="home_city", value="Pune", session="s1", said_at="2026-08-01"))
    ledger.observe(cand(predicate="home_city", value="Bengaluru", session="s2", said_at="2026-09-01"))
    ledger.observe(cand(predicate="home_city", value="Bengaluru", session="s3", said_at="2026-10-01"))
    clock.tick()
    receipt = ledger.forget("app", "u1", session="s2", reason="r")
    assert values(ledger) == {("user", "home_city"): [("Bengaluru", "current", "stated")]}
    fact = ledger.facts("app", "u1")[0]
    assert fact["session"] == "s3" and fact["said_at"].startswith("2026-10-01")
    assert types_after(ledger, receipt["redaction_seq"]) == ["FactObserved", "FactSuperseded"]
    check(ledger)


def test_backfilled_late_arrival_becomes_current_once_the_newer_value_is_gone(ledger, clock):
    ledger.observe(cand(predicate="home_city", value="Pune", session="s1", said_at="2026-08-01"))
    ledger.observe(cand(predicate="home_city", value="Bengaluru", session="s2", said_at="2026-10-01"))
    late = ledger.observe(cand(predicate="home_city", value="Mumbai", session="s3",
                               said_at="2026-09-01"))
    assert (late.decision, late.reason) == ("backfill", "backfilled")      # history, not current
    assert values(ledger) == {("user", "home_city"): [("Bengaluru", "current", "stated")]}
    clock.tick()
    ledger.forget("app", "u1", session="s2", reason="r")
    assert values(ledger) == {("user", "home_city"): [("Mumbai", "current", "stated")]}
    check(ledger)


def test_duplicate_value_merges_back_into_the_earlier_fact(ledger, clock):
    ledger.observe(cand(predicate="home_city", value="Pune", session="s1", said_at="2026-08-01"))
    ledger.observe(cand(predicate="home_city", value="Bengaluru", session="s2", said_at="2026-09-01"))
    ledger.observe(cand(predicate="home_city", value="Pune", session="s3", said_at="2026-10-01"))
    first = ledger.history("app", "u1")[0]["fact_id"]
    clock.tick()
    ledger.forget("app", "u1", session="s2", reason="r")
    facts = ledger.facts("app", "u1")
    assert [(f["value"], f["fact_id"]) for f in facts] == [("Pune", first)]
    assert facts[0]["confirmed_by"] == "s3"                      # s3 now reinforces the first Pune
    check(ledger)


def test_forgetting_the_settling_session_reopens_the_dispute(ledger, clock):
    dose = dict(predicate="medication_dose", author="document", basis="verified")
    ledger.observe(cand(value="25 mg", session="order-1", said_at="2026-07-03", **dose))
    ledger.observe(cand(predicate="medication_dose", value="50 mg", session="checkin",
                        said_at="2026-07-10"))
    ledger.observe(cand(value="50 mg", session="order-2", said_at="2026-07-12", **dose))
    assert values(ledger) == {("user", "medication_dose"): [("50 mg", "current", "verified")]}
    clock.tick()
    ledger.forget("app", "u1", session="order-2", reason="r")
    assert values(ledger) == {("user", "medication_dose"): [("25 mg", "current", "verified"),
                                                            ("50 mg", "disputed", "stated")]}
    current = [f for f in ledger.facts("app", "u1", include_sensitive=True)
               if f["status"] == "current"][0]
    disputed = [f for f in ledger.facts("app", "u1", include_sensitive=True)
                if f["status"] == "disputed"][0]
    assert current["disputes"] == [disputed["fact_id"]] and disputed["disputes"] == [current["fact_id"]]
    check(ledger)


def test_reviewer_resolution_survives_an_unrelated_forget(ledger, clock):
    dose = dict(predicate="medication_dose", author="document", basis="verified")
    ledger.observe(cand(value="25 mg", session="order-1", said_at="2026-07-03", **dose))
    challenger = ledger.observe(cand(predicate="medication_dose", value="50 mg", session="checkin",
                                     said_at="2026-07-10"))
    ledger.resolve(challenger.fact_id, True, "dr-k", "confirmed by phone")
    ledger.observe(cand(predicate="medication_dose", value="50 mg", session="later",
                        said_at="2026-07-20"))
    clock.tick()
    ledger.forget("app", "u1", session="later", reason="r")
    assert values(ledger) == {("user", "medication_dose"): [("50 mg", "current", "stated")]}
    check(ledger)


def test_a_retracted_incumbent_hands_the_key_over_in_re_decision_too(ledger, clock):
    for value, session, day, extra in (
            ("Pune", "s0", "01", {}), ("Mumbai", "s1", "02", dict(author="agent", basis="inferred")),
            ("Pune", "s2", "03", dict(negated=True)), ("Delhi", "s3", "04", {}),
            ("Delhi", "s5", "05", {})):
        ledger.observe(cand(predicate="home_city", value=value, session=session,
                            said_at=f"2026-09-{day}", **extra))
        clock.tick()
    ledger.forget("app", "u1", session="s5", reason="r")
    # Mumbai was promoted when Pune was retracted, then superseded by Delhi: one current fact.
    assert values(ledger) == {("user", "home_city"): [("Delhi", "current", "stated")]}
    check(ledger)


VALUES = {"home_city": ["Pune", "Bengaluru", "Mumbai"], "allergy": ["peanuts", "shellfish"],
          "blood_pressure": ["120/80 mmHg", "140/90 mmHg"], "medication_dose": ["25 mg", "50 mg"],
          "diet": ["vegan", "omnivore"],              # an agent's "stated" diet: validator rejects
          "hometown_zz": ["Pune", "Mumbai"]}          # unknown: held; "Pune" is accepted as home_city
statement = st.tuples(
    st.sampled_from(sorted(VALUES)), st.integers(0, 2), st.integers(0, 3),   # predicate, value, session
    st.integers(1, 28), st.sampled_from(["user", "user", "user", "document", "agent"]),
    st.sampled_from([False, False, False, True]),                           # negated
)


def _candidate(i, item):
    predicate, value, session, day, author, negated = item
    options = VALUES[predicate]
    basis = {"document": "verified", "agent": "inferred", "user": "stated"}[author]
    if predicate == "diet" and author == "agent":
        basis = "stated"                                 # preference_not_user_authored
    return cand(predicate=predicate, value=options[value % len(options)], session=f"s{session}",
                event=f"e{i}", said_at=f"2026-09-{day:02d}T10:00:00Z", author=author, basis=basis,
                negated=negated and predicate != "blood_pressure")


def _state(ledger):
    out = {}
    for f in ledger.facts("app", "u1", include_sensitive=True):
        out.setdefault((f["subject"], f["predicate"]), []).append(
            (f["value"], f["status"], f["basis"], round(f["confidence"], 6), tuple(sorted(f["disputes"] and ["d"]))))
    return {k: sorted(v) for k, v in out.items()}


def _observe(ledger, c):
    """Observe; a held "Pune" is accepted by a reviewer as home_city straight away."""
    out = ledger.observe(c)
    if out.decision == "hold" and c.value == "Pune":
        hold = ledger.held("app", "u1")[-1]["hold_id"]
        ledger.review_accept(hold, "home_city", confirm_sensitivity="personal")


H, A, D, M = "home_city", "allergy", "diet", "hometown_zz"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(statement, min_size=1, max_size=14), st.lists(st.integers(0, 3), min_size=1,
                                                               max_size=2, unique=True))
# A retracted incumbent hands the key to its challenger, which a forgotten session then superseded.
@example([(H, 0, 0, 1, "user", False), (H, 2, 1, 2, "agent", False), (H, 0, 2, 3, "user", True),
          (H, 1, 3, 4, "user", False), (H, 1, 2, 5, "user", False)], [3])
# A reinforcement of a value that is superseded, then both sessions that held it are forgotten.
@example([(A, 0, 0, 1, "user", False)] * 3 + [(H, 2, 2, 1, "user", False),
          (H, 2, 1, 1, "user", False), (H, 0, 0, 1, "user", False)], [2, 0])
# Validator rejections (an agent's stated diet) are never replayed as statements.
@example([(D, 0, 0, 1, "user", False), (D, 1, 1, 2, "agent", False), (D, 0, 2, 3, "user", False)],
         [2])
# Held candidates, one accepted by a reviewer, around a value a forgotten session superseded.
@example([(M, 0, 1, 1, "user", False), (M, 1, 2, 2, "user", False), (H, 2, 3, 3, "user", False),
          (H, 1, 0, 4, "user", False)], [0, 1])
def test_forget_sessions_equals_never_having_them(items, forgotten):
    with tempfile.TemporaryDirectory() as tmp:
        clock = MovableClock()
        candidates = [_candidate(i, item) for i, item in enumerate(items)]
        with Ledger(Path(tmp) / "a.db", clock=clock, create=True) as full, \
                Ledger(Path(tmp) / "b.db", clock=clock, create=True) as fresh:
            for c in candidates:
                _observe(full, c)
                if int(c.session[1:]) not in forgotten:
                    _observe(fresh, c)
                clock.tick()
            said = {c.session for c in candidates}
            forgotten = [s for s in forgotten if f"s{s}" in said]
            for s in forgotten:
                full.forget("app", "u1", session=f"s{s}", reason="property")
                clock.tick()
            assert _state(full) == _state(fresh)
            assert full.verify()["ok"]
            assert full.replay_differences() == []
            for s in forgotten:
                sessions = {orjson.loads(b).get("session") for (b,) in full._conn.execute(
                    "SELECT body FROM events WHERE body IS NOT NULL")}
                assert f"s{s}" not in sessions


def _session(sid, eid, ts, text):
    return {"id": sid, "appName": "app", "userId": "u1", "events": [
        {"id": eid, "author": "user", "timestamp": ts, "content": {"parts": [{"text": text}]}}]}


def test_a_quote_the_session_validator_rejected_never_becomes_a_fact(ledger, clock):
    from factledger.ledger.ingest.candidates import CandidatesExtractor
    from factledger.ledger.ingest.proposal import Proposal

    def ingest(sid, eid, ts, text, value, quote):
        ledger.ingest_session(_session(sid, eid, ts, text), extractor=CandidatesExtractor(
            [Proposal(predicate="home_city", value=value, quote=quote, evidence_event=eid)]))
        clock.tick()

    ingest("s1", "e1", 1788000000, "I live in Pune", "Pune", "I live in Pune")
    ingest("s2", "e2", 1788100000, "nice weather today", "Mumbai", "I moved to Mumbai")  # invented
    ingest("s3", "e3", 1788200000, "I moved to Bengaluru", "Bengaluru", "I moved to Bengaluru")
    ledger.forget("app", "u1", session="s3", reason="r")
    assert values(ledger) == {("user", "home_city"): [("Pune", "current", "stated")]}
    check(ledger)


def test_a_many_key_records_again_only_the_value_that_depended_on_the_forgotten(ledger, clock):
    """A `many` key's decisions only look at open facts of the same value: forgetting one value
    re-decides that value's later statements and leaves the key's other values where they were."""
    for value, session in (("peanuts", "s1"), ("shellfish", "s2"), ("peanuts", "s3")):
        ledger.observe(cand(predicate="allergy", value=value, session=session, event=f"{session}-e"))
        clock.tick()
    receipt = ledger.forget("app", "u1", session="s1", reason="r")
    assert receipt["counts"]["restated"] == 1                   # s3's reinforcement, now its own fact
    scrubbed = [seq for (seq,) in ledger._conn.execute("SELECT seq FROM events WHERE body IS NULL")]
    assert scrubbed == [1, 3]
    assert values(ledger) == {("user", "allergy"): [("peanuts", "current", "stated"),
                                                    ("shellfish", "current", "stated")]}
    check(ledger)
