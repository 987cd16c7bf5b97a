"""A `many` key holding thousands of values: the decision table reads it through the key index.

Before the index, each candidate re-read and re-normalised every open value of its key (O(N^2)
per session; timings in bench/manykey.py, not here).  These tests check the answers: a large
session ingests exactly the right facts, and the index decides like the plain list it replaced.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.manykey import many_session, word
from factledger.ledger import Ledger
from factledger.ledger.vocabulary.clock import fixed_clock
from tests.conftest import cand

N = 1500


def open_values(ledger, user, predicate="allergy", subject="user") -> dict[str, dict]:
    return {f["value"]: f for f in ledger.facts("bench", user, include_sensitive=True)
            if f["predicate"] == predicate and f["subject"] == subject}


def test_a_large_many_session_ingests_every_value_once(tmp_path):
    session = many_session(N)
    repeats = [dict(e, id=f"r{i}") for i, e in enumerate(session["events"][:200])]
    session["events"] += repeats                             # the same values again, same session
    with Ledger(tmp_path / "m.db", clock=fixed_clock("2026-11-01"), create=True) as ledger:
        result = ledger.ingest_session(session, extractor="patterns")
        assert result.status == "ingested"
        assert result.counts["applied:insert"] == N
        assert result.counts["rejected:already_counted"] == 200
        facts = open_values(ledger, "hostile")
        assert sorted(facts) == sorted(word(i) for i in range(N))
        assert all(f["status"] == "current" for f in facts.values())
        again = dict(many_session(N), id="again", events=[
            dict(e, id=f"a{i}") for i, e in enumerate(many_session(N)["events"][::3])])
        second = ledger.ingest_session(again, extractor="patterns")
        assert second.counts["applied:reinforce"] == len(again["events"])
        assert len(open_values(ledger, "hostile")) == N
        assert ledger.replay_differences() == []


def test_negations_and_respellings_in_a_large_batch(ledger):
    values = [f"food{i}" for i in range(600)]
    batch = [cand(predicate="allergy", value=v, session="s1", event=f"e{i}") for i, v in enumerate(values)]
    batch += [cand(predicate="allergy", value=v.upper(), session="s2", event=f"u{i}",
                   said_at="2026-09-01T00:00:00Z") for i, v in enumerate(values[:100])]
    batch += [cand(predicate="allergy", value=v, session="s3", event=f"n{i}", negated=True,
                   quote=f"I'm not allergic to {v}", said_at="2026-09-02T00:00:00Z")
              for i, v in enumerate(values[50:150])]
    outcomes = ledger.observe_many(batch)
    decisions = [o.decision for o in outcomes]
    assert decisions.count("insert") == 600
    assert decisions.count("reinforce") == 100                # FOOD0 is food0 (value key)
    assert decisions.count("retract") == 100
    left = {f["value"] for f in ledger.facts("app", "u1", include_sensitive=True)}
    assert left == set(values[:50] + values[150:])
    assert ledger.replay_differences() == []


CARDINALITY = {"allergy": "many", "home_city": "one", "blood_pressure": "series"}


@st.composite
def statements(draw):
    out = []
    for i in range(draw(st.integers(1, 40))):
        predicate = draw(st.sampled_from(sorted(CARDINALITY)))
        value = draw(st.sampled_from(["a", "b", "c", "A", "d e", "D  E"]))
        out.append(dict(predicate=predicate, value=value, session=f"s{draw(st.integers(0, 4))}",
                        event=f"e{i}", negated=draw(st.booleans()) and draw(st.booleans()),
                        basis=draw(st.sampled_from(["stated", "inferred", "verified"])),
                        said_at=f"2026-08-{draw(st.integers(1, 28)):02d}T00:00:00Z",
                        effective_date=(f"2026-08-{draw(st.integers(1, 3)):02d}"
                                        if predicate == "blood_pressure" else None)))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=statements())
def test_the_index_decides_like_the_plain_list(tmp_path_factory, history):
    """The same statements through the key index and through `decide`'s list path agree."""
    results = []
    for use_index in (True, False):
        path = tmp_path_factory.mktemp("idx") / "l.db"
        with Ledger(path, clock=fixed_clock("2026-11-01"), create=True) as ledger:
            if not use_index:
                view = ledger.projector.key_view
                ledger.projector.key_view = lambda *a, view=view: list(view(*a))   # no `same`: a scan
            outcomes = ledger.observe_many([cand(**h, quote=f"{'no longer' if h['negated'] else 'I said'} {h['value']}") for h in history])
            results.append(([(o.decision, o.reason, o.rule) for o in outcomes],
                            sorted((f["predicate"], f["value"], f["status"], f["basis"], f["confidence"],
                                    f["said_at"]) for f in ledger.facts("app", "u1", include_sensitive=True))))
    assert results[0] == results[1]


@pytest.mark.parametrize("split", [1, 7])
def test_the_index_survives_many_transactions(ledger, split):
    """Values stored by earlier transactions are read into the index once and decided right."""
    for start in range(0, 70, split * 10):
        ledger.observe_many([cand(predicate="allergy", value=f"v{i}", session=f"t{start}", event=f"e{i}")
                             for i in range(start, start + split * 10)])
    outcomes = ledger.observe_many([cand(predicate="allergy", value=f"V{i}", session="last", event=f"x{i}")
                                    for i in range(0, 80)])
    assert [o.decision for o in outcomes] == ["reinforce"] * 70 + ["insert"] * 10
