"""Recall's answer does not depend on which facts it happened to work out.

Recall works a fact out only when something asks about it: a search without `--explain` asks
about the facts that share a term with the query and the facts they dispute, while `--explain`
and `--preload` ask about every fact (`ledger/recall/facts.py`).  A gate or score that depended
on what had been asked before would make a plain recall disagree with its own explanation, or
with a recall that works out every fact before packing (as recall did before it was lazy).  This
checks, on random partitions (stale, disputed, withheld, domain and unmatched facts, odd
options), that none of the three ever disagree.
"""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factledger.ledger import Ledger, LedgerError, make_candidate
from factledger.ledger.recall.facts import InScope
from factledger.ledger.vocabulary.clock import iso
from tests.conftest import MovableClock

NOW = "2026-12-01T00:00:00Z"
WORDS = ["red", "kettle", "thai", "python", "go", "peanuts", "cats", "city", "lives", "fish",
         "model", "7", "region", "eu-west-1", "the", "spicy"]
PREDICATES = ["diet", "diet", "home_city", "preferred_language", "preferred_language", "employer",
              "deploy.region", "owned_product", "favorite_cuisine", "allergy", "pet",
              "programming_language"]          # `one` keys weighted up: disputes need them

fact = st.tuples(
    st.sampled_from(["u1", "u1", "u1", "_domain", "u2"]),
    st.sampled_from(PREDICATES),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    st.floats(0, 60) | st.floats(0, 400),                        # said this many days ago
    st.sampled_from(["user", "user", "agent"]),
    st.sampled_from([None, None, None, 0.3, 0.75, 1.0]),
    st.sampled_from(["user", "user", "user", "user.daughter"]),
    st.booleans(),                        # then challenged: an agent infers another value
)
options = st.fixed_dictionaries({}, optional={
    "clearance": st.sampled_from(["personal", "health", "all"]),
    "min_confidence": st.sampled_from([0, 0.5, 0.9]),
    "max_age": st.sampled_from(["0", "30d", "1y"]),
    "recency_weight": st.sampled_from([0, 0.5, 1]),
    "half_life": st.sampled_from(["1d", "2y"]),
    "limit": st.integers(0, 6),
    "budget": st.integers(0, 80),
    "preload": st.booleans(),
    "domain": st.booleans(),
})
query = st.lists(st.sampled_from(WORDS + ["where", "do", "I", "live", "nothing"]),
                 max_size=5).map(" ".join)


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(facts=st.lists(fact, min_size=1, max_size=40),
       asks=st.lists(st.tuples(query, options), min_size=1, max_size=6))
def test_without_explain_is_the_selected_part_of_the_explanation(facts, asks):
    clock = MovableClock(NOW)
    with tempfile.TemporaryDirectory() as folder, \
            Ledger(Path(folder) / "paths.db", clock=clock, synchronous="OFF", create=True) as ledger:
        for n, (user, predicate, value, days, author, confidence, subject, challenged) in \
                enumerate(facts):
            said = clock.now - timedelta(days=days)
            claims = [(value, author, confidence, said)]
            if challenged:
                claims.append((f"{value} go", "agent", None, said + timedelta(hours=1)))
            for k, (said_value, by, conf, at) in enumerate(claims):
                try:
                    ledger.observe(make_candidate(
                        app="app", user=user, subject=subject, predicate=predicate,
                        value=said_value, quote=f"I said {said_value}", session=f"s{n % 7}-{k}",
                        evidence_event=f"e{n}-{k}", said_at=iso(min(at, clock.now)), author=by,
                        basis="inferred" if by == "agent" else "stated", confidence=conf))
                except LedgerError:
                    pass                           # a shape the ledger refuses: fine here
        for text, opts in asks:
            plain = ledger.recall("app", "u1", text, **opts)
            explained = ledger.recall("app", "u1", text, explain=True, **opts)
            assert plain.selected == explained.selected
            assert plain.text == explained.text
            shown = [c["fact_id"] for c in explained.candidates if c["outcome"] == "selected"]
            assert sorted(shown) == sorted(f["fact_id"] for f in plain.selected)
            assert plain.candidates == [] and plain.other_partitions is None
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(InScope, "score_hits", _then_everything)
                assert ledger.recall("app", "u1", text, **opts).as_dict() == plain.as_dict()
                eager = ledger.recall("app", "u1", text, explain=True, **opts)
                assert eager.as_dict() == explained.as_dict()


_score_hits = InScope.score_hits


def _then_everything(scope: InScope, query_terms: list[str]) -> None:
    """Score, then work out every fact's time, gate and scores before anything is packed."""
    _score_hits(scope, query_terms)
    for i in range(len(scope.rows)):
        scope.when(i), scope.effective(i), scope.gate(i), scope.scores(i)
