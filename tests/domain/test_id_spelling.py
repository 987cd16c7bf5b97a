"""Every spelling of an id reaches one partition: NFC and NFD, surrounding spaces.

Before ids were normalised at the library's boundary, `forget --user "jose\\u0301"` after
observing for "josé" (NFC) returned a zero-count receipt with exit 0 and the facts stayed; so did
`Ledger.forget`, `export --data-subject`, `log` and the ADK `delete_memory`.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from factledger.ledger import Ledger, LedgerError, make_candidate
from factledger.ledger.errors import InvalidId
from factledger.ledger.vocabulary.ids import normalise_id

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
APP = "caf\u00e9"                   # NFC
USER = "jos\u00e9"
APP_NFD = "  cafe\u0301 "           # the same ids, decomposed and padded
USER_NFD = " jose\u0301\t"
SESSION, SESSION_NFD = "s\u00e9ance-1", "se\u0301ance-1 "
assert unicodedata.normalize("NFC", USER_NFD.strip()) == USER and USER_NFD != USER


def observe(ledger, value="vegan", session=SESSION, event="e1", app=APP, user=USER,
            said_at="2026-08-30T10:00:00Z", predicate="diet"):
    return ledger.observe(make_candidate(app=app, user=user, predicate=predicate, value=value,
                                         quote=f"I'm {value}", session=session,
                                         evidence_event=event, said_at=said_at))


@pytest.fixture
def ledger(tmp_path, clock):
    with Ledger(tmp_path / "ids.db", clock=clock, create=True) as opened:
        observe(opened)
        observe(opened, "Pune", session="s2", event="e2", predicate="home_city")
        yield opened


def test_normalise_id_is_the_one_rule():
    assert normalise_id(USER_NFD) == USER
    for bad in ("", "   ", "a\u200bb", "a\x00b", "a\ud800b", "x" * 201, None, 5):
        with pytest.raises(InvalidId):
            normalise_id(bad)
    assert issubclass(InvalidId, LedgerError) and issubclass(InvalidId, ValueError)


def test_observing_in_another_spelling_lands_in_the_same_partition(ledger):
    outcome = observe(ledger, "vegan", session=SESSION_NFD, event="e3", app=APP_NFD, user=USER_NFD,
                      said_at="2026-09-01T00:00:00Z")
    assert (outcome.decision, outcome.reason) == ("reject", "already_counted")   # the same session
    assert {(r["app"], r["user"]) for r in ledger.log()} >= {(APP, USER)}
    assert all(r["app"] != APP_NFD.strip() for r in ledger.log())


def test_every_read_finds_the_partition_in_any_spelling(ledger):
    facts = ledger.facts(APP_NFD, USER_NFD)
    assert {f["value"] for f in facts} == {"vegan", "Pune"}
    assert len(ledger.history(APP_NFD, USER_NFD)) == len(ledger.history(APP, USER)) > 0
    fact_id = facts[0]["fact_id"]
    assert ledger.why(f"  {fact_id} ")["fact"]["fact_id"] == fact_id
    assert len(ledger.log(app=APP_NFD, user=USER_NFD)) == len(ledger.log(app=APP, user=USER)) == 2
    assert ledger.recall(APP_NFD, USER_NFD, "vegan", clearance="all").selected
    assert ledger.export_subject(APP_NFD, USER_NFD)["facts"]
    assert ledger.export_subject(APP_NFD, USER_NFD)["user"] == USER
    assert ledger.sessions(APP_NFD, USER_NFD) == ledger.sessions(APP, USER)
    assert ledger.held(APP_NFD, USER_NFD) == ledger.held(APP, USER)
    assert ledger.lookup.ingest_queue(APP_NFD, USER_NFD, status=None) == ledger.lookup.ingest_queue(APP, USER, status=None)


@pytest.mark.parametrize("scope", ["user", "session", "fact"])
def test_forget_in_another_spelling_erases(ledger, scope):
    options = {}
    if scope == "session":
        options["session"] = SESSION_NFD
    if scope == "fact":
        options["fact"] = " " + next(f["fact_id"] for f in ledger.facts(APP, USER) if f["value"] == "vegan")
    receipt = ledger.forget(APP_NFD, USER_NFD, reason="request", **options)
    assert not receipt["noop"] and receipt["counts"]["events"] >= 1
    assert "vegan" not in {f["value"] for f in ledger.facts(APP, USER)}
    assert ledger.erasures(" " + unicodedata.normalize("NFD", APP))      # the receipts, found
    if scope == "session":
        assert ledger.erased.is_forgotten_session(APP_NFD, USER_NFD, SESSION_NFD)


def test_retain_and_export_filters_take_any_spelling(ledger, tmp_path):
    plan = ledger.retain(older_than=1, predicate="diet", app=APP_NFD, user=USER_NFD)
    assert plan["dry_run"] and plan["plan"], plan
    with open(tmp_path / "part.jsonl", "w") as out:
        assert ledger.export_log(out, APP_NFD, USER_NFD) == 2


def test_ingest_with_flags_in_another_spelling(ledger):
    session = {"id": "chat-1", "appName": APP, "userId": USER, "events": [
        {"id": "c1", "author": "user", "timestamp": 1788080400.0,
         "content": {"role": "user", "parts": [{"text": "I'm vegetarian"}]}}]}
    result = ledger.ingest_session(session, app=APP_NFD, user=USER_NFD, extractor="patterns")
    assert result.status == "ingested" and (result.app, result.user) == (APP, USER)
    nfd_session = dict(session, id=" chat-1 ", appName=APP_NFD, userId=USER_NFD)
    assert ledger.ingest_session(nfd_session, extractor="patterns").status == "unchanged"


def test_adk_delete_memory_in_another_spelling(ledger):
    pytest.importorskip("google.adk")
    from factledger.adk import LedgerMemoryService

    memory = LedgerMemoryService(ledger)
    asyncio.run(memory.delete_memory(app_name=APP_NFD, user_id=USER_NFD))
    assert ledger.facts(APP, USER) == []


def test_bad_ids_are_bad_input(ledger):
    for call in (lambda: ledger.facts(APP, "a\u200bb"), lambda: ledger.forget(APP, " ", reason="x"),
                 lambda: ledger.why("\x00"), lambda: ledger.log(user="")):
        with pytest.raises(LedgerError):
            call()
    with pytest.raises(LedgerError):
        observe(ledger, user="jos\u00e9\u200d")         # a zero-width joiner is not an id


def run(db, *args, ok=True):
    env = dict(os.environ, FACTLEDGER_NOW="2026-11-01T00:00:00Z", FACTLEDGER_DB=str(db))
    if args and args[0] in ("observe", "ingest"):
        args = (*args, "--create")             # these cases start from a fresh file
    done = subprocess.run([FACTLEDGER, *args], capture_output=True, text=True, env=env)
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def test_cli_forget_user_in_nfd_erases_the_nfc_user(tmp_path):
    db = tmp_path / "cli.db"
    run(db, "observe", "--app", "mealkit", "--user", "jos\u00e9", "--predicate", "diet", "--value",
        "vegan", "--quote", "I'm vegan", "--session", "s1", "--event-id", "e1", "--said-at", "2026-08-30")
    nfd = ["--app", "mealkit", "--user", "jose\u0301"]
    assert json.loads(run(db, "facts", *nfd, "--json").stdout)
    assert json.loads(run(db, "log", *nfd, "--json").stdout)
    subject = json.loads(run(db, "export", *nfd, "--data-subject").stdout)
    assert subject["facts"] and subject["user"] == "jos\u00e9"
    receipt = json.loads(run(db, "forget", *nfd, "--reason", "request", "--yes", "--json").stdout)
    assert receipt["noop"] is False and receipt["counts"]["events"] == 1
    assert json.loads(run(db, "facts", "--app", "mealkit", "--user", "jos\u00e9", "--json").stdout) == []
    assert run(db, "verify").returncode == 0


def test_cli_session_and_fact_ids_in_another_spelling(tmp_path):
    db = tmp_path / "cli.db"
    part = ["--app", "mealkit", "--user", "priya"]
    out = json.loads(run(db, "observe", *part, "--predicate", "diet", "--value", "vegan", "--quote",
                         "I'm vegan", "--session", "s\u00e9ance", "--event-id", "e1", "--said-at",
                         "2026-08-30", "--json").stdout)
    run(db, "observe", *part, "--predicate", "home_city", "--value", "Pune", "--quote", "in Pune",
        "--session", "other", "--event-id", "e2", "--said-at", "2026-08-30")
    assert run(db, "why", f" {out['fact_id']} ").returncode == 0
    receipt = json.loads(run(db, "forget", *part, "--session", "se\u0301ance", "--reason", "r", "--yes",
                             "--json").stdout)
    assert receipt["counts"]["events"] == 1
    left = json.loads(run(db, "facts", *part, "--json").stdout)
    assert [f["value"] for f in left] == ["Pune"]
    done = run(db, "facts", "--app", "mealkit", "--user", "a\u200bb", ok=False)
    assert done.returncode == 1 and done.stderr.startswith("Error: ")


def test_log_filters_take_any_spelling_of_an_id(tmp_path):
    """`log --user/--session` read the log directly: the same one spelling applies there."""
    from factledger.ledger.audit.logquery import iter_log

    with Ledger(tmp_path / "log.db", create=True) as ledger:
        ledger.observe(make_candidate(app="app", user="jos\u00e9", predicate="diet", value="vegan",
                                      quote="I am vegan", session="s\u00e9", evidence_event="e1",
                                      said_at="2026-09-01"))
        spelled = list(iter_log(ledger._conn, app=" app", user="jose\u0301", session="se\u0301"))
        assert [row["type"] for row in spelled] == ["FactObserved"]
