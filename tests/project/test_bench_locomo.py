"""The LoCoMo harness (bench/locomo.py) scores recall as docs/semantic.md says, on a synthetic file
of LoCoMo's shape written here by hand (the real data is CC BY-NC and never in the repository).

Two conversations, three sessions, six questions (two adversarial).  In `observations` mode the
figures are worked out by hand below; the other modes are checked for shape only.  No timing is
asserted.
"""

from __future__ import annotations

import json

import pytest

from bench.locomo import main
from bench.locomo_data import LocomoError, evidence_ids, load, parse_indices


def _turns(session: int, *said: tuple[str, str]) -> list[dict]:
    return [{"speaker": who, "dia_id": f"D{session}:{i}", "text": text} for i, (who, text) in enumerate(said, 1)]


SYNTHETIC = [
    {
        "sample_id": "conv-a",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Ben",
            "session_1_date_time": "10:00 am on 1 May, 2023",
            "session_1": _turns(1, ("Ann", "I adopted a beagle puppy named Rex last week."),
                                ("Ben", "Congrats! I started learning the violin in March."),
                                ("Ann", "I live in Pune now.")),
            "session_2_date_time": "3:30 pm on 20 June, 2023",
            "session_2": _turns(2, ("Ben", "I sold my old bicycle yesterday."),
                                ("Ann", "My sister is visiting Lisbon next month.")),
            "session_3_date_time": "9:00 am on 1 July, 2023",     # a date without its session
        },
        "observation": {
            "session_1_observation": {
                "Ann": [["Ann adopted a beagle puppy named Rex.", "D1:1"], ["Ann lives in Pune.", ["D1:3"]]],
                "Ben": [["Ben started learning the violin in March.", "D1:2"]]},
            "session_2_observation": {"Ben": [["Ben sold his old bicycle.", "D2:1"]], "Ann": []},
        },
        "qa": [
            {"question": "When did Ann adopt the beagle?", "answer": "April 2023", "evidence": ["D1:1"], "category": 2},
            {"question": "Which instrument is Ben learning, the violin?", "answer": "violin",
             "evidence": ["D1:2"], "category": 1},
            # nothing observed cites D2:2: not answerable in observations mode
            {"question": "Where is the sister travelling?", "answer": "Lisbon", "evidence": ["D2:2"], "category": 4},
            {"question": "Which city is Ann's home?", "answer": "Pune", "evidence": ["D:1:3; D2:9"], "category": 3},
            # adversarial: Ben sold it; nothing says "sell" or "bicycle" of Ann -> abstains
            {"question": "Why did Ann give away the tricycle?", "adversarial_answer": "old",
             "evidence": ["D2:1"], "category": 5},
        ],
    },
    {
        "sample_id": "conv-b",
        "conversation": {
            "speaker_a": "Cy", "speaker_b": "Dee",
            "session_1_date_time": "2:15 pm on 3 March, 2024",
            "session_1": _turns(1, ("Cy", "I work as a nurse at the city hospital."),
                                ("Dee", "I bake sourdough bread every Sunday.")),
        },
        "observation": {"session_1_observation": {
            "Cy": [["Cy works as a nurse at the city hospital.", "D1:1"]],
            "Dee": [["Dee bakes sourdough bread every Sunday.", "D1:2"]]}},
        "qa": [
            {"question": "What bread does Dee bake?", "answer": "sourdough", "evidence": ["D1:2"], "category": 4},
            # adversarial: Cy is the nurse, and the nurse's fact is served -> not abstained
            {"question": "Which hospital does Dee work at as a nurse?", "adversarial_answer": "city hospital",
             "evidence": ["D1:1"], "category": 5},
        ],
    },
]


@pytest.fixture
def locomo_file(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(SYNTHETIC), encoding="utf-8")
    return path


def test_evidence_ids_and_conversation_lists_are_normalised():
    assert evidence_ids(["D8:6; D9:17"]) == ("D8:6", "D9:17")
    assert evidence_ids("D:11:26") == ("D11:26",)
    assert evidence_ids(["D", "D1:3", "D1:3"]) == ("D1:3",)
    assert parse_indices("0-4") == [0, 1, 2, 3, 4]
    assert parse_indices("0,2,1-2") == [0, 2, 1]
    for bad in ("4-0", "a", "1-2-3", ""):
        with pytest.raises(LocomoError):
            parse_indices(bad)


