"""Dedup meaning checks an encoder failure deferred: queued in the log, run again at the next
write open or by `ingest --retry-failed`, answered with events; nothing is lost on the way."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from factledger.ledger import Ledger, make_candidate
from factledger.ledger.semantic import embedder as encoders

FACTLEDGER = shutil.which("factledger", path=str(Path(sys.executable).parent))


class Broken:
    identity = "broken"

    def embed(self, text):
        raise RuntimeError("the runtime fell over")


def observe(ledger, value, session, event):
    return ledger.observe(make_candidate(
        app="a", user="u", predicate="allergy", value=value, quote=f"I'm allergic to {value}",
        session=session, evidence_event=event, said_at="2026-09-01T10:00:00Z"))


def values(ledger) -> set[str]:
    return {f["value"] for f in ledger.facts("a", "u", include_sensitive=True)}


def events(ledger, type_: str) -> list[dict]:
    return [json.loads(b) for (b,) in ledger._conn.execute(
        "SELECT body FROM events WHERE type = ? ORDER BY seq", (type_,))]


def broken_write(path: Path, monkeypatch, *later: str) -> None:
    """`peanuts` with the encoder working, then each of `later` while it raises."""
    with Ledger(path, create=True) as ledger:
        observe(ledger, "peanuts", "s1", "e1")
        monkeypatch.setattr(encoders, "get", lambda: Broken())
        for k, value in enumerate(later, start=2):
            with pytest.warns(RuntimeWarning, match="failed"):
                outcome = observe(ledger, value, f"s{k}", f"e{k}")
            assert outcome.decision == "insert"         # kept, decided by the exact rules
        assert values(ledger) == {"peanuts", *later}
        assert [b["value"] for b in events(ledger, "FactObserved") if b.get("unchecked")] == list(later)
        monkeypatch.undo()
    monkeypatch.delenv("FACTLEDGER_EMBEDDER", raising=False)


def test_the_next_write_open_merges_what_meaning_would_have(tmp_path, monkeypatch, meaning):
    path = tmp_path / "l.db"
    broken_write(path, monkeypatch, "peanut")
    with Ledger(path) as ledger:
        assert values(ledger) == {"peanuts"}             # the rewording counts towards peanuts now
        [checked] = events(ledger, "MeaningChecked")
        assert checked["rule"] == "same_meaning"
        [(fact_id, reinforcements, sessions)] = ledger._conn.execute(
            "SELECT fact_id, reinforcements, sessions FROM facts_current").fetchall()
        assert checked["by_fact_id"] == fact_id
        assert reinforcements == 1                        # s2's statement, as a reinforcement would count it
        assert [s[0] for s in json.loads(sessions)] == ["s1", "s2"]
        # nothing lost: the statement is still in the log and in the merged fact's history
        assert [b["value"] for b in events(ledger, "FactObserved")] == ["peanuts", "peanut"]
        assert ledger._conn.execute("SELECT count(*) FROM fact_vectors").fetchone()[0] == 1
        assert ledger.replay_differences() == []          # the decision is the log's: replay == live
        assert ledger.verify()["ok"]
    with Ledger(path) as ledger:                          # answered once: no second check
        assert len(events(ledger, "MeaningChecked")) == 1


def test_a_value_of_its_own_is_answered_and_kept(tmp_path, monkeypatch, meaning):
    path = tmp_path / "l.db"
    broken_write(path, monkeypatch, "walnuts", "peanut")
    with Ledger(path) as ledger:
        checked = events(ledger, "MeaningChecked")
        assert [c["rule"] for c in checked] == ["meaning_retry", "same_meaning"]
        assert checked[0].get("by_fact_id") is None
        assert values(ledger) == {"peanuts", "walnuts"}
        assert ledger.replay_differences() == []


def test_an_encoder_still_broken_leaves_the_checks_owed(tmp_path, monkeypatch, meaning):
    path = tmp_path / "l.db"
    broken_write(path, monkeypatch, "peanut")
    monkeypatch.setattr(encoders, "get", lambda: Broken())
    with pytest.warns(RuntimeWarning, match="failed"), Ledger(path) as ledger:
        assert events(ledger, "MeaningChecked") == []
        assert values(ledger) == {"peanuts", "peanut"}
    monkeypatch.undo()
    monkeypatch.delenv("FACTLEDGER_EMBEDDER", raising=False)
    with Ledger(path) as ledger:                          # survives the restart, runs once it works
        assert values(ledger) == {"peanuts"}


def test_forgetting_the_rewording_leaves_the_first_value_as_it_was(tmp_path, monkeypatch, meaning):
    path = tmp_path / "l.db"
    broken_write(path, monkeypatch, "peanut")
    with Ledger(path) as ledger:
        assert values(ledger) == {"peanuts"}
        ledger.forget("a", "u", session="s2", reason="request", requested_by="test")
        assert ledger._conn.execute("SELECT value, reinforcements FROM facts_current").fetchall() == [
            ("peanuts", 0)]
        assert ledger.replay_differences() == []


def test_cli_retry_failed_runs_the_owed_checks(tmp_path, monkeypatch, meaning):
    path = tmp_path / "l.db"
    broken_write(path, monkeypatch, "peanut")
    with Ledger(path, leave_schema=True) as ledger:      # a copy without the mark (an imported log)
        ledger._conn.execute("DELETE FROM ledger_meta WHERE key = 'meaning_checks_owed'")
        ledger._conn.commit()
    env = {k: v for k, v in os.environ.items() if k != "FACTLEDGER_EMBEDDER"}
    done = subprocess.run([FACTLEDGER, "--db", str(path), "ingest", "--retry-failed", "--json"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["meaning_checks"] == {"checked": 1, "merged": 1, "owed": 0}
    with Ledger(path) as ledger:
        assert values(ledger) == {"peanuts"}
        assert ledger.verify()["ok"]


def test_the_owed_check_runs_on_postgresql_too(postgres, monkeypatch, meaning):
    location = postgres.location()
    broken_write(location, monkeypatch, "peanut")
    with Ledger(location) as ledger:
        assert values(ledger) == {"peanuts"}
        assert [c["rule"] for c in events(ledger, "MeaningChecked")] == ["same_meaning"]
        assert ledger.replay_differences() == []
