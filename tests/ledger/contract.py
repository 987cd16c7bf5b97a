"""The ledger's contract, for every backend: decisions and projections, replay, isolation,
forgetting, verify and tampering, and the guard triggers.

Collected through `tests/ledger/test_ledger_contract.py`, whose fixture `make` opens a `Ledger` on a
fresh location of the backend under test (`make(location)` reopens one), and `raw(ledger, sql)`
runs a statement on that backend with the append-only guard dropped first (a tamperer's write).
The same tests, unchanged, on SQLite and on PostgreSQL: the rows, outcomes and receipts agree.
"""

from __future__ import annotations

import pytest

from factledger.ledger import LedgerError
from tests.conftest import cand

# What the decision table makes of `decide_a_story`, on every backend.
STORY = [("insert", "new_value", "new_key", 1), ("supersede", "superseded", "newer_value", 2),
         ("reject", "already_counted", "same_value", 1), ("backfill", "backfilled", "backfill", 2),
         ("insert", "new_value", "new_key", 1), ("hold", "unknown_predicate", "validator", 1)]


def decide_a_story(ledger, clock, user="u1"):
    outcomes = []
    for value, said in (("Paris", "2026-01-01"), ("Berlin", "2026-02-01"), ("Berlin", "2026-03-01"),
                        ("Rome", "2025-01-01")):
        clock.tick()
        outcomes.append(ledger.observe(cand(user=user, predicate="home_city", value=value, said_at=said)))
    clock.tick()
    outcomes.append(ledger.observe(cand(user=user, predicate="diet", value="vegan")))
    outcomes.append(ledger.observe(cand(user=user, predicate="zq_not_in_registry", value="x")))
    return [(o.decision, o.reason, o.rule, len(o.seqs)) for o in outcomes]


def facts_of(ledger, user="u1"):
    return sorted((f["predicate"], f["value"], f["status"], f["confidence"])
                  for f in ledger.facts("app", user, include_sensitive=True))


def test_the_decision_table_decides_the_same(make, clock):
    assert decide_a_story(make(), clock) == STORY


def test_projections_fold_in_the_appending_transaction_and_replay_matches(make, clock):
    ledger = make()
    story = decide_a_story(ledger, clock)
    assert [s[0] for s in story] == ["insert", "supersede", "reject", "backfill", "insert", "hold"]
    assert facts_of(ledger) == [("diet", "vegan", "current", pytest.approx(0.9, abs=0.1)),
                                ("home_city", "Berlin", "current", pytest.approx(0.9, abs=0.1))]
    history = ledger.history("app", "u1", subject="user", predicate="home_city")
    assert {h["value"] for h in history} == {"Berlin", "Paris", "Rome"}   # Rome: history, said first
    assert len(ledger.held()) == 1
    assert ledger.replay_differences() == []
    before = facts_of(ledger)
    assert ledger.replay() == ledger.head()[0]
    assert facts_of(ledger) == before
    assert ledger.replay_differences() == []


def test_a_batch_is_one_transaction(make, clock):
    ledger = make()
    with pytest.raises(LedgerError):
        ledger.observe_many([cand(value="vegan"), cand(value="x", said_at="not a time")])
    assert ledger.head()[0] == 0 and facts_of(ledger) == []
    ledger.observe_many([cand(value="vegan"), cand(predicate="home_city", value="Oslo")])
    assert ledger.head()[0] == 2 and len(facts_of(ledger)) == 2


def test_partitions_are_isolated(make, clock):
    ledger = make()
    decide_a_story(ledger, clock, user="u1")
    ledger.observe(cand(user="u2", predicate="home_city", value="Lima"))
    assert [f[1] for f in facts_of(ledger, "u2")] == ["Lima"]
    assert "Lima" not in [f[1] for f in facts_of(ledger, "u1")]
    ledger.observe(cand(user="u2", predicate="diet", value="pescatarian"))
    assert [f["value"] for f in ledger.recall("app", "u2", "diet").selected] == ["pescatarian"]
    assert "pescatarian" not in ledger.recall("app", "u1", "diet").text
    assert "vegan" in ledger.recall("app", "u1", "diet").text


