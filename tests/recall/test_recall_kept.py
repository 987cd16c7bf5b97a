"""What recall keeps between calls (projections/recallcache.py) changes no answer: a kept scope gives
what a fresh read gives, any append (this connection's, another's, a forget's) is seen at once,
a forget leaves nothing of the forgotten user kept in memory, and the lazy best-first order is
exactly the order of sorting every eligible fact."""

from __future__ import annotations

import gc
from collections import Counter
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factledger.ledger import Ledger
from factledger.ledger.domain.recall_options import RecallOptions
from factledger.ledger.domain.textindex import terms
from factledger.ledger.recall.facts import InScope
from factledger.ledger.recall.lexical import LexicalIndex
from factledger.ledger.recall.serve import _registry_suffixes
from factledger.projections import recall as recall_reads
from tests.conftest import cand

WORDS = ["gadget", "model", "blue", "kettle", "red", "lamp", "walk", "tea"]


def fill(ledger, clock, n=40, user="u1"):
    for i in range(n):
        clock.tick(3600 * (i % 5))            # a few distinct confirmation times, many ties
        ledger.observe(cand(user=user, predicate="owned_product", value=f"{WORDS[i % 8]} {WORDS[(i * 3) % 8]} {i % 4}",
                            quote=f"I own the {WORDS[i % 8]} {WORDS[(i * 3) % 8]} {i % 4}", session=f"s{i}", event=f"e{i}"))


def kept_values(ledger) -> set[str]:
    return {row[4] for memo in ledger._work.recall_kept.memos() for row in memo.rows}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.lists(st.sampled_from(WORDS + ["0", "1", "zzz"]), max_size=4).map(" ".join),
       limit=st.integers(1, 15), preload=st.booleans(), explain=st.booleans())
def test_a_kept_scope_answers_as_a_fresh_read(ledger, clock, query, limit, preload, explain):
    if not ledger.stats()["events"]:
        fill(ledger, clock)
    kept = ledger.recall("app", "u1", query, limit=limit, preload=preload, explain=explain,
                         clearance="all", min_confidence=0)
    assert ledger._work.recall_kept.memos()                 # the scope was kept...
    ledger._work.recall_kept.forget()
    fresh = ledger.recall("app", "u1", query, limit=limit, preload=preload, explain=explain,
                          clearance="all", min_confidence=0)
    assert kept.as_dict() == fresh.as_dict()               # ...and changes nothing


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.lists(st.sampled_from(WORDS + ["2", "3"]), max_size=3).map(" ".join),
       preload=st.booleans(), min_confidence=st.sampled_from([0.0, 0.5, 0.9]))
def test_best_first_is_the_full_sort(ledger, clock, query, preload, min_confidence):
    if not ledger.stats()["events"]:
        fill(ledger, clock, n=60)
    options = RecallOptions.build(clearance="all", min_confidence=min_confidence, preload=preload)
    with ledger.transaction():
        rows = recall_reads.scope_rows(ledger._conn, "app", ["u1"])
    now = clock() + timedelta(days=3)
    lazy, full = (InScope(rows, now, options, _registry_suffixes(ledger.registry)) for _ in range(2))
    for scope in (lazy, full):
        scope.score_hits(terms(query))
    pool = lazy.cleared if preload else lazy.hits
    expected = sorted((i for i in pool if full.gate(i) is None), key=full.order_key)
    assert list(lazy.best_first(pool)) == expected


def test_another_connections_write_is_seen(tmp_path, clock):
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as reader, Ledger(tmp_path / "l.db", clock=clock, create=True) as writer:
        writer.observe(cand(predicate="home_city", value="Pune", quote="we live in Pune"))
        assert [f["value"] for f in reader.recall("app", "u1", "Pune city", clearance="all").selected] == ["Pune"]
        clock.tick()
        writer.observe(cand(predicate="home_city", value="Bengaluru", quote="we moved to Bengaluru", session="s2",
                            event="e2", said_at="2026-09-01T00:00:00Z"))
        assert [f["value"] for f in reader.recall("app", "u1", "Pune Bengaluru city", clearance="all").selected] == ["Bengaluru"]


