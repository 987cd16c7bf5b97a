"""Retention plans every partition holding anything past its retention (issue 32, class 9).

`retain` looked for partitions through the facts only (`fact_history.confirmed_at`), so a held
or rejected candidate past its retention (its value and quote) was erased in a partition that
also held an expired fact, and kept in one that did not.  The plan of a partition already took
such candidates (and the digest of their session); the partitions are now found by both.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factledger.ledger import Ledger
from factledger.ledger.registry.predicates import default_registry_path
from tests.conftest import MovableClock, cand

NOW = "2026-11-01T00:00:00Z"          # support_ticket keeps 90 days: cut at 2026-08-03
OLD, NEW = "2026-05-01T00:00:00Z", "2026-10-20T00:00:00Z"
VISIT = """
[predicates.zq_visit]
cardinality = "many"
sensitivity = "normal"
kind = "fact"
description = "A visit (a predicate this registry learnt after its candidates were held)"
retention_days = 30
"""


def registry_with_visits(folder: Path) -> Path:
    path = folder / "registry.toml"
    path.write_text(default_registry_path().read_text() + VISIT)
    return path


def scan(db: Path, markers) -> dict[str, list[str]]:
    """marker -> the files (db, -wal) whose raw bytes contain it."""
    hits: dict[str, list[str]] = {}
    for suffix in ("", "-wal", "-journal"):
        path = Path(str(db) + suffix)
        if path.exists():
            data = path.read_bytes()
            for marker in markers:
                if marker.encode() in data:
                    hits.setdefault(marker, []).append(path.name)
    return hits


def live_bodies(ledger, user):
    return [(t, orjson.loads(b)) for t, b in ledger._conn.execute(
        "SELECT type, body FROM events WHERE app = 'app' AND user = ? AND body IS NOT NULL ORDER BY seq", (user,))]


def test_a_partition_without_an_expired_fact_has_its_expired_candidates_erased(tmp_path):
    db = tmp_path / "ledger.db"
    clock = MovableClock(NOW)
    with Ledger(db, clock=clock, create=True) as ledger:
        # u1: an expired fact and an expired rejection (a negation with nothing to retract)
        ledger.observe(cand(predicate="support_ticket", value="T-1", session="s1", said_at=OLD))
        ledger.observe(cand(predicate="support_ticket", value="ZQ-71", quote="not ticket ZQ-71", negated=True,
                            session="s1", event="e2", said_at=OLD))
        # u2: no fact at all, only an expired rejection; and one still within retention
        ledger.observe(cand(user="u2", predicate="support_ticket", value="ZQ-82", quote="not ticket ZQ-82",
                            negated=True, session="s2", said_at=OLD))
        ledger.observe(cand(user="u2", predicate="support_ticket", value="ZQ-83", quote="not ticket ZQ-83",
                            negated=True, session="s3", said_at=NEW))
        # u3: a candidate held for a predicate the registry did not know then
        ledger.observe(cand(user="u3", predicate="zq_visit", value="ZQ-Lisbon", quote="went to ZQ-Lisbon",
                            session="s4", said_at="2026-09-01T00:00:00Z"))
        assert [h["reason"] for h in ledger.held("app", "u3")] == ["unknown_predicate"]
        clock.tick()
    with Ledger(db, clock=clock, registry=registry_with_visits(tmp_path)) as ledger:
        dry = ledger.retain()
        assert dry["dry_run"] and dry["partitions"] == 3, dry
        receipt = ledger.retain(apply=True)
        assert receipt["partitions"] == 3, receipt
        assert not [b for _, b in live_bodies(ledger, "u2") if "ZQ-82" in orjson.dumps(b).decode()]
        assert [b["candidate"]["value"] for t, b in live_bodies(ledger, "u2") if t == "CandidateRejected"] == ["ZQ-83"]
        assert ledger.held("app", "u3") == []
        assert ledger.verify()["ok"] and ledger.replay_differences() == []
    assert scan(db, ["ZQ-71", "ZQ-82", "ZQ-Lisbon", "T-1"]) == {}


# One partition per user: a fact or a rejected negation of support_ticket, said long ago or lately.
ITEMS = st.lists(st.tuples(st.sampled_from(["fact", "negation"]), st.booleans()), min_size=1, max_size=4)


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ITEMS, min_size=1, max_size=4))
def test_after_retention_nothing_past_it_stays_in_any_partition(partitions):
    with tempfile.TemporaryDirectory() as tmp:
        clock = MovableClock(NOW)
        with Ledger(Path(tmp) / "l.db", clock=clock, create=True) as ledger:
            for u, items in enumerate(partitions):
                for i, (kind, old) in enumerate(items):
                    value = f"ZQ-{u}{i}"
                    ledger.observe(cand(user=f"u{u}", predicate="support_ticket", value=value,
                                        quote=f"not {value}" if kind == "negation" else f"ticket {value}",
                                        negated=kind == "negation", session=f"s{u}{i}", event=f"e{u}{i}",
                                        said_at=OLD if old else NEW))
            clock.tick()
            expected = {u for u, items in enumerate(partitions) if any(old for _, old in items)}
            receipt = ledger.retain(apply=True)
            assert receipt.get("partitions", 0) == len(expected), (receipt, partitions)
            for u, items in enumerate(partitions):
                text = orjson.dumps(live_bodies(ledger, f"u{u}")).decode()
                for i, (_kind, old) in enumerate(items):
                    # every value is its own: kept exactly when said within retention
                    assert (f"ZQ-{u}{i}" in text) == (not old), (partitions, u, i, text)
