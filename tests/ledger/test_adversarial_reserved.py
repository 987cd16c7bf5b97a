"""No write path files anything under a reserved user id (issue 32, class 12).

`observe` refused the ledger's own user ids (`_erasures`, `_checkpoints`, `erased:...`), but a
session whose user id was one of them (or `ingest --user _checkpoints`) was ingested: its
rejected candidates (value and quote) and its `SessionIngested` landed in the receipts' or the
checkpoints' partition, where no forget reaches them.  A re-chained export could file events
there too.  Every write path now applies the one test (`candidate.reserved_user`); `_domain`, the
partition of facts shared by every user of an app, stays writable.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger, LedgerError
from factledger.ledger.tlog.note import new_signer
from tests.audit.test_adversarial_timestamps import rechained
from tests.conftest import MovableClock, cand

RESERVED = ["_erasures", "_checkpoints", "erased:0123456789abcdef"]


def session_file(folder: Path, user: str | None) -> Path:
    data = {"id": "s1", "appName": "app", "events": [
        {"id": "s1-e1", "author": "user", "timestamp": 1788080400.0,
         "content": {"parts": [{"text": "I live in Pune and I am vegan. My ticket is #4411"}]}}]}
    if user is not None:
        data["userId"] = user
    path = folder / f"session-{len(list(folder.glob('session-*')))}.json"
    path.write_text(json.dumps(data))
    return path


def events_of(db: Path) -> list[tuple]:
    if not db.exists():
        return []
    with Ledger(db, create=False) as ledger:
        return ledger._conn.execute("SELECT type, user FROM events").fetchall()


@pytest.mark.parametrize("user", RESERVED)
def test_ingest_of_a_session_naming_a_reserved_user_is_refused(tmp_path, user):
    db = tmp_path / "ledger.db"
    Ledger(db, create=True).close()
    runner = CliRunner()
    for args in (["ingest", str(session_file(tmp_path, user)), "--extractor", "patterns"],
                 ["ingest", str(session_file(tmp_path, None)), "--user", user, "--extractor", "patterns"]):
        result = runner.invoke(cli, ["--db", str(db), *args])
        assert result.exit_code == 1, result.output
        assert "Error: " in result.stderr and "is reserved" in result.stderr, result.stderr
        assert events_of(db) == []                                 # nothing written
    with Ledger(db, clock=MovableClock()) as ledger:
        raw = json.loads(session_file(tmp_path, user).read_text())
        with pytest.raises(LedgerError, match="is reserved"):
            ledger.ingest_session(raw, extractor="patterns")
        with pytest.raises(LedgerError, match="is reserved"):
            ledger.ingest_session({k: v for k, v in raw.items() if k != "userId"}, user=user, extractor="patterns")
        with pytest.raises(LedgerError, match="is reserved"):
            ledger.observe(cand(user=user))
        assert ledger.head()[0] == 0


@pytest.mark.parametrize("user", RESERVED)
def test_observe_on_the_command_line_is_refused(tmp_path, user):
    db = tmp_path / "ledger.db"
    Ledger(db, create=True).close()
    result = CliRunner().invoke(cli, ["--db", str(db), "observe", "--app", "app", "--user", user,
                                      "--predicate", "diet", "--value", "vegan", "--quote", "I am vegan",
                                      "--session", "s1", "--event-id", "e1", "--said-at", "2026-10-01"])
    assert result.exit_code == 1 and "Error: " in result.stderr and "is reserved" in result.stderr
    assert events_of(db) == []


def test_the_shared_domain_user_stays_writable(tmp_path):
    db = tmp_path / "ledger.db"
    Ledger(db, create=True).close()
    result = CliRunner().invoke(cli, ["--db", str(db), "ingest", str(session_file(tmp_path, "_domain")),
                                      "--extractor", "patterns"])
    assert result.exit_code == 0, result.output
    with Ledger(db, clock=MovableClock()) as ledger:
        ledger.observe(cand(user="_domain", predicate="diet", value="vegan", session="s2"))
        assert {f["predicate"] for f in ledger.facts("app", "_domain")} >= {"home_city", "diet"}


def legitimate_export(tmp_path) -> list[dict]:
    """A log holding what the ledger itself files under reserved ids: receipts, a forgotten
    user's pseudonymised events, a checkpoint."""
    clock = MovableClock()
    with Ledger(tmp_path / "source.db", clock=clock, create=True) as ledger:
        ledger.observe(cand(predicate="home_city", value="Pune", session="s1", said_at="2026-08-01"))
        ledger.observe(cand(user="u2", value="vegan", session="s2"))
        ledger.observe(cand(user="u3", value="vegan", session="s3"))
        clock.tick()
        ledger.forget("app", "u1", session="s1", reason="r")
        ledger.forget("app", "u3", reason="r")
        ledger.checkpoint(new_signer("example.org/ledger"))
        out = io.StringIO()
        ledger.export_log(out)
    rows = [orjson.loads(line) for line in out.getvalue().splitlines()]
    assert {r["user"] for r in rows[1:]} >= {"_erasures", "_checkpoints"}
    assert any(r["user"].startswith("erased:") for r in rows[1:])
    return rows


def test_import_keeps_what_the_ledger_files_under_reserved_ids(tmp_path):
    path = tmp_path / "ok.jsonl"
    path.write_text(rechained(legitimate_export(tmp_path), "FactObserved", lambda b: None))
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "ok.db"), "import", str(path)])
    assert result.exit_code == 0, result.output


def refile(user):
    def change(row_body):
        row_body["user"] = user
    return change


@pytest.mark.parametrize("user", RESERVED)
def test_import_refuses_a_statement_filed_under_a_reserved_user(tmp_path, user):
    rows = legitimate_export(tmp_path)
    observed = next(i for i, r in enumerate(rows) if r.get("type") == "FactObserved" and r["body"] is not None)
    rows[observed] = {**rows[observed], "user": user}             # the row's partition ...
    path = tmp_path / "x.jsonl"
    path.write_text(rechained(rows, "FactObserved", refile(user)))   # ... and the body's, re-chained
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "b.db"), "import", str(path)])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("Error: line ") and "reserved user id" in result.stderr, result.stderr
    assert not (tmp_path / "b.db").exists()


def test_the_adk_service_files_reserved_names_under_escaped_ones(tmp_path):
    pytest.importorskip("google.adk")
    import asyncio

    from google.adk.events import Event
    from google.adk.sessions import Session
    from google.genai import types

    from factledger.adk import LedgerMemoryService

    said = 1788080400.0
    with Ledger(tmp_path / "adk.db", clock=MovableClock(), create=True) as ledger:
        memory = LedgerMemoryService(ledger, extractor="patterns")
        for user in RESERVED:
            event = Event(id="e1", author="user", timestamp=said,
                          content=types.Content(role="user", parts=[types.Part(text="I live in Pune")]))
            asyncio.run(memory.add_session_to_memory(
                Session(id="s1", app_name="mealkit", user_id=user, events=[event], last_update_time=said)))
        users = {u for (u,) in ledger._conn.execute("SELECT DISTINCT user FROM events")}
        assert users == {"~" + u for u in RESERVED}
