"""Serve records have a retention of their own: `[serves] retention_days` in the registry (applied
by `retain --apply` with the rest of the policy) or `retain --serves-older-than DAYS` (a run of
its own).  An expired record is scrubbed whole through the forget machinery (no caller, fact ids
or hashes left; the envelope keeps the chain), the receipt counts it, and `verify` passes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from factledger.ledger import Ledger, LedgerError
from factledger.ledger.registry.predicates import default_registry_path, parse_registry
from tests.access.test_served_forget import scan
from tests.conftest import MovableClock, cand

USER = "zqr-retained"
FACTLEDGER = [str(Path(sys.executable).with_name("factledger"))]


def _two_serves(ledger, clock) -> tuple[int, int]:
    """An old serve (2026-09-01) and a new one (2026-10-25) that also serves a newer fact."""
    clock.set("2026-09-01T00:00:00Z")
    ledger.observe(cand(user=USER, value="vegetarian", said_at="2026-08-30T10:00:00Z"))
    old = ledger.recall("app", USER, "", preload=True, served_to="old-bot").served_seq
    clock.set("2026-10-25T00:00:00Z")
    ledger.observe(cand(user=USER, predicate="home_city", value="Pune", event="e2", said_at="2026-10-24T10:00:00Z"))
    new = ledger.recall("app", USER, "", preload=True, served_to="new-bot").served_seq
    clock.set("2026-11-01T00:00:00Z")
    return old, new


def test_serves_older_than_expires_the_old_records_whole(tmp_path):
    db = tmp_path / "l.db"
    clock = MovableClock()
    with Ledger(db, clock=clock, create=True) as ledger:
        old, new = _two_serves(ledger, clock)
        old_hash, new_hash = (r["text_sha256"] for r in ledger.served("app", USER))
        assert old_hash != new_hash
        plan = ledger.retain(serves_older_than=30)                 # a dry run changes nothing
        assert plan["dry_run"] and plan["counts"]["serve_records_expired"] == 1
        assert [r["seq"] for r in ledger.served("app", USER)] == [old, new]
        receipt = ledger.retain(apply=True, serves_older_than=30)
        assert receipt["counts"]["serve_records_expired"] == 1
        assert receipt["retention_days"] == {"[serves]": 30} and "[serves]" in receipt["policy"]
        assert ledger.verify()["ok"]
        rows = ledger.served("app", USER)
        assert [(r["seq"], r["caller"]) for r in rows] == [(new, "new-bot")]    # the new one stands
        assert sorted(f["value"] for f in ledger.facts("app", USER)) == ["Pune", "vegetarian"]  # untouched
        with pytest.raises(LedgerError, match="erased"):
            ledger.serves.served_show(old)
        assert ledger.serves.served_show(new)["identical"] is True
        assert ledger.retain(apply=True, serves_older_than=30)["noop"]          # nothing left to expire
        with pytest.raises(LedgerError, match="a run of its own"):
            ledger.retain(serves_older_than=30, predicate="diet")
    assert scan(db, [old_hash, "old-bot"]) == {}


def test_a_forgotten_users_copies_expire_too(tmp_path):
    db = tmp_path / "l.db"
    clock = MovableClock()
    with Ledger(db, clock=clock, create=True) as ledger:
        _two_serves(ledger, clock)
        ledger.forget("app", USER, reason="request", requested_by="dpo")
        assert [r["caller"] for r in ledger.served("app", USER)] == ["old-bot", "new-bot"]   # the copies
        receipt = ledger.retain(apply=True, serves_older_than=30)
        assert receipt["counts"]["serve_records_expired"] == 1
        assert [r["caller"] for r in ledger.served("app", USER)] == ["new-bot"]
        assert ledger.verify()["ok"]
    assert scan(db, ["old-bot"]) == {}


def test_the_registry_policy_expires_serve_records_with_retain_apply(tmp_path):
    registry = tmp_path / "registry.toml"
    registry.write_text(default_registry_path().read_text() + "\n[serves]\nretention_days = 30\n")
    db = tmp_path / "l.db"
    clock = MovableClock()
    with Ledger(db, registry=registry, clock=clock, create=True) as ledger:
        _old, new = _two_serves(ledger, clock)
    env = {"FACTLEDGER_DB": str(db), "FACTLEDGER_REGISTRY": str(registry), "FACTLEDGER_NOW": "2026-11-01T00:00:00Z"}
    done = subprocess.run([*FACTLEDGER, "retain", "--all", "--apply", "--yes", "--json"],
                          capture_output=True, text=True, env={**_base_env(), **env})
    assert done.returncode == 0, done.stderr
    receipt = json.loads(done.stdout)
    assert receipt["counts"]["serve_records_expired"] == 1 and receipt["retention_days"]["[serves]"] == 30
    with Ledger(db, registry=registry, read_only=True) as ledger:
        assert [r["seq"] for r in ledger.served("app", USER)] == [new]
        assert ledger.verify()["ok"]
    bad = subprocess.run([*FACTLEDGER, "retain", "--all", "--serves-older-than", "0"],
                         capture_output=True, text=True, env={**_base_env(), **env})
    assert bad.returncode == 1 and bad.stderr.startswith("Error: --serves-older-than")


def test_the_registry_checks_its_serves_table():
    base = default_registry_path().read_bytes()
    assert parse_registry(base).serve_retention_days is None
    assert parse_registry(base + b"\n[serves]\nretention_days = 400\n").serve_retention_days == 400
    for bad in (b"\n[serves]\nretention_days = 0\n", b"\n[serves]\nretention_days = \"a year\"\n",
                b"\n[serves]\nkeep = 3\n"):
        with pytest.raises(LedgerError, match="serves"):
            parse_registry(base + bad)


def _base_env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith("FACTLEDGER_")}
