"""The real-speech extraction harness (bench/extraction.py) computes its figures correctly, and
its labelled data (bench/extraction_data/) is well formed and split the way docs/extraction-eval.md says."""

from __future__ import annotations

import hashlib
import json

import pytest

from bench.extraction import DATA, SPLITS, main, run_extractor, sample, wilson
from bench.extraction_score import Extracted, Fact, Row, exact, load_rows, names, score
from factledger.ledger.ingest.extractor import Extraction
from factledger.ledger.ingest.extractors import make_extractor
from factledger.ledger.ingest.proposal import Proposal
from factledger.ledger.registry.predicates import load_registry

# Labelled predicates the default registry may not have yet (the labels say what people state).
NOT_YET_IN_REGISTRY = {"origin"}

ROWS = [
    Row("p1", "persona", "all", "i have two dogs and one cat.",
        (Fact("pet", "dog"), Fact("pet", "cat"))),
    Row("p2", "persona", "all", "i'm a museum tour guide.", (Fact("job_title", "museum tour guide", ("guide",)),)),
    Row("c1", "chat", "cue", "i live in texas .", (Fact("home_city", "texas"),)),
    Row("c2", "chat", "random", "hello , how are you ?"),
    Row("c3", "chat", "random", "my brother has a dog ."),
    Row("c4", "chat", "cue", "i do not have a smartphone .", (Fact("owned_product", "smartphone", negated=True),)),
]


def test_a_label_is_named_by_its_value_a_spelling_or_a_run_of_whole_words():
    fact = Fact("job_title", "museum tour guide", ("guide",))
    assert exact(fact, Extracted("job_title", "Museum  Tour Guide"))          # case and spacing folded
    assert exact(fact, Extracted("job_title", "guide"))                       # an accepted spelling
    assert names(fact, Extracted("job_title", "tour guide"))                  # a run of its words ...
    assert not exact(fact, Extracted("job_title", "tour guide"))              # ... is not exact
    assert names(fact, Extracted("job_title", "a museum tour guide here"))    # it runs inside the value
    assert not names(fact, Extracted("job_title", "museum"))                  # "museum" is in it, but
    assert not names(Fact("job_title", "nurse"), Extracted("job_title", "nursery"))  # whole words only
    assert not names(fact, Extracted("employer", "museum tour guide"))        # another predicate
    assert not names(fact, Extracted("job_title", "museum tour guide", subject="user.partner"))
    assert not names(fact, Extracted("job_title", "museum tour guide", negated=True))


def test_score_counts_recall_exact_match_and_false_extractions():
    extracted = {
        "p1": [Extracted("pet", "dogs"), Extracted("pet", "cat")],           # dogs: found, not exact
        "p2": [Extracted("job_title", "tour guide")],                        # found, not exact
        "c1": [Extracted("home_city", "Texas"), Extracted("diet", "texas")],  # exact + one unconfirmed
        "c2": [],
        "c3": [Extracted("pet", "dog", subject="user.brother")],             # fact-free row, extraction
        "c4": [Extracted("owned_product", "smartphone", negated=True)],      # a negated label, found
    }
    report = score(ROWS, extracted)
    assert report.rows == 6
    persona, chat = report.by_kind["persona"], report.by_kind["chat"]
    assert (persona.labelled, persona.found, persona.exact) == (3, 3, 1)
    assert (chat.labelled, chat.found, chat.exact) == (2, 2, 2)
    assert report.overall.recall == 1.0
    assert report.by_predicate["pet"].exact == 1 and report.by_predicate["pet"].found == 2
    assert (report.fact_free, report.fact_free_with_extraction) == (2, 1)
    assert report.false_extraction_rate == 0.5
    assert (report.extractions, report.confirmed) == (7, 5)
    assert report.unconfirmed_by_predicate == {"diet": 1, "pet": 1}
    assert report.extractions_by_predicate == {"pet": 3, "job_title": 1, "home_city": 1, "diet": 1,
                                               "owned_product": 1}


def test_score_reports_misses_and_can_look_at_one_predicate():
    report = score(ROWS, {"p1": [Extracted("pet", "cat")], "c3": [Extracted("diet", "vegan")]})
    assert report.overall.found == 1 and report.overall.labelled == 5
    assert [(row.id, fact.value) for row, fact, _ in report.misses] == [
        ("p1", "dog"), ("p2", "museum tour guide"), ("c1", "texas"), ("c4", "smartphone")]
    pets = score(ROWS, {"p1": [Extracted("pet", "cat")], "c3": [Extracted("diet", "vegan")]}, predicate="pet")
    assert (pets.overall.labelled, pets.overall.found) == (2, 1)
    assert pets.fact_free_with_extraction == 0          # the diet extraction is not counted for pet
    assert pets.by_kind.keys() == {"persona"}