def test_load_reads_sessions_observations_and_questions(locomo_file):
    conv_a, conv_b = load(locomo_file)
    assert [s.number for s in conv_a.sessions] == [1, 2]        # session_3 has a date only
    assert conv_a.last_said.isoformat() == "2023-06-20T15:30:00+00:00"
    assert [o.evidence for o in conv_a.observations] == [("D1:1",), ("D1:3",), ("D1:2",), ("D2:1",)]
    assert conv_a.questions[3].evidence == {"D1:3", "D2:9"}
    assert conv_b.speakers == ("Cy", "Dee")
    with pytest.raises(LocomoError, match="no conversation 2"):
        load(locomo_file, [2])


def test_observations_lexical_figures_are_the_hand_computed_ones(locomo_file, tmp_path, capsys):
    out = tmp_path / "out.json"
    assert main([str(locomo_file), "--conversations", "0-1", "--modes", "observations",
                 "--rankings", "lexical", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())["observations"]["lexical"]
    # Four non-adversarial questions in conv-a and one in conv-b; the sister's is not answerable
    # (no observation cites D2:2) and so missed; the other four find their observation first.
    assert (figures["questions"], figures["answerable"], figures["adversarial"]) == (5, 4, 2)
    assert figures["recall_at_10"] == figures["recall_at_5"] == figures["recall_at_1"] == 0.8
    assert figures["answerable_recall_at_10"] == 1.0
    # The tricycle question serves nothing of D2:1; the nurse question serves Cy's D1:1.
    assert figures["abstention"] == 0.5
    assert figures["by_category"]["4"] == {"questions": 2, "asked": 2, "recall_at_10": 0.5,
                                           "recall_at_5": 0.5, "recall_at_1": 0.5}
    assert figures["by_category"]["5"] == {"questions": 2, "abstention": 0.5}
    assert figures["facts"] == 6 and figures["refused"] == 0
    assert "| observations | lexical |" in capsys.readouterr().out


def test_every_mode_and_ranking_writes_the_documented_shape(locomo_file, tmp_path, meaning):
    out = tmp_path / "out.json"
    assert main([str(locomo_file), "--conversations", "0,1", "--k", "10", "--json", str(out),
                 "--dump", str(tmp_path / "dump.jsonl")]) == 0
    results = json.loads(out.read_text())
    assert list(results) == ["observations", "turns", "extractor"]
    for by_ranking in results.values():
        assert list(by_ranking) == ["lexical", "semantic", "hybrid"]
        for figures in by_ranking.values():
            for key in ("recall_at_10", "recall_at_5", "recall_at_1", "answerable_recall_at_10",
                        "by_category", "abstention", "p50_ms", "p99_ms"):
                assert key in figures
            assert set(figures["by_category"]) == {"1", "2", "3", "4", "5"}
    # every turn is stored in turns mode, so the sister's question is answerable there
    assert results["turns"]["lexical"]["answerable"] == 5
    # the patterns extractor hears Ann's "I live in Pune now." (home_city)
    assert results["extractor"]["lexical"]["facts"] >= 1
    dumped = [json.loads(line) for line in (tmp_path / "dump.jsonl").read_text().splitlines()]
    assert {d["mode"] for d in dumped} == {"observations", "turns", "extractor"}
    assert all(len(row) == 6 for d in dumped for row in d["candidates"])


def test_bad_input_is_an_error_with_nothing_written(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}', encoding="utf-8")
    out = tmp_path / "out.json"
    assert main([str(bad), "--json", str(out)]) == 1
    assert capsys.readouterr().err.startswith("Error: ")
    assert not out.exists()
    assert main([str(tmp_path / "missing.json")]) == 1
    assert main([str(bad), "--modes", "nonsense"]) == 1


def test_meaning_off_refuses_the_rankings_that_need_it(locomo_file, capsys):
    # the suite runs with FACTLEDGER_EMBEDDER=off (tests/conftest.py)
    assert main([str(locomo_file), "--conversations", "0-1", "--rankings", "hybrid"]) == 1
    assert "semantic extra" in capsys.readouterr().err