def test_forgetting_a_user_scrubs_the_log_and_the_projections(make, clock):
    ledger = make()
    decide_a_story(ledger, clock, user="u1")
    ledger.observe(cand(user="u2", predicate="home_city", value="Lima"))
    receipt = ledger.forget("app", "u1", reason="erasure request")
    assert not receipt["noop"] and receipt["counts"]["events"] >= 6
    assert facts_of(ledger, "u1") == [] and [f[1] for f in facts_of(ledger, "u2")] == ["Lima"]
    leftovers = ledger._conn.execute(
        "SELECT COUNT(*) FROM events WHERE body LIKE ? OR body LIKE ?", ("%Berlin%", "%Paris%")).fetchone()[0]
    assert leftovers == 0
    assert ledger.verify()["ok"] and ledger.replay_differences() == []
    assert ledger.forget("app", "u1", reason="again")["noop"]


def test_forgetting_a_session_redecides_what_is_left(make, clock):
    ledger = make()
    ledger.observe(cand(predicate="home_city", value="Paris", session="s1", said_at="2026-01-01"))
    clock.tick()
    ledger.observe(cand(predicate="home_city", value="Berlin", session="s2", said_at="2026-02-01"))
    ledger.forget("app", "u1", session="s2", reason="wrong session")
    assert [f[1] for f in facts_of(ledger)] == ["Paris"]
    assert ledger.verify()["ok"] and ledger.replay_differences() == []


def test_a_value_said_between_two_statements_splits_the_fact_and_a_forget_undoes_it(make, clock):
    """The split reads the fact's statements back from the log (by seq) on every backend."""
    ledger = make()
    for value, session, said in (("Lyon", "s1", "2026-01-05"), ("Lyon", "s2", "2026-01-20"),
                                 ("Goa", "s3", "2026-01-10")):
        clock.tick()
        outcome = ledger.observe(cand(predicate="home_city", value=value, session=session, said_at=said))
    assert (outcome.decision, outcome.reason) == ("backfill", "split")

    def held(day):
        return [(f["value"], f["state"]) for f in ledger.facts("app", "u1", valid_at=f"2026-01-{day}")]

    assert (held("07"), held("12"), held("25")) == ([("Lyon", "superseded")], [("Goa", "superseded")],
                                                  [("Lyon", "current")])
    assert [(f["value"], f["session"]) for f in ledger.facts("app", "u1")] == [("Lyon", "s2")]
    assert ledger.verify()["ok"] and ledger.replay_differences() == []
    ledger.forget("app", "u1", session="s3", reason="wrong session")
    assert (held("07"), held("12")) == ([("Lyon", "current")], [("Lyon", "current")])
    assert ledger.verify()["ok"] and ledger.replay_differences() == []


def test_verify_walks_the_chain_and_names_the_first_tampered_seq(make, raw, clock):
    ledger = make()
    decide_a_story(ledger, clock)
    assert ledger.verify()["ok"]
    raw(ledger, "UPDATE events SET body = replace(body, 'Berlin', 'Paris') WHERE seq = 2")
    result = ledger.verify()
    assert not result["ok"] and result["first_bad_seq"] == 2


def test_verify_names_a_missing_guard(make, raw, clock):
    ledger = make()
    ledger.observe(cand())
    raw(ledger)                               # guards dropped, nothing else
    result = ledger.verify()
    assert not result["ok"] and "events_refuse_update" in result["problem"]


def test_a_missing_guard_is_restored_on_open_and_reported(make, raw, clock):
    ledger = make()
    ledger.observe(cand())
    raw(ledger)
    location = ledger._work.location
    ledger.close()
    with pytest.warns(RuntimeWarning, match="events_refuse_update"):
        again = make(location)
    assert any("events_refuse_update" in line for line in again._work.schema_report)
    with pytest.raises(Exception, match="append-only"):
        again._conn.execute("DELETE FROM events")
    result = again.verify()
    assert not result["ok"] and "restored on open" in result["problem"]


