"""Nothing derived from forgotten content survives a forget by fact, predicate or sensitivity.

One utterance, "I'm vegan and we live in Quuxville", yields diet=vegan and home_city=Quuxville
with the same quote, and the extractor writes a session digest naming both.  Forgetting the city
(by fact, predicate or sensitivity) must leave its value nowhere: not in the digest, not in the
surviving diet fact's quote ("I'm vegan and we live in [erased]"), not in the recall index, not
in a candidate the validator rejected or a reviewer holds, not in an export written afterwards,
and not in the raw bytes of the database or its WAL (the scan of tests/forget/test_forget_purge.py).
"""

from __future__ import annotations

import io

import orjson
import pytest

from factledger.ledger import Ledger
from factledger.ledger.domain.textindex import document_terms
from factledger.ledger.ingest.extractor import Extraction
from factledger.ledger.ingest.proposal import Proposal
from tests.conftest import MovableClock, cand
from tests.forget.test_forget_purge import scan

CITY = "Quuxvillezq"                     # the forgotten value
DRUG = "Zorbanolzq"                      # a health value, forgotten by sensitivity
KEEP = "vegan"


class Digesting:
    """An extractor that proposes what it is given and writes a digest naming everything."""

    name = "digesting"
    model = None

    def __init__(self, proposals, digest):
        self.proposals, self.digest = proposals, digest

    def extract(self, delta, context):
        return Extraction(proposals=list(self.proposals), digest=self.digest)


def session(sid, text, ts=1788080400.0):
    return {"id": sid, "appName": "app", "userId": "u1", "events": [
        {"id": f"{sid}-e1", "author": "user", "timestamp": ts, "content": {"parts": [{"text": text}]}}]}


SAID = f"I'm vegan and we live in {CITY}. I take {DRUG} 50 mg"


def fill(ledger, clock):
    quote = f"I'm vegan and we live in {CITY}"
    ledger.ingest_session(session("s1", SAID), extractor=Digesting([
        Proposal(predicate="diet", value="vegan", quote=quote, evidence_event="s1-e1"),
        Proposal(predicate="home_city", value=CITY, quote=quote, evidence_event="s1-e1"),
        Proposal(predicate="medication_dose", value=f"{DRUG} 50 mg", quote=f"I take {DRUG} 50 mg",
                 evidence_event="s1-e1"),
        # the session validator rejects this one: its quote is not in the evidence
        Proposal(predicate="home_city", value=CITY, quote=f"{CITY} is home", evidence_event="s1-e1"),
    ], f"User is vegan, lives in {CITY}, takes {DRUG} 50 mg"))
    clock.tick()
    # an agent's "stated" preference naming the city: the validator rejects it
    ledger.observe(cand(predicate="diet", value=f"{CITY} style", quote=f"{CITY} style", session="s2",
                        event="s2-e1", author="agent", said_at="2026-09-02"))
    # held (unknown predicate): one names the city in its value, one only in its quote
    ledger.observe(cand(predicate="zq_hometown", value=CITY, quote=f"born in {CITY}", session="s2",
                        event="s2-e2", said_at="2026-09-02"))
    ledger.observe(cand(predicate="zq_pet", value="a cat", quote=f"a cat from {CITY}", session="s2",
                        event="s2-e3", said_at="2026-09-02"))
    clock.tick()


def city_fact(ledger):
    return next(f["fact_id"] for f in ledger.facts("app", "u1", include_sensitive=True)
                if f["predicate"] == "home_city")


SCOPES = {
    "predicate": lambda ledger: {"predicate": "home_city"},
    "fact": lambda ledger: {"fact": city_fact(ledger)},
    "sensitivity": lambda ledger: {"sensitivity": "personal"},
}