class _Fixed:
    """An extractor that proposes the same thing for every statement (the harness must not care)."""

    name, model = "fixed", None

    def extract(self, delta, context):
        event = delta.events[0]
        return Extraction(proposals=[Proposal(predicate="cuisine", value="Italian", quote=event.text,
                                              evidence_event=event.id)])


def test_run_extractor_resolves_aliases_and_normalises_like_the_registry():
    registry = load_registry()
    got = run_extractor(ROWS[:1], _Fixed(), registry)
    assert got == {"p1": [Extracted("favorite_cuisine", "Italian")]}     # alias resolved; no normaliser
    diet = [Row("x", "persona", "all", "I am a Vegetarian.")]
    assert run_extractor(diet, make_extractor("patterns"), registry) == {"x": [Extracted("diet", "vegetarian")]}


def test_sample_is_seeded_and_wilson_is_sane():
    extracted = {"p1": [Extracted("pet", "dog"), Extracted("pet", "cat")], "c1": [Extracted("home_city", "texas")]}
    assert sample(ROWS, extracted, 2, 7) == sample(ROWS, extracted, 2, 7)
    assert len(sample(ROWS, extracted, 10, 7)) == 3
    low, high = wilson(95, 100)
    assert 0.88 < low < 0.95 < high < 0.99
    assert wilson(0, 0) == (0.0, 1.0)


class _ByText:
    """Proposes what a table says for each statement's text."""

    name, model = "by-text", None

    def __init__(self, table):
        self.table = table

    def extract(self, delta, context):
        event = delta.events[0]
        return Extraction(proposals=[Proposal(predicate=p, value=v, quote=event.text, evidence_event=event.id)
                                     for p, v in self.table.get(event.text, [])])


def test_main_prints_and_writes_the_figures(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    lines = [{"id": "a", "kind": "persona", "sample": "all", "text": "i am a vegetarian.",
              "facts": [{"predicate": "diet", "value": "vegetarian"}]},
             {"id": "b", "kind": "persona", "sample": "all", "text": "i'm an omnivore and proud.",
              "facts": [{"predicate": "diet", "value": "omnivore"}]},
             {"id": "c", "kind": "chat", "sample": "random", "text": "hello , how are you ?", "facts": []},
             {"id": "d", "kind": "chat", "sample": "cue", "text": "i work at a bank .", "facts": []}]
    (data / "dev.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    extractor = _ByText({"i am a vegetarian.": [("diet", "Vegetarian")], "i work at a bank .": [("employer", "bank")]})
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text(json.dumps({"id": "a", "predicate": "diet", "value": "vegetarian", "verdict": "right"}) + "\n"
                        + json.dumps({"id": "b", "predicate": "diet", "value": "gone", "verdict": "wrong"}) + "\n")
    out = tmp_path / "figures.json"
    assert main(["--split", "dev", "--show-misses", "5", "--adjudicated", str(verdicts), "--json", str(out)],
                data=data, extractor=extractor) == 0
    printed = capsys.readouterr().out
    assert "recall, persona lines: 50.0% (1/2)" in printed
    assert "fact-free statements with an extraction: 50.0% (1/2)" in printed
    assert "extractions naming a label (a floor on precision): 50.0% (1/2)" in printed
    assert "want diet='omnivore', got nothing" in printed and "d 'i work at a bank .': employer='bank'" in printed
    assert "adjudicated extractions: all 2" in printed
    assert "adjudicated precision: 100.0% (1/1)" in printed and "(1 of 2 extractions without a verdict)" in printed
    assert '"id": "d"' in printed.split("no verdict:")[1]
    figures = json.loads(out.read_text())
    assert figures["facts"] == 2 and figures["false_extraction_rate"] == 0.5
    assert figures["recall"]["persona"] == 0.5 and figures["by_predicate"]["diet"]["found"] == 1


@pytest.mark.parametrize("split", [s for s in SPLITS if (DATA / f"{s}.jsonl").exists()])
def test_shipped_labels_are_well_formed(split):
    registry = load_registry()
    rows = load_rows(DATA / f"{split}.jsonl")
    assert len(rows) >= 300
    assert len({r.id for r in rows}) == len(rows)
    assert {r.kind for r in rows} == {"persona", "chat"}
    for row in rows:
        # the split is a seeded hash of the text (docs/extraction-eval.md): equal texts share a half
        digest = hashlib.sha256(("factledger-extraction-eval/" + row.text).encode()).digest()
        assert ("dev" if digest[0] % 2 == 0 else "heldout") == split, row.id
        for fact in row.facts:
            assert fact.predicate in registry.predicates or fact.predicate in NOT_YET_IN_REGISTRY, fact
            assert fact.value.strip() and fact.value == fact.value.lower(), fact
    assert (DATA / f"{split}.jsonl").stat().st_size < 1_000_000
