"""The write path decides against the log's facts, not a forged projection row (issue 47).

The decision table reads a key's open facts from `facts_current`; a forger who edits that row
could make a new value look like a restatement of an old one (confirmed, never superseded), hide
the current value (a new value opens beside it), or invent a dispute.  Each forgery here makes the
observation refuse with "the ledger is damaged" and write nothing; after `replay` the same
observation decides as on the unforged ledger.
"""

from __future__ import annotations

import pytest

from factledger.ledger import Ledger
from factledger.ledger.domain.candidate import value_key
from factledger.ledger.errors import ProjectionMismatch
from tests.audit.forger import raw_forger
from tests.conftest import MovableClock, cand, values


def forge(ledger: Ledger, *statements) -> None:
    conn = raw_forger(ledger._work.location)
    for sql, *args in statements:
        conn.execute(sql, *args)
    conn.close()


FORGERIES = {
    # the old value's row made to say the new one: "Lima" would be a restatement of it
    "restatement": [("UPDATE facts_current SET value = 'Lima', value_key = ? WHERE value = 'Pune'",
                     (value_key("Lima"),))],
    # the current value hidden: "Lima" would open as a first value, Pune never superseded
    "hidden": [("DELETE FROM facts_current WHERE value = 'Pune'",)],
    # both tables edited alike: the row and its open interval say Lima
    "both tables": [("UPDATE facts_current SET value = 'Lima', value_key = ? WHERE value = 'Pune'",
                     (value_key("Lima"),)),
                    ("UPDATE fact_history SET value = 'Lima' WHERE value = 'Pune' AND recorded_to IS NULL",)],
    # the current value's open interval deleted: the row drops out of the key's read
    "interval": [("DELETE FROM fact_history WHERE value = 'Pune' AND recorded_to IS NULL",)],
    # the current value's open interval moved to another key: the row's key no longer holds it
    "moved": [("UPDATE fact_history SET subject = 'zz' WHERE value = 'Pune' AND recorded_to IS NULL",)],
    # a made-up dispute on the current value
    "disputed": [("UPDATE facts_current SET status = 'disputed' WHERE value = 'Pune'",)],
}


def _decided(path, clock) -> tuple[str, list]:
    with Ledger(path, clock=clock) as ledger:
        outcome = ledger.observe(cand(predicate="home_city", value="Lima", quote="we moved to Lima",
                                      said_at="2026-09-01T10:00:00Z"))
        return outcome.decision, [(f["value"], f["status"]) for f in ledger.facts("app", "u1")]


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_a_forged_key_row_does_not_steer_the_decision(tmp_path, name):
    clock = MovableClock()
    unforged, forged = tmp_path / "a.db", tmp_path / "b.db"
    for path in (unforged, forged):
        with Ledger(path, clock=clock, create=True) as ledger:
            ledger.observe(cand(predicate="home_city", value="Pune", quote="we live in Pune"))
    expected = _decided(unforged, clock)
    with Ledger(forged, clock=clock) as ledger:
        forge(ledger, *FORGERIES[name])
        before = ledger.head()
        with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
            ledger.observe(cand(predicate="home_city", value="Lima", quote="we moved to Lima",
                                said_at="2026-09-01T10:00:00Z"))
        assert ledger.head() == before                        # nothing decided, nothing written
        ledger.replay()
    assert _decided(forged, clock) == expected


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_a_batch_s_keys_read_up_front_are_checked(tmp_path, name):
    """`observe_many` reads its keys' open facts in a few statements (`prefetch_keys`): the rows
    read so are checked as one key's are."""
    with Ledger(tmp_path / "l.db", clock=MovableClock(), create=True) as ledger:
        ledger.observe(cand(predicate="home_city", value="Pune", quote="we live in Pune"))
        forge(ledger, *FORGERIES[name])
        before = ledger.head()
        with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
            ledger.observe_many([cand(predicate="home_city", value="Lima", quote="we moved to Lima",
                                      said_at="2026-09-01T10:00:00Z"), cand(user="u2", value="vegan")])
        assert ledger.head() == before