@pytest.mark.parametrize("kind", sorted(SCOPES))
def test_the_forgotten_city_leaves_no_residue(tmp_path, kind):
    db = tmp_path / "ledger.db"
    clock = MovableClock()
    stem = document_terms("", "", CITY, "").split()[-1]           # the recall index's term for it
    with Ledger(db, clock=clock, create=True) as ledger:
        fill(ledger, clock)
        assert ledger.sessions("app", "u1")[0]["digest"].endswith("50 mg")
        assert {r["reason"] for r in ledger.held("app", "u1")} == {"unknown_predicate"}
        rejected = [orjson.loads(b)["rule"] for (b,) in ledger._conn.execute(
            "SELECT body FROM events WHERE type = 'CandidateRejected'")]
        assert sorted(rejected) == ["session_validator", "validator"]
        ledger._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        assert set(scan(db, [CITY, stem])) == {CITY, stem}          # the scan does see them

        receipt = ledger.forget("app", "u1", reason="request", **SCOPES[kind](ledger))
        assert receipt["purge"]["checkpoint"] == "truncated"
        assert scan(db, [CITY, stem]) == {}                          # digest, quotes, holds, index
        facts = {f["predicate"]: f for f in ledger.facts("app", "u1", include_sensitive=True)}
        assert "home_city" not in facts
        assert facts["diet"]["value"] == KEEP
        assert facts["diet"]["quote"] == "I'm vegan and we live in [erased]"
        assert ledger.sessions("app", "u1")[0]["digest"] is None     # it named what was forgotten
        assert ledger.sessions("app", "u1")[0]["watermark"] == "s1-e1"
        held = ledger.held("app", "u1")
        assert [(h["candidate"]["value"], h["candidate"]["quote"]) for h in held] == [
            ("a cat", "a cat from [erased]")]                       # the other hold went whole
        result = ledger.recall("app", "u1", CITY, clearance="personal,health", explain=True)
        assert all(not c["relevance"] for c in result.candidates)
        out = io.StringIO()
        ledger.export_log(out)
        assert CITY not in out.getvalue()
        assert CITY not in orjson.dumps(ledger.export_subject("app", "u1")).decode()
        assert ledger.verify()["ok"] and ledger.replay_differences() == []
        # the session is still known: ingesting it again appends nothing
        before = ledger.head()
        ledger.ingest_session(session("s1", SAID), extractor=Digesting([], "again"))
        assert ledger.head() == before
    assert scan(db, [CITY, stem]) == {}


def test_forget_by_sensitivity_removes_the_digest_that_names_a_health_value(tmp_path):
    db = tmp_path / "ledger.db"
    clock = MovableClock()
    with Ledger(db, clock=clock, create=True) as ledger:
        fill(ledger, clock)
        ledger.forget("app", "u1", sensitivity="health", reason="consent withdrawn")
        assert scan(db, [DRUG]) == {}
        assert ledger.sessions("app", "u1")[0]["digest"] is None
        assert {f["predicate"] for f in ledger.facts("app", "u1", include_sensitive=True)} == {
            "diet", "home_city"}
        assert ledger.verify()["ok"] and ledger.replay_differences() == []


def test_a_validator_rejected_repeat_goes_with_the_fact(tmp_path):
    """`forget --fact` takes a repeat of the value the validator rejected (an agent's "stated"
    preference, a quote not in the evidence), not only the decision table's rejections."""
    db = tmp_path / "ledger.db"
    clock = MovableClock()
    value = "Zqpaleo"
    with Ledger(db, clock=clock, create=True) as ledger:
        fact = ledger.observe(cand(predicate="diet", value=value, session="s1", said_at="2026-09-01")).fact_id
        clock.tick()
        out = ledger.observe(cand(predicate="diet", value=value, session="s2", author="agent",
                                  said_at="2026-09-02"))
        assert (out.decision, out.reason) == ("reject", "preference_not_user_authored")
        ledger.ingest_session(session("s3", "nothing to see"), extractor=Digesting([
            Proposal(predicate="diet", value=value, quote=f"I eat {value}", evidence_event="s3-e1")], None))
        rules = [orjson.loads(b)["rule"] for (b,) in ledger._conn.execute(
            "SELECT body FROM events WHERE type = 'CandidateRejected'")]
        assert sorted(rules) == ["session_validator", "validator"]
        clock.tick()
        ledger.forget("app", "u1", fact=fact, reason="r")
        assert scan(db, [value]) == {}
        assert ledger._conn.execute("SELECT count(*) FROM events WHERE type = 'CandidateRejected'"
                                   " AND body IS NOT NULL").fetchone()[0] == 0
        assert ledger.verify()["ok"] and ledger.replay_differences() == []