def test_a_forget_leaves_nothing_kept(ledger, clock):
    fill(ledger, clock, n=10)
    ledger.observe(cand(user="u2", predicate="home_city", value="Zanzibar", quote="we live in Zanzibar"))
    ledger.recall("app", "u1", "gadget")
    ledger.recall("app", "u2", "where do we live", clearance="all")
    assert "Zanzibar" in kept_values(ledger)
    ledger.forget("app", "u2", reason="test")
    assert "Zanzibar" not in kept_values(ledger) and not ledger._work.recall_kept.memos()
    assert ledger.recall("app", "u2", "Zanzibar", clearance="all").selected == []


def test_two_ledgers_keep_apart_and_a_forget_in_one_keeps_the_others(tmp_path, clock):
    """What recall keeps is the ledger's, not the process's: a forget in one ledger drops its own
    kept scopes only, and both keep answering right."""
    with Ledger(tmp_path / "a.db", clock=clock, create=True) as a, Ledger(tmp_path / "b.db", clock=clock, create=True) as b:
        a.observe(cand(user="u2", predicate="home_city", value="Zanzibar", quote="we live in Zanzibar"))
        b.observe(cand(user="u2", predicate="home_city", value="Lisbon", quote="we live in Lisbon"))
        a.recall("app", "u2", "where do we live", clearance="all")
        b_before = b.recall("app", "u2", "where do we live", clearance="all").as_dict()
        assert kept_values(a) == {"Zanzibar"} and kept_values(b) == {"Lisbon"}     # nothing shared
        b_memos, b_texts = b._work.recall_kept.memos(), dict(b._work.recall_kept.texts.texts)
        assert any("Zanzibar" in t for t in a._work.recall_kept.texts.texts)
        assert not any("Zanzibar" in t for t in b_texts) and any("Lisbon" in t for t in b_texts)
        a.forget("app", "u2", reason="test")
        assert not a._work.recall_kept.memos()                                     # a's dropped...
        assert not any("Zanzibar" in t for t in a._work.recall_kept.texts.texts)
        assert b._work.recall_kept.memos() == b_memos and kept_values(b) == {"Lisbon"}   # ...b's kept
        assert b._work.recall_kept.texts.texts == b_texts
        assert b.recall("app", "u2", "where do we live", clearance="all").as_dict() == b_before
        assert b._work.recall_kept.memos() == b_memos                            # served from what b kept
        assert a.recall("app", "u2", "Zanzibar", clearance="all").selected == []


def test_a_kept_meaning_matrix_answers_as_a_fresh_read(ledger, clock, meaning):
    fill(ledger, clock, n=12)
    for mode in ("semantic", "hybrid"):
        for query in ("which appliance do I own", "something to light the room", "blue gadget"):
            kept = ledger.recall("app", "u1", query, mode=mode, explain=True, clearance="all", min_confidence=0)
            assert any(key[0] == "meaning" for memo in ledger._work.recall_kept.memos() for key in memo._derived)
            ledger._work.recall_kept.forget()
            fresh = ledger.recall("app", "u1", query, mode=mode, explain=True, clearance="all", min_confidence=0)
            assert kept.as_dict() == fresh.as_dict()


def test_scoring_a_scope_at_once_gives_the_same_answer(ledger, clock, meaning, monkeypatch):
    from factledger.ledger.recall import meaning as meaning_module

    class _NoArrays(meaning_module.Scores):
        arrays = property(lambda self: None, lambda self, value: None)

    fill(ledger, clock, n=30)
    queries = ["which appliance do I own", "blue gadget 2", "tea", "something to light the room", ""]
    cases = [(q, mode, explain, preload) for q in queries for mode in ("semantic", "hybrid")
             for explain in (False, True) for preload in (False, True)]

    def answers():
        return [ledger.recall("app", "u1", q, mode=mode, explain=explain, preload=preload, limit=7,
                              clearance="all", min_confidence=0).as_dict() for q, mode, explain, preload in cases]
    at_once = answers()
    monkeypatch.setattr(meaning_module, "Scores", _NoArrays)             # the per-fact loops
    assert answers() == at_once


def test_a_call_leaves_nothing_for_the_cyclic_collector(ledger, clock, meaning):
    """What a call works out is freed when it returns: a reference cycle (an `InScope` holding a
    function bound to itself) kept every call's per-fact lists until the collector's next run,
    and those runs, freeing ten calls' worth at once, were recall's slowest calls."""
    fill(ledger, clock, n=30)
    cases = [(mode, explain, preload) for mode in ("lexical", "semantic", "hybrid")
             for explain in (False, True) for preload in (False, True)]
    for mode, explain, preload in cases:
        ledger.recall("app", "u1", "blue gadget", mode=mode, explain=explain, preload=preload)   # warm
    gc.collect()
    gc.disable()
    try:
        for mode, explain, preload in cases:
            ledger.recall("app", "u1", "which blue gadget 2", mode=mode, explain=explain, preload=preload,
                          clearance="all", min_confidence=0)
            assert gc.collect() == 0, (mode, explain, preload)
    finally:
        gc.enable()