def test_ingestion_stops_on_a_forged_key_row(tmp_path):
    from tests.ingest.helpers import adk_event, adk_session

    path = tmp_path / "l.db"
    with Ledger(path, clock=MovableClock(), create=True) as ledger:
        ledger.observe(cand(predicate="home_city", value="Pune", quote="we live in Pune"))
        forge(ledger, *FORGERIES["restatement"])
        before = ledger.head()
        session = adk_session([adk_event("u1", "user", "I live in Lima", at="2026-08-30T09:00:00Z")])
        with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
            ledger.ingest_session(session, extractor="patterns")
        assert ledger.head() == before


# --- what else the table reads of a key: its past, its negations, an open key's kind ----------

LATE = {"predicate": "home_city", "session": "s3", "event": "e3", "said_at": "2026-08-10T10:00:00Z"}
NEGATED_LATER = [cand(predicate="diet", value="vegan", negated=True, quote="I am not vegan",
                      said_at="2026-08-20T10:00:00Z", session="s2", event="e2")]

# Pune said on 1 August, superseded by Lima on the 20th: the key's past holds Pune
PUNE_THEN_LIMA = [
    cand(predicate="home_city", value="Pune", quote="we live in Pune", said_at="2026-08-01T10:00:00Z"),
    cand(predicate="home_city", value="Lima", quote="we moved to Lima", said_at="2026-08-20T10:00:00Z",
         session="s2", event="e2")]

KEY_FORGERIES = {
    # the past: Pune held the key until Lima superseded it; a statement of Pune said in between
    # reinforces the past fact (a backfill), whatever its closed interval says
    "past value": (
        PUNE_THEN_LIMA,
        [("UPDATE fact_history SET value = 'Delhi', value_key = ? WHERE value = 'Pune' AND recorded_to IS NULL",
          (value_key("Delhi"),))],
        cand(value="Pune", quote="we live in Pune", **LATE)),
    "past deleted": (
        PUNE_THEN_LIMA,
        [("DELETE FROM fact_history WHERE value = 'Pune' AND recorded_to IS NULL",)],
        cand(value="Pune", quote="we live in Pune", **LATE)),
    "past every interval deleted": (
        PUNE_THEN_LIMA,
        [("DELETE FROM fact_history WHERE value = 'Pune'",)],
        cand(value="Pune", quote="we live in Pune", **LATE)),
    "past said later": (
        PUNE_THEN_LIMA,
        [("UPDATE fact_history SET said_at = '2026-08-15T10:00:00.000000Z' WHERE value = 'Pune'"
          " AND recorded_to IS NULL",)],
        cand(value="Pune", quote="we live in Pune", **LATE)),
    # the negations: "not vegan" said on the 20th ends a "vegan" said on the 10th, learnt later
    "negation deleted": (NEGATED_LATER, [("DELETE FROM key_negations",)],
                         cand(predicate="diet", value="vegan", quote="I am vegan", said_at="2026-08-10T10:00:00Z",
                              session="s3", event="e3")),
    "negation said earlier": (NEGATED_LATER,
                              [("UPDATE key_negations SET said_at = '2026-08-05T10:00:00.000000Z'",)],
                              cand(predicate="diet", value="vegan", quote="I am vegan",
                                   said_at="2026-08-10T10:00:00Z", session="s3", event="e3")),
    "negation made up": ([cand(predicate="diet", value="vegetarian", said_at="2026-08-01T10:00:00Z")],
                         [("INSERT INTO key_negations VALUES (999, 'app', 'u1', 'user', 'diet', ?,"
                           " '2026-08-20T10:00:00.000000Z', 'stated')", (value_key("vegan"),))],
                         cand(predicate="diet", value="vegan", quote="I am vegan", said_at="2026-08-10T10:00:00Z",
                              session="s3", event="e3")),
    # an open key's kind: a `preference` is one value (Abba supersedes Queen); made a
    # `constraint` (many values) Abba would open beside Queen
    "kind": ([cand(predicate="x_fav_band", value="Queen", quote="I love Queen", kind="preference")],
             [("UPDATE facts_current SET kind = 'constraint'",), ("UPDATE fact_history SET kind = 'constraint'",)],
             cand(predicate="x_fav_band", value="Abba", quote="I love Abba", said_at="2026-09-01T10:00:00Z",
                  event="e2")),
}


