"""The encoder replay (bench/locomo_encoders.py) on the synthetic LoCoMo file of
test_bench_locomo: the shipped encoder put in its own place reproduces the shipped figure, and
the replay's arithmetic is recall's (served by score, each partition cut at k)."""

from __future__ import annotations

import json

from bench.locomo_encoders import hit, main
from tests.project.test_bench_locomo import locomo_file  # noqa: F401  (the fixture)


def test_the_shipped_encoder_in_its_own_place_reproduces_the_shipped_figure(locomo_file, tmp_path, meaning):  # noqa: F811
    out = tmp_path / "enc.json"
    assert main([str(locomo_file), "--conversations", "0-1", "--encoder", "shipped", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert (result["questions"], result["answerable"]) == (5, 4)
    assert result["shipped"] == {"answerable_recall": 1.0, "recall": 0.8}
    same = next(r for r in result["alone"] if r["floor"] == 0.15 and r["a"] == 0.4)
    assert {k: same[k] for k in ("answerable_recall", "recall")} == result["shipped"]
    assert all(0.0 <= r["recall"] <= 1.0 for r in result["alone"] + result["both"])
    assert list(result["shipped_at_k"]) == ["10", "15", "20", "30", "50"]


def test_hit_cuts_each_partition_at_k_and_merges_by_score():
    import numpy as np
    # [fact, partition, meaning, lexical, recency, evidence]
    rows = [["a", 0, 0.9, 0.0, 0.0, False], ["b", 0, 0.8, 0.0, 0.0, False],
            ["c", 1, 0.5, 0.0, 0.0, True], ["d", 1, 0.01, 0.0, 0.0, False]]
    meaning = np.asarray([r[2] for r in rows])
    assert not hit(rows, meaning, 0.0, k=2, w=0.0)       # a, b outscore c
    assert hit(rows, meaning, 0.0, k=3, w=0.0)
    # d: no word and under the floor share of its partition's best: never served
    rows[3][5], rows[2][5] = True, False
    assert not hit(rows, meaning, 0.0, k=4, w=0.0)


def test_an_unknown_encoder_is_an_error(locomo_file, capsys, meaning):  # noqa: F811
    assert main([str(locomo_file), "--encoder", "/nowhere"]) == 1
    assert capsys.readouterr().err.startswith("Error: ")


def test_a_model_directory_runs_through_the_projects_encoder_with_its_prefixes(tmp_path, meaning):
    import numpy as np

    from bench.locomo_encoders import Other
    from factledger.ledger.semantic.embedder import Embedder
    from tests.semantic.test_semantic_integer import tiny_encoder

    directory = tiny_encoder(tmp_path / "tiny", weight_pattern=False)
    plain = Embedder(directory / "model.onnx", directory / "tokenizer.json", name="tiny")
    fact = ("user", "locomo.observation", "Ann adopted a beagle.", "Ann adopted a beagle.")
    other = Other(str(directory), "query: ", "passage: ", passage="value")
    assert np.array_equal(other.query("Which dog?"), plain.embed("query: Which dog?"))
    assert np.array_equal(other.passage(fact), plain.embed("passage: Ann adopted a beagle."))
    stored = Other(str(directory), passage="sentence")
    assert np.array_equal(stored.passage(fact), plain.embed("locomo observation is Ann adopted a beagle.. Ann adopted a beagle."))
