"""Support, not spelling, and open keys by kind (docs/ingestion.md "The support rule", "Open keys").

The examples the field refused: a correct, normalised value whose quote does not spell it is
accepted where support is found and held for a reviewer where it is not, on every write path;
a fact no registry predicate fits is kept under its kind's rules; a fact past its retention is
withheld at read.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from factledger.ledger import Ledger, make_candidate
from factledger.ledger.domain.support import unsupported
from factledger.ledger.ingest.proposal import Proposal
from factledger.ledger.recall.dates import resolved
from factledger.ledger.registry.predicates import load_registry, parse_registry
from tests.ingest.helpers import write_jsonl

FACTLEDGER = shutil.which("factledger", path=str(Path(sys.executable).parent))
REGISTRY = load_registry()


def observe(ledger, predicate, value, quote, **extra):
    fields = dict(app="a", user="u", session="s1", evidence_event="e1", said_at="2026-09-01T10:00:00Z",
                  predicate=predicate, value=value, quote=quote)
    fields.update(extra)
    return ledger.observe(make_candidate(**fields))


def why(predicate, value, quote, open_values=None, basis="stated", negated=False):
    proposal = Proposal(predicate=predicate, value=value, quote=quote, evidence_event="e", basis=basis,
                        negated=negated)
    return unsupported(proposal, REGISTRY.resolve(predicate), open_values)


# --- the rule, as a function ---------------------------------------------------------------------

def test_the_rule_supports_what_the_quote_means_and_holds_the_rest():
    assert why("blood_pressure", "148/92 mmHg", "BP 148/92") is None              # the unit it leaves out
    assert why("medication_dose", "metoprolol 50 mg", "metoprolol 50mg") is None  # the same number
    assert why("blood_pressure", "150/92 mmHg", "BP 148/92") == "unsupported_by_quote"
    assert why("medication_dose", "metoprolol tartrate 50 mg", "my dose is now 50 mg",
               ["metoprolol tartrate 25 mg"]) is None                            # the open value it updates
    assert why("medication_dose", "metoprolol tartrate 50 mg", "my dose is now 50 mg") == "unsupported_by_quote"
    assert why("medication_dose", "atenolol 50 mg", "my dose is now 50 mg",
               ["metoprolol tartrate 25 mg"]) == "unsupported_by_quote"         # a word from nowhere
    assert why("diet", "pescatarian", "I eat fish now") is None                   # the registry's words
    assert why("likes_spicy", "true", "spicy please") is None                     # yes/no, spoken of
    assert why("likes_spicy", "true", "the vindaloo please") == "unsupported_by_quote"
    assert why("likes_spicy", "true", "the vindaloo please", basis="inferred") is None
    assert why("employer", "Globex", "I ate steak") == "unsupported_by_quote"
    assert why("diet", "vegan", "I'm vegan", negated=True) == "negation_not_in_quote"   # still refused
    assert why("diet", "vegan", "ok", basis="inferred") == "quote_too_short"            # still no evidence


# --- each write path: the library, the CLI, ingestion, the MCP tools ------------------------------

def test_the_library_accepts_holds_and_never_loses(ledger):
    spicy = observe(ledger, "likes_spicy", "true", "the vindaloo please", basis="inferred", author="agent")
    assert spicy.decision == "insert"
    assert observe(ledger, "blood_pressure", "148/92 mmHg", "BP 148/92", author="document",
                   basis="verified").decision == "insert"
    assert observe(ledger, "medication_dose", "metoprolol tartrate 25 mg",
                   "I take metoprolol tartrate 25 mg").decision == "insert"
    dose = observe(ledger, "medication_dose", "metoprolol tartrate 50 mg", "my dose is now 50 mg",
                   session="s2", evidence_event="e2", said_at="2026-09-10T10:00:00Z")
    assert dose.decision == "supersede"
    assert observe(ledger, "diet", "pescatarian", "I eat fish now").decision == "insert"
    globex = observe(ledger, "employer", "Globex", "I ate steak")
    assert (globex.decision, globex.reason) == ("hold", "unsupported_by_quote")

    current = {f["predicate"]: f for f in ledger.facts("a", "u", include_sensitive=True)}
    assert "employer" not in current
    assert current["medication_dose"]["value"] == "metoprolol tartrate 50 mg"
    assert current["likes_spicy"]["basis"] == "inferred"
    served = ledger.recall("a", "u", "spicy food employer", clearance="health").text
    assert "Globex" not in served and "likes_spicy" not in served          # held; below the threshold
    held = ledger.held("a", "u")
    assert [(h["reason"], h["value"]) for h in held if h.get("hold_id")] == [("unsupported_by_quote", "Globex")]

    # a reviewer decides: accepted as proposed, it is a fact like any other
    outcome = ledger.review_accept(held[0]["hold_id"], by="dr.rao", reason="asked: works at Globex",
                                   confirm_sensitivity="personal")
    assert outcome.decision == "insert"
    assert "Globex" in ledger.recall("a", "u", "employer", clearance="personal").text


def test_the_cli_prints_a_hold_and_exits_0(tmp_path):
    db = str(tmp_path / "l.db")
    base = [FACTLEDGER, "--db", db, "observe", "--app", "a", "--user", "u", "--session", "s1",
            "--event-id", "e1", "--said-at", "2026-09-01", "--json"]
    held = subprocess.run([*base, "--create", "--predicate", "employer", "--value", "Globex", "--quote",
                           "I ate steak"], capture_output=True, text=True)
    assert held.returncode == 0, held.stderr
    assert json.loads(held.stdout)["decision"] == "hold" and json.loads(held.stdout)["reason"] == "unsupported_by_quote"
    listed = subprocess.run([FACTLEDGER, "--db", db, "review", "--json"], capture_output=True, text=True)
    assert any(r.get("value") == "Globex" and r["reason"] == "unsupported_by_quote" for r in json.loads(listed.stdout))
    refused = subprocess.run([*base, "--predicate", "diet", "--value", "vegan", "--quote", "I'm vegan",
                              "--negated"], capture_output=True, text=True)
    assert refused.returncode == 1 and refused.stderr.startswith("Error: ") and "nothing was written" in refused.stderr


def test_ingestion_holds_what_the_quote_does_not_support(tmp_path):
    session = tmp_path / "s.jsonl"
    write_jsonl(session, [
        {"session": "s1", "app": "a", "user": "u"},
        {"id": "e1", "author": "user", "timestamp": 1788000000, "text": "I ate steak. BP 148/92 this morning"}])
    candidates = tmp_path / "c.jsonl"
    write_jsonl(candidates, [
        {"predicate": "employer", "value": "Globex", "quote": "I ate steak", "evidence_event": "e1"},
        {"predicate": "blood_pressure", "value": "148/92 mmHg", "quote": "BP 148/92", "evidence_event": "e1"},
        {"predicate": "team.deploy_day", "kind": "fact", "value": "Friday", "quote": "I ate steak",
         "evidence_event": "e1", "basis": "inferred"}])
    with Ledger(tmp_path / "l.db", create=True) as ledger:
        ledger.ingest_paths([str(session)], None, None, extractor="candidates", candidates=[str(candidates)])
        facts = {f["predicate"]: f for f in ledger.facts("a", "u", include_sensitive=True)}
        assert set(facts) == {"blood_pressure", "team.deploy_day"}
        assert facts["team.deploy_day"]["kind"] == "fact" and facts["team.deploy_day"]["basis"] == "inferred"
        assert [h["value"] for h in ledger.held("a", "u") if h.get("hold_id")] == ["Globex"]


def test_mcp_remember_takes_a_kind_and_holds_unsupported_values(tmp_path):
    from factledger.mcp_server.scope import Scope
    from factledger.mcp_server.tools import MemoryTools

    db = tmp_path / "l.db"
    tools = MemoryTools(lambda read_only: Ledger(db, create=not read_only, read_only=read_only))
    scope = Scope.build("a", ["u"])
    opened = tools.remember(scope, "code.language", "TypeScript", "I prefer TypeScript for new services",
                            "s1", kind="preference")
    assert opened["decision"] == "insert"
    held = tools.remember(scope, "employer", "Globex", "I ate steak", "s1")
    assert (held["decision"], held["reason"]) == ("hold", "unsupported_by_quote")
    assert "code.language = TypeScript" in tools.recall(scope, "language for new services")["text"]


# --- open keys ------------------------------------------------------------------------------------

def test_an_open_key_is_current_listed_served_forgotten_and_verified(tmp_path):
    db = str(tmp_path / "l.db")

    def cli(*args):
        done = subprocess.run([FACTLEDGER, "--db", db, *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    out = json.loads(cli("observe", "--create", "--app", "a", "--user", "u", "--kind", "preference",
                         "--predicate", "code.language", "--value", "TypeScript", "--quote",
                         "I prefer TypeScript for new services", "--session", "s1", "--event-id", "e1",
                         "--said-at", "2026-09-01", "--json"))
    assert out["decision"] == "insert"
    cli("observe", "--app", "a", "--user", "u", "--predicate", "diet", "--value", "vegan", "--quote",
        "I'm vegan", "--session", "s1", "--event-id", "e2", "--said-at", "2026-09-01")
    listed = json.loads(cli("facts", "--app", "a", "--user", "u", "--kind", "preference", "--json"))
    assert {(f["predicate"], f["value"], f["kind"]) for f in listed} == {
        ("code.language", "TypeScript", "preference"), ("diet", "vegan", "preference")}
    assert json.loads(cli("facts", "--app", "a", "--user", "u", "--kind", "event", "--json")) == []
    served = cli("recall", "which language for new services?", "--app", "a", "--user", "u")
    assert "code.language = TypeScript" in served
    # a later statement of the key need not repeat its kind: the partition's key is reused
    again = json.loads(cli("observe", "--app", "a", "--user", "u", "--predicate", "code.language",
                           "--value", "Go", "--quote", "new services are in Go now", "--session", "s2",
                           "--event-id", "e3", "--said-at", "2026-10-01", "--json"))
    assert again["decision"] == "supersede"
    cli("verify")
    cli("checkpoint")
    proof = json.loads(cli("prove", str(out["seqs"][0])))
    assert proof["seq"] == out["seqs"][0]
    cli("forget", "--app", "a", "--user", "u", "--predicate", "code.language", "--reason", "asked", "--yes")
    cli("verify")
    assert [f["predicate"] for f in json.loads(cli("facts", "--app", "a", "--user", "u", "--kind", "preference",
                                                   "--json"))] == ["diet"]
    for name in ("l.db", "l.db-wal"):
        path = tmp_path / name
        assert not path.exists() or b"TypeScript" not in path.read_bytes()


def test_an_open_key_is_no_way_around_clearance(ledger):
    event = observe(ledger, "support_group.attended", "went to a support group yesterday",
                    "I went to a support group yesterday", kind="event")
    assert event.decision == "insert"
    team = observe(ledger, "team.deploy_day", "Friday", "the team deploys on Friday", kind="fact",
                   evidence_event="e2")
    raised = observe(ledger, "home.wifi_name", "Skynet", "our wifi is called Skynet", kind="preference",
                     sensitivity="personal", evidence_event="e3")
    lowered = observe(ledger, "clinic.visit_day", "Tuesday", "my clinic visit is on Tuesday", kind="decision",
                      sensitivity="normal", evidence_event="e4")
    assert team.decision == raised.decision == lowered.decision == "insert"
    levels = {f["predicate"]: f["sensitivity"] for f in ledger.facts("a", "u", include_sensitive=True)}
    assert levels == {"support_group.attended": "health", "team.deploy_day": "personal",
                      "home.wifi_name": "personal", "clinic.visit_day": "health"}
    normal = ledger.recall("a", "u", "support group clinic wifi", clearance="normal").text
    assert "support" not in normal and "Tuesday" not in normal and "Skynet" not in normal
    # an open key that aliases a registry predicate is the registry's
    city = observe(ledger, "city", "Pune", "we're in Pune", kind="event", evidence_event="e5")
    assert city.decision == "insert"
    assert {f["predicate"]: f["kind"] for f in ledger.facts("a", "u")}["home_city"] == "fact"


def test_an_unknown_kind_or_a_key_without_one_is_held_not_invented(ledger):
    assert observe(ledger, "code.language", "Rust", "I like Rust").decision == "hold"
    with pytest.raises(Exception, match="unknown kind"):
        ledger.recall("a", "u", "x", kinds=["mood"])
    assert observe(ledger, "code.language", "Rust", "I like Rust", kind="mood").reason == "unknown_predicate"


def test_the_block_groups_lines_by_kind_and_dates_events(ledger):
    observe(ledger, "diet", "vegan", "I'm vegan")
    observe(ledger, "support_group.attended", "went to a support group yesterday",
            "I went to a support group yesterday", kind="event", said_at="2023-05-08T10:00:00Z",
            evidence_event="e2")
    block = ledger.recall("a", "u", "", preload=True, clearance="health").text
    lines = block.splitlines()
    assert "Preferences:" in lines and "Events:" in lines
    event = next(x for x in lines if "support_group" in x)
    assert "stated 2023-05-08" in event and '"yesterday" = 2023-05-07' in event
    only = ledger.recall("a", "u", "", preload=True, clearance="health", kinds=["event"]).text
    assert "diet" not in only and "Events:" not in only and "support_group" in only


def test_relative_words_resolve_against_the_said_day():
    said = "2023-05-08T10:00:00Z"                  # a Monday
    assert resolved("went yesterday", said) == ['"yesterday" = 2023-05-07']
    assert resolved("last week and 2 days ago", said) == ['"last week" = the week of 2023-05-01',
                                                         '"2 days ago" = 2023-05-06']
    assert resolved("last Friday", said) == ['"last friday" = 2023-05-05']
    assert resolved("next month", said) == ['"next month" = June 2023']
    assert resolved("last weekend", said) == ['"last weekend" = the weekend of 2023-05-06']
    assert resolved("nothing relative", said) == []


# --- the design's smaller gaps --------------------------------------------------------------------

def test_a_fact_past_its_retention_is_withheld_at_read(ledger, clock):
    observe(ledger, "support_ticket", "INC-4411", "my ticket is INC-4411", said_at="2025-12-07T10:00:00Z")
    clock.set("2026-11-06T00:00:00Z")                  # 334 days later; retention 90 days
    result = ledger.recall("a", "u", "ticket INC-4411")
    assert result.selected == [] and result.withheld == {"retention": 1}
    assert "past their retention period" in result.text and "INC-4411" not in result.text


def test_a_kind_has_its_own_serving_threshold(tmp_path, clock):
    raw = (Path(REGISTRY.source).read_bytes() + b'\n[kinds.event]\nmin_confidence = 0.3\n')
    path = tmp_path / "reg.toml"
    path.write_bytes(raw)
    with Ledger(tmp_path / "l.db", create=True, clock=clock, registry=str(path)) as ledger:
        observe(ledger, "trip.booked", "booked a trip to Goa", "booked a trip to Goa", kind="event",
                basis="inferred", author="agent")
        observe(ledger, "team.size", "twelve", "a team of twelve", kind="fact", basis="inferred", author="agent",
                evidence_event="e2")
        served = ledger.recall("a", "u", "trip Goa team size", clearance="personal")
        assert [f["predicate"] for f in served.selected] == ["trip.booked"]
        assert served.withheld == {"confidence": 1}
        asked = ledger.recall("a", "u", "trip Goa team size", clearance="personal", min_confidence=0.2)
        assert len(asked.selected) == 2                  # the caller's threshold wins for every kind


def test_a_registry_can_add_a_kind_and_refuses_a_bad_one():
    reg = parse_registry(b'[kinds.habit]\ncardinality = "many"\n[predicates.diet]\ncardinality = "one"\n')
    assert reg.spec_for("sleep.bedtime", "habit").cardinality == "many"
    with pytest.raises(Exception, match="cardinality"):
        parse_registry(b'[kinds.habit]\ncardinality = "lots"\n[predicates.diet]\ncardinality = "one"\n')


def test_predicates_lists_the_kinds(tmp_path):
    done = subprocess.run([FACTLEDGER, "--db", str(tmp_path / "none.db"), "predicates", "--kinds", "--json"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    kinds = {k["name"]: k for k in json.loads(done.stdout)}
    assert {"preference", "constraint", "decision", "fact", "event", "open_item"} <= set(kinds)
    assert kinds["event"]["cardinality"] == "many" and kinds["event"]["dated"] is True


def test_an_encoder_that_raises_loses_nothing(tmp_path, monkeypatch, meaning):
    """The meaning check and the meaning index both need the encoder; one that fails mid-write
    costs the candidate its meaning check (decided by the exact rules) and its vector, never the
    fact (a warning says so)."""
    from factledger.ledger.semantic import embedder as encoders

    class Broken:
        identity = "broken"

        def embed(self, text):
            raise RuntimeError("the runtime fell over")

    with Ledger(tmp_path / "l.db", create=True) as ledger:
        observe(ledger, "allergy", "peanuts", "I'm allergic to peanuts")
        monkeypatch.setattr(encoders, "get", lambda: Broken())
        with pytest.warns(RuntimeWarning, match="failed"):
            outcome = observe(ledger, "allergy", "peanut", "I'm allergic to peanut", evidence_event="e2")
        assert outcome.decision == "insert"            # kept, as its own fact (a duplicate is cheap)
        assert {f["value"] for f in ledger.facts("a", "u", include_sensitive=True)} == {"peanuts", "peanut"}
        assert ledger._conn.execute("SELECT count(*) FROM fact_vectors").fetchone()[0] == 1
        monkeypatch.undo()
    monkeypatch.delenv("FACTLEDGER_EMBEDDER", raising=False)
    with Ledger(tmp_path / "l.db") as ledger:           # the next write open embeds what was missed
        # ... and runs the meaning check it owed: the rewording counts towards peanuts
        # (tests/semantic/test_semantic_recheck.py)
        assert {f["value"] for f in ledger.facts("a", "u", include_sensitive=True)} == {"peanuts"}
        assert ledger._conn.execute("SELECT count(*) FROM fact_vectors").fetchone()[0] == 1
        assert ledger.verify()["ok"]