def _said(path, clock, late) -> tuple[str, str, dict]:
    with Ledger(path, clock=clock) as ledger:
        outcome = ledger.observe(late)
        return outcome.decision, outcome.reason, values(ledger)


@pytest.mark.parametrize("name", sorted(KEY_FORGERIES))
@pytest.mark.parametrize("many", [False, True], ids=["observe", "observe_many"])
def test_a_forged_past_negation_or_kind_does_not_steer_the_decision(tmp_path, name, many):
    setup, statements, late = KEY_FORGERIES[name]
    clock = MovableClock()
    unforged, forged = tmp_path / "a.db", tmp_path / "b.db"
    for path in (unforged, forged):
        with Ledger(path, clock=clock, create=True) as ledger:
            for candidate in setup:
                ledger.observe(candidate)
    expected = _said(unforged, clock, late)
    with Ledger(forged, clock=clock) as ledger:
        forge(ledger, *statements)
        before = ledger.head()
        with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
            if many:      # a batch reads its keys up front (`prefetch_keys`): checked the same
                ledger.observe_many([late, cand(user="u2", value="vegan", said_at="2026-08-10T10:00:00Z")])
            else:
                ledger.observe(late)
        assert ledger.head() == before                        # nothing decided, nothing written
        ledger.replay()
    assert _said(forged, clock, late) == expected


def test_the_key_checks_pass_on_an_unforged_ledger_in_one_batch(tmp_path):
    """A negation, a late statement and an open key's restatement decided in one transaction:
    the checks see the rows as of the last flush and raise nothing."""
    with Ledger(tmp_path / "l.db", clock=MovableClock(), create=True) as ledger:
        ledger.observe_many([cand(predicate="home_city", value="Pune", quote="we live in Pune",
                                  said_at="2026-08-01T10:00:00Z"),
                             cand(predicate="x_fav_band", value="Queen", quote="I love Queen", kind="preference")])
        outcomes = ledger.observe_many([
            cand(predicate="home_city", value="Lima", quote="we moved to Lima", said_at="2026-08-20T10:00:00Z",
                 session="s2", event="e2"),
            cand(predicate="home_city", value="Lima", negated=True, quote="we no longer live in Lima",
                 said_at="2026-08-25T10:00:00Z", session="s2", event="e3"),
            cand(value="Pune", quote="we live in Pune", **LATE),
            cand(predicate="x_fav_band", value="Abba", quote="I love Abba", event="e4")])
        assert [o.decision for o in outcomes][:1] == ["supersede"]
        assert ledger.verify()["ok"]


# --- which partitions a retention run considers ------------------------------------------------

def _said_in_log(ledger: Ledger, text: str) -> bool:
    return ledger._conn.execute("SELECT COUNT(*) FROM events WHERE body LIKE ?", (f"%{text}%",)).fetchone()[0] > 0


@pytest.mark.parametrize("sql", [
    "DELETE FROM fact_history WHERE value = 'Pune'",                            # the partition hidden
    "UPDATE fact_history SET confirmed_at = '2099-01-01T00:00:00Z' WHERE value = 'Pune'",   # made recent
    "UPDATE fact_history SET predicate = 'diet' WHERE value = 'Pune'",           # another class
])
def test_retention_does_not_skip_a_partition_whose_history_row_is_forged(tmp_path, sql):
    clock = MovableClock()
    clock.set("2026-11-01T00:00:00Z")
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        ledger.observe(cand(user="u7", predicate="home_city", value="Pune", quote="we live in Pune",
                            said_at="2026-08-01T10:00:00Z"))
        forge(ledger, (sql,))
        receipt = ledger.retain(apply=True, older_than=30, predicate="home_city")
        assert not receipt["noop"] and receipt["counts"]["facts"] == 1
        assert not _said_in_log(ledger, "Pune")                  # gone from the log, as unforged
        assert ledger.facts("app", "u7") == []


