"""Ingestion with meaning on encodes each text once per write transaction: a fact's sentence is
run once for dedup and its stored vector, a key's open values once however many candidates
shortlist them; the memo ends with the transaction, and the stored vectors are the ones a
rebuild computes one sentence at a time."""

from __future__ import annotations

import pytest

from factledger.ledger import Ledger
from factledger.ledger.semantic import embedder as encoders
from tests.conftest import cand


@pytest.fixture
def runs(meaning, monkeypatch):
    model = encoders.get()
    real = model._embed
    texts: list[str] = []

    def counted(text):
        texts.append(text)
        return real(text)
    monkeypatch.setattr(model, "_embed", counted)
    return texts


def test_each_fact_is_encoded_once_when_the_guards_decide(tmp_path, runs):
    with Ledger(tmp_path / "l.db", create=True) as ledger:
        ledger.observe_many(cand(predicate="owned_product", value=f"gadget {i} model {i * 7}", quote=f"gadget {i} model {i * 7}",
                                 session=f"s{i}", event=f"e{i}") for i in range(30))
        assert len(runs) == 30 and len(set(runs)) == 30         # one run per fact, its own sentence
        assert ledger.replay_differences() == []                # the live vectors are the rebuilt ones
    assert encoders.memo() is None                              # nothing kept past the transaction


def test_a_text_is_encoded_once_per_transaction(tmp_path, runs):
    foods = ["mango chutney", "apple pie", "peach tart", "plum jam", "lemon cake", "guava juice"]
    with Ledger(tmp_path / "l.db", create=True) as ledger:
        ledger.observe_many(cand(predicate="favorite_cuisine", value=v, quote=f"we love {v}", session=f"s{i}",
                                 event=f"e{i}") for i, v in enumerate(foods))
        assert len(runs) == len(set(runs))                      # no text ran twice in the batch
        first = len(runs)
        ledger.observe_many(cand(predicate="favorite_cuisine", value=v, quote=f"we love {v} too",
                                 session=f"t{i}", event=f"t{i}") for i, v in enumerate(["mango pickle", "apple cake"]))
        assert len(runs[first:]) == len(set(runs[first:]))
        assert ledger.replay_differences() == []
