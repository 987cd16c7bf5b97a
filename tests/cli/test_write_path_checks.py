"""Every write path makes the checks ingestion makes (issue 28): the three everyday negations
retract their facts through `ingest`, `observe` refuses a quote that does not state its value,
and a mistyped --db creates nothing. Real subprocesses on a real ledger file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from factledger.ledger import Ledger

FACTLEDGER = str(Path(sys.executable).parent / "factledger")
PART = ["--app", "a", "--user", "u"]


def cli(db: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([FACTLEDGER, "--db", str(db), *args], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "FACTLEDGER_NOW": "2026-06-01T00:00:00Z",
                               "HF_HUB_OFFLINE": "1"})


def transcript(path: Path, session: str, lines: list[tuple[str, str, str]]) -> Path:
    rows = [{"session": session, "app": "a", "user": "u"}]
    rows += [{"id": i, "author": "user", "timestamp": at, "text": text} for i, at, text in lines]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def open_values(db: Path) -> set[tuple[str, str]]:
    """Every open fact of the partition, whatever its sensitivity (read through the library, so
    the check does not depend on the CLI's clearance words)."""
    with Ledger(db) as ledger:
        return {(f["predicate"], f["value"]) for f in ledger.facts("a", "u", include_sensitive=True)}


def test_the_three_negations_retract_their_facts_through_ingest(tmp_path):
    db = tmp_path / "l.db"
    said = transcript(tmp_path / "1.jsonl", "s1", [
        ("e1", "2026-01-10T09:00:00Z", "I have a dog and a cat."),
        ("e2", "2026-01-10T09:01:00Z", "I'm allergic to shellfish and peanuts."),
        ("e3", "2026-01-10T09:02:00Z", "I live in south carolina."),
    ])
    first = cli(db, "ingest", str(said), "--create", "--extractor", "patterns", "--json")
    assert first.returncode == 0, first.stderr
    assert open_values(db) == {("pet", "dog"), ("pet", "cat"), ("allergy", "shellfish"),
                               ("allergy", "peanuts"), ("home_city", "South Carolina")}

    gone = transcript(tmp_path / "2.jsonl", "s2", [
        ("f1", "2026-02-01T09:00:00Z", "I don't have a dog anymore."),
        ("f2", "2026-02-01T09:01:00Z", "I'm not allergic to shellfish after all."),
    ])
    second = cli(db, "ingest", str(gone), "--extractor", "patterns", "--json")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["applied"] == {"retract": 2}
    assert open_values(db) == {("pet", "cat"), ("allergy", "peanuts"), ("home_city", "South Carolina")}

    # "I no longer have a dog" retracts too, once there is a dog again to retract
    again = transcript(tmp_path / "3.jsonl", "s3", [
        ("g1", "2026-03-01T09:00:00Z", "I have a dog again."),
        ("g2", "2026-04-01T09:00:00Z", "I no longer have a dog."),
    ])
    third = cli(db, "ingest", str(again), "--extractor", "patterns", "--json")
    assert third.returncode == 0, third.stderr
    assert json.loads(third.stdout)["applied"] == {"insert": 1, "retract": 1}
    assert ("pet", "dog") not in open_values(db)
    history = json.loads(cli(db, "history", *PART, "--predicate", "pet", "--json").stdout)
    ended = {h["valid_to"][:10] for h in history if h["value"] == "dog" and h["state"] == "retracted"}
    assert ended == {"2026-02-01", "2026-04-01"}            # each dog ended when it was retracted


def test_observe_holds_an_unsupported_value_and_refuses_a_negation_that_does_not_negate(tmp_path):
    db = tmp_path / "l.db"
    assert cli(db, "init").returncode == 0
    base = ["observe", *PART, "--predicate", "employer", "--session", "s1", "--said-at", "2026-01-01"]
    kept = cli(db, *base, "--value", "Acme Corp", "--quote", "I work at Acme Corp", "--event-id", "e1")
    assert kept.returncode == 0, kept.stderr

    held = cli(db, *base, "--value", "Globex", "--quote", "I ate steak", "--event-id", "e2")
    assert held.returncode == 0, held.stderr
    assert json.loads(held.stdout)["decision"] == "hold" and "unsupported_by_quote" in held.stdout
    assert open_values(db) == {("employer", "Acme Corp")}       # held, not served
    head = cli(db, "head").stdout

    negation = cli(db, *base, "--value", "Acme Corp", "--quote", "Acme Corp is big", "--negated",
                   "--event-id", "e3")
    assert negation.returncode == 1 and "negation_not_in_quote" in negation.stderr
    assert negation.stderr.startswith("Error: ") and "Traceback" not in negation.stderr
    assert cli(db, "head").stdout == head                       # not even a rejection recorded


def test_observe_on_a_mistyped_db_creates_nothing(tmp_path):
    typo = tmp_path / "typo.db"
    out = cli(typo, "observe", *PART, "--predicate", "employer", "--value", "Globex",
              "--quote", "I work at Globex", "--session", "s1", "--event-id", "e1",
              "--said-at", "2026-01-01")
    assert out.returncode == 1 and out.stderr.startswith("Error: no ledger at")
    assert not typo.exists()


def test_a_refused_observe_with_create_leaves_no_new_ledger(tmp_path):
    db = tmp_path / "new.db"
    refused = cli(db, "observe", *PART, "--predicate", "employer", "--value", "Globex", "--quote", "!!",
                  "--session", "s1", "--event-id", "e1", "--said-at", "2026-01-01", "--create")
    assert refused.returncode == 1 and refused.stderr.startswith("Error: ")
    assert not db.exists() and not list(tmp_path.glob("new.db*"))


def test_after_all_alone_does_not_negate(tmp_path):
    """'after all' closes a negation ("not allergic after all"); by itself the sentence affirms."""
    db = tmp_path / "l.db"
    Ledger(db, create=True).close()
    base = ["observe", *PART, "--predicate", "diet", "--value", "vegan", "--session", "s1",
            "--said-at", "2026-01-01", "--negated"]
    affirmed = cli(db, *base, "--quote", "I am vegan after all", "--event-id", "e1")
    assert affirmed.returncode == 1 and "negation" in affirmed.stderr
    negated = cli(db, *base, "--quote", "I am not vegan after all", "--event-id", "e2")
    assert negated.returncode == 0, negated.stderr