@pytest.mark.parametrize("sql", ["DELETE FROM serves", "UPDATE serves SET served_at = '2099-01-01T00:00:00Z'"])
def test_serve_retention_does_not_skip_a_forged_serve_row(tmp_path, sql):
    clock = MovableClock()
    clock.set("2026-09-01T00:00:00Z")
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        ledger.observe(cand(user="u8", value="vegetarian", said_at="2026-08-30T10:00:00Z"))
        ledger.recall("app", "u8", "", preload=True, served_to="old-bot")
        clock.set("2026-11-01T00:00:00Z")
        forge(ledger, (sql,))
        receipt = ledger.retain(apply=True, serves_older_than=30)
        assert receipt["counts"].get("serve_records_expired") == 1
        assert not _said_in_log(ledger, "old-bot")


def test_a_sensitivity_run_takes_the_predicates_the_log_names(tmp_path):
    """An open key recorded as `health` is in a health run's policy by its observations in the log,
    not by a history row that a forger can relabel."""
    clock = MovableClock()
    clock.set("2026-11-01T00:00:00Z")
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        ledger.observe(cand(user="u9", predicate="x_allergy_note", value="peanuts", quote="I am allergic to peanuts",
                            said_at="2026-08-01T10:00:00Z", kind="preference", sensitivity="health"))
        forge(ledger, ("UPDATE fact_history SET sensitivity = 'normal'",),
              ("UPDATE facts_current SET sensitivity = 'normal'",))
        receipt = ledger.retain(apply=True, older_than=30, sensitivity="health")
        assert not receipt["noop"]
        assert not _said_in_log(ledger, "peanuts")


# --- a forget of a `_domain` fact finds every serve of it in the log ---------------------------

@pytest.mark.parametrize("sql", ["DELETE FROM served_facts WHERE user = 'alice'",
                                 "UPDATE served_facts SET fact_id = 'f-other' WHERE user = 'alice'"])
def test_a_domain_forget_scrubs_a_serve_whose_index_row_was_forged(tmp_path, sql):
    value = "zqxregion-north-77"
    clock = MovableClock()
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        ledger.observe_many([cand(app="ops", user="_domain", predicate="deploy.region", value=value,
                                  quote=f"we deploy to {value}", session="d"),
                             cand(app="ops", user="alice", predicate="preferred_language", value="Python",
                                  quote="I write Python", session="a")])
        ledger.recall("ops", "alice", "", preload=True, served_to="bot")
        (served,) = ledger.served("ops", "alice")
        assert served["text_sha256"]
        fact = next(f["fact_id"] for f in ledger.facts("ops", "_domain"))
        forge(ledger, (sql,))
        receipt = ledger.forget("ops", "_domain", fact=fact, reason="request", requested_by="dpo")
        assert receipt["counts"]["serve_records"] == 1
        assert not _said_in_log(ledger, served["text_sha256"])      # the hash of the served text is gone


# --- what decides whether a viewer is shown a fact ----------------------------------------------

def test_a_fact_s_class_is_the_log_s_where_it_decides_who_sees_it(tmp_path):
    """The web view's contradictions page asks `fact_sensitivity` of both facts of a pair, and the
    serves page `served_fact_classes` of every fact a record names, to decide what a reviewer of
    lower clearance is shown: a health fact relabelled `normal` in a row is damage, not shown."""
    with Ledger(tmp_path / "l.db", clock=MovableClock(), create=True) as ledger:
        ledger.observe(cand(user="u5", predicate="allergy", value="peanuts", quote="I am allergic to peanuts"))
        (fact,) = ledger.facts("app", "u5", include_sensitive=True)
        assert ledger.lookup.fact_sensitivity(fact["fact_id"]) == fact["sensitivity"] == "health"
        ledger.recall("app", "u5", "", preload=True, served_to="bot", clearance="all")
        assert ledger.serves.served_fact_classes("app", [fact["fact_id"]])[fact["fact_id"]][0] == "health"
        forge(ledger, ("UPDATE facts_current SET sensitivity = 'normal'",))
        with pytest.raises(ProjectionMismatch, match="the ledger is damaged: facts_current"):
            ledger.lookup.fact_sensitivity(fact["fact_id"])
        forge(ledger, ("UPDATE fact_history SET sensitivity = 'normal'",))
        with pytest.raises(ProjectionMismatch, match="the ledger is damaged: fact_history"):
            ledger.serves.served_fact_classes("app", [fact["fact_id"]])