def test_the_log_refuses_rewrites_but_admits_redaction_shape(make, clock):
    ledger = make()
    ledger.observe(cand())
    with pytest.raises(Exception, match="redacted"):
        ledger._conn.execute("UPDATE events SET type = 'X' WHERE seq = 1")
    with pytest.raises(Exception, match="append-only"):
        ledger._conn.execute("DELETE FROM events WHERE seq = 1")


def test_export_then_import_reproduces_the_head(make, clock, tmp_path):
    ledger = make()
    decide_a_story(ledger, clock)
    ledger.observe(cand(user="u2", predicate="home_city", value="Lima"))
    ledger.forget("app", "u2", reason="erasure request")       # a redacted event travels too
    path = tmp_path / "log.jsonl"
    with open(path, "w") as out:
        ledger.export_log(out)
    copy = make()
    result = copy.import_log(path)
    assert result["head"] == f"{ledger.head()[0]}:{ledger.head()[1]}"
    assert facts_of(copy) == facts_of(ledger)
    assert copy.replay_differences() == []


def test_a_forged_projection_row_is_never_acted_on(make, raw, clock):
    """Issue 47: signing, proving, accepting a held candidate, exporting a data subject and
    settling a dispute read what they act on through the log, on every engine."""
    from factledger.ledger.errors import ProjectionMismatch
    from factledger.ledger.tlog.note import new_signer

    key = new_signer("factledger.test/contract")
    ledger = make()
    decide_a_story(ledger, clock)
    ledger.observe(cand(predicate="plan", value="basic", author="document", basis="verified"))
    dispute = ledger.observe(cand(predicate="plan", value="premium", session="s2", said_at="2026-09-01"))
    note = ledger.checkpoint(key)["note"]
    hold_id = ledger.held("app", "u1")[0]["hold_id"]
    raw(ledger, "UPDATE merkle_hashes SET hash = (SELECT hash FROM merkle_hashes WHERE pos = 0)"
                " WHERE pos = (SELECT MAX(pos) FROM merkle_hashes)",
        "UPDATE merkle_hashes SET hash = (SELECT hash FROM merkle_hashes WHERE pos = 0) WHERE pos = 1",
        "UPDATE review_queue SET reason = 'ambiguous'",
        "UPDATE fact_history SET subject = 'user.partner' WHERE predicate = 'diet'",
        "UPDATE facts_current SET basis = 'inferred' WHERE value = 'basic'")
    before = ledger.head()
    for act in (lambda: ledger.checkpoint(key), lambda: ledger.prove_inclusion(1, note),
                lambda: ledger.review_accept(hold_id, "diet", by="rev"), lambda: ledger.held(),
                lambda: ledger.export_subject("app", "u1"),
                lambda: ledger.resolve(dispute.fact_id, accept=True, by="rev", reason="checked")):
        with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
            act()
    assert ledger.head() == before


def test_sessions_and_receipts_are_served_as_the_log_gives_them(make, raw, clock):
    """The sessions list and the erasure receipts are compared with a fold of their partitions
    (in memory, whatever the engine): as they are, they are served; edited, they are refused."""
    from factledger.ledger.errors import ProjectionMismatch
    from tests.ingest.test_validator_session import c, ingest

    ledger = make()
    ingest(ledger, c(predicate="diet", value="vegan", quote="I am vegan"))
    ledger.observe(cand(user="u2", predicate="home_city", value="Lima"))
    ledger.forget("app", "u2", reason="erasure request")
    sessions, receipts = ledger.sessions("app", "u1"), ledger.erasures()
    assert sessions and len(receipts) == 1
    assert ledger.export_subject("app", "u1")["sessions"]
    raw(ledger, "UPDATE sessions SET events_read = events_read + 1", "UPDATE erasures SET reason = 'routine'")
    for act in (lambda: ledger.sessions("app", "u1"), ledger.erasures, lambda: ledger.export_subject("app", "u1")):
        with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
            act()