TERMS = ["gadget", "model", "blue", "lamp", "tea", "7", "42", "walk"]


@settings(max_examples=200, deadline=None)
@given(docs=st.lists(st.lists(st.sampled_from(TERMS), max_size=6).map(" ".join), max_size=25),
       query=st.lists(st.sampled_from(TERMS + ["zzz"]), max_size=5), offset=st.integers(0, 3))
def test_cosines_over_arrays_are_the_cosines_to_the_last_bit(docs, query, offset):
    """The numpy path of the lexical score (hybrid recall) against the plain one: the same
    documents, in the same order, with cosines equal as floats (not approximately)."""
    import numpy as np

    positions = [offset + 2 * j for j in range(len(docs))]         # positions among a scope's rows
    index = LexicalIndex(docs, positions)
    plain = index.cosines(Counter(query))
    found = index.cosine_arrays(Counter(query), np)
    if not plain:
        assert found is None
        return
    at, cosines = found
    assert at.tolist() == [positions[j] for j in plain]
    assert cosines.tolist() == list(plain.values())
    again = index.cosine_arrays(Counter(query), np)                  # the kept postings arrays
    assert again[0].tolist() == at.tolist() and again[1].tolist() == cosines.tolist()


def test_meaning_scores_answer_one_position_as_the_whole_table():
    import numpy as np

    from factledger.ledger.recall.meaning import Scores

    positions = [1, 4, 5, 9]
    scores, cosines = np.array([0.1, 0.0, 0.7, 0.3]), np.array([0.2, 0.05, 0.75, 0.4])
    lazy = Scores(positions, scores, cosines)
    table = dict(Scores(positions, scores, cosines))
    assert table == {1: (0.1, 0.2), 4: (0.0, 0.05), 5: (0.7, 0.75), 9: (0.3, 0.4)}
    assert [lazy.get(i) for i in range(11)] == [table.get(i) for i in range(11)]
    assert all(type(x) is float for pair in (lazy[5], *table.values()) for x in pair)
    assert len(Scores()) == 0 and Scores().get(3) is None and Scores().arrays is None


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.lists(st.sampled_from(WORDS + ["2", "3", "which appliance"]), max_size=3).map(" ".join),
       preload=st.booleans(), min_confidence=st.sampled_from([0.0, 0.5, 0.9]))
def test_best_first_over_arrays_is_the_full_sort(ledger, clock, meaning, query, preload, min_confidence):
    """The hybrid path (numpy: postings arrays, one sort of the raw scores) against sorting every
    eligible fact by its rounded key."""
    from factledger.ledger.recall.facts import CONFIRMED, ID, PREDICATE
    from factledger.ledger.recall.meaning import MEANING_WEIGHT, confirmed_times, meaning_scores

    if not ledger.stats()["events"]:
        fill(ledger, clock, n=60)
    options = RecallOptions.build(clearance="all", min_confidence=min_confidence, preload=preload)
    with ledger.transaction():
        rows = recall_reads.scope_rows(ledger._conn, "app", ["u1"])
        scopes = [InScope(rows, clock() + timedelta(days=3), options, _registry_suffixes(ledger.registry))
                  for _ in range(2)]
        for scope in scopes:
            scope.mode, scope.meaning_weight = "hybrid", MEANING_WEIGHT
            scope.meaning = meaning_scores(ledger._conn, "app", ["u1"], query, rows, ID, PREDICATE, ledger.registry)
            if scope.meaning.arrays is not None:
                scope.arrays = (*scope.meaning.arrays, confirmed_times(rows, CONFIRMED))
            scope.score_hits(terms(query))
    lazy, full = scopes
    assert query.strip() == "" or lazy._relevance_array is not None
    pool = lazy.cleared if preload else lazy.hits
    expected = sorted((i for i in pool if full.gate(i) is None), key=full.order_key)
    assert list(lazy.best_first(pool)) == expected
