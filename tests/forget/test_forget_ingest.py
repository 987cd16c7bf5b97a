"""Forgotten sessions stay forgotten: ingestion refuses a session whose hash is on the list."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import LedgerError


def session(sid="meal-9", user="priya"):
    return {"id": sid, "appName": "mealkit", "userId": user, "events": [
        {"id": f"{sid}-e1", "author": "user", "timestamp": 1788080400.0,
         "content": {"parts": [{"text": "Hi! I'm vegetarian, and we live in Pune."}]}}]}


def test_reingesting_a_forgotten_session_is_refused(ledger):
    ledger.ingest_session(session())
    assert ledger.facts("mealkit", "priya")
    ledger.forget("mealkit", "priya", session="meal-9", reason="request")
    assert ledger.erased.is_forgotten_session("mealkit", "priya", "meal-9")
    head = ledger.head()
    with pytest.raises(LedgerError, match="forgotten"):
        ledger.ingest_session(session())
    assert ledger.head() == head and ledger.facts("mealkit", "priya") == []
    ledger.ingest_session(session("meal-10"))                  # a new session is welcome
    assert ledger.facts("mealkit", "priya")


def test_sessions_of_an_erased_user_are_refused_too(ledger):
    ledger.ingest_session(session())
    ledger.forget("mealkit", "priya", reason="erase")
    with pytest.raises(LedgerError, match="forgotten"):
        ledger.ingest_session(session())


def test_cli_reingest_of_a_forgotten_session_is_skipped_erased(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(session()))
    db = str(tmp_path / "l.db")
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", db, "ingest", str(path), "--create"]).exit_code == 0
    assert runner.invoke(cli, ["--db", db, "forget", "--app", "mealkit", "--user", "priya",
                               "--session", "meal-9", "--reason", "r", "--yes"]).exit_code == 0
    again = runner.invoke(cli, ["--db", db, "ingest", str(path), "-t"])
    assert again.exit_code == 0 and "1 skipped (erased)" in again.stdout    # on purpose, not a failure
    summary = runner.invoke(cli, ["--db", db, "ingest", str(path), "--json"])
    assert summary.exit_code == 0
    assert [r["status"] for r in json.loads(summary.stdout)["results"]] == ["skipped"]


def test_a_forget_committed_during_extraction_wins(tmp_path):
    """The forget lands between the first check and the write transaction: nothing is ingested."""
    from factledger.ledger import Ledger
    from factledger.ledger.ingest.patterns import PatternsExtractor

    path = tmp_path / "l.db"
    with Ledger(path, create=True) as ours, Ledger(path, create=True) as theirs:
        ours.ingest_session(session())
        grown = session()
        grown["events"].append({"id": "meal-9-e2", "author": "user", "timestamp": 1788080500.0,
                                "content": {"parts": [{"text": "We moved to Bengaluru."}]}})

        class Racing(PatternsExtractor):
            def extract(self, delta, context):
                if not theirs.erased.is_forgotten_session("mealkit", "priya", "meal-9"):
                    theirs.forget("mealkit", "priya", session="meal-9", reason="request")
                return super().extract(delta, context)

        with pytest.raises(LedgerError, match="forgotten"):
            ours.ingest_session(grown, extractor=Racing())
        assert ours.facts("mealkit", "priya", include_sensitive=True) == []
        assert len(ours.log(app="mealkit", user="priya", type="SessionIngested")) == 1