def test_a_rejection_that_only_quotes_a_forgotten_value_is_kept_masked_for_the_next_forget(tmp_path):
    """A validator's rejection is what was said of its own predicate: forgetting another value its
    quote names masks that value in it and keeps it, so a later forget of its own predicate still
    finds its value and masks it where a surviving quote names it (a ledger that never heard the
    forgotten statements would).  Found by the forget property: scrubbing the rejection whole
    left "vegan" in the home_city quote after a forget of every `normal` fact."""
    db = tmp_path / "ledger.db"
    clock = MovableClock()
    with Ledger(db, clock=clock, create=True) as ledger:
        allergy = ledger.observe(cand(predicate="allergy", value="peanuts", session="s0", said_at="2026-09-01")).fact_id
        clock.tick()
        ledger.observe(cand(predicate="home_city", value=CITY, quote=f"{CITY}, not vegan", session="s0",
                            said_at="2026-09-01"))
        clock.tick()
        out = ledger.observe(cand(predicate="diet", value="vegan", quote="vegan, not peanuts", session="s0",
                                  author="agent", said_at="2026-09-01"))
        assert (out.decision, out.reason) == ("reject", "preference_not_user_authored")
        clock.tick()
        ledger.forget("app", "u1", fact=allergy, reason="r")
        assert scan(db, ["peanuts"]) == {}
        kept = [orjson.loads(b)["candidate"]["quote"] for (b,) in ledger._conn.execute(
            "SELECT body FROM events WHERE type = 'CandidateRejected' AND body IS NOT NULL")]
        assert kept == ["vegan, not [erased]"]
        clock.tick()
        ledger.forget("app", "u1", sensitivity="normal", reason="r")
        assert [f["quote"] for f in ledger.facts("app", "u1", include_sensitive=True)] == [f"{CITY}, not [erased]"]
        assert scan(db, ["vegan"]) == {}
        assert ledger.verify()["ok"] and ledger.replay_differences() == []


@pytest.mark.parametrize("scope", [{"predicate": "allergy"}, {"session": "s2"}])
def test_a_split_keeps_no_copy_of_a_forgotten_quote(tmp_path, scope):
    """A split (`FactSplit`) copies the quote of the statement its fact holds again from: a forget
    of that statement's session, or of a value its quote names, leaves no byte of it there."""
    db = tmp_path / "ledger.db"
    clock = MovableClock()
    with Ledger(db, clock=clock, create=True) as ledger:
        for predicate, value, quote, session, day in (
                ("allergy", CITY, None, "s0", "01"), ("home_city", "Lyon", f"Lyon, not {CITY}", "s1", "05"),
                ("home_city", "Lyon", f"still Lyon, {CITY} aside", "s2", "20"),
                ("home_city", "Goa", None, "s3", "10")):
            ledger.observe(cand(predicate=predicate, value=value, quote=quote, session=session,
                                event=f"e-{session}", said_at=f"2026-09-{day}"))
            clock.tick()
        assert ledger._conn.execute("SELECT count(*) FROM events WHERE type = 'FactSplit'").fetchone() == (1,)
        gone = CITY if "predicate" in scope else "aside"
        split = orjson.loads(ledger._conn.execute("SELECT body FROM events WHERE type = 'FactSplit'").fetchone()[0])
        assert gone in split["quote"] and scan(db, [gone])
        ledger.forget("app", "u1", reason="r", **scope)
        assert scan(db, [gone]) == {}
        assert ledger.verify()["ok"] and ledger.replay_differences() == []


def test_a_session_forget_keeps_other_sessions_words(tmp_path):
    """A session scope forgets what was said in it, not every mention of its values elsewhere:
    another session's quote naming the same city is that session's data (and a ledger that never
    heard the forgotten session would hold it)."""
    clock = MovableClock()
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        ledger.observe(cand(predicate="home_city", value=CITY, session="s1", said_at="2026-09-01"))
        clock.tick()
        ledger.observe(cand(predicate="diet", value="vegan", quote=f"vegan since {CITY}", session="s2",
                            said_at="2026-09-02"))
        clock.tick()
        ledger.forget("app", "u1", session="s1", reason="r")
        facts = ledger.facts("app", "u1", include_sensitive=True)
        assert [(f["predicate"], f["quote"]) for f in facts] == [("diet", f"vegan since {CITY}")]
