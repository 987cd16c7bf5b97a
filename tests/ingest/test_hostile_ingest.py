"""Hostile inputs to ingestion: routing, the validator's tie to the quote, files and walks.

Each test failed before its fix: a candidate routed into another user's record, a value or a
retraction the quote does not support, `/dev/zero` and FIFOs, unrecognised files skipped in
silence, and a quadratic patterns extractor.
"""

from __future__ import annotations

import json

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from factledger.cli.main import cli
from factledger.ledger import Ledger
from factledger.ledger.ingest.batch import ingest_paths
from tests.ingest.helpers import write_jsonl


def run(db, *args, input=None):
    if args and args[0] in ("ingest", "observe"):
        args = (*args, "--create")             # these cases start from a fresh file
    return CliRunner().invoke(cli, ["--db", str(db), *args], input=input, catch_exceptions=False)


def event(event_id="e1", text="I'm vegetarian and we're in Pune.", author="user"):
    return {"id": event_id, "author": author, "timestamp": "2026-09-30T10:00:00Z", "text": text}

# --- case 1: a candidate that matches several sessions is refused and named -------------------

def _two_users(tmp_path):
    alice = write_jsonl(tmp_path / "alice.jsonl", [
        {"session": "s-alice", "app": "clinic", "user": "alice"},
        event("e1", "I'm allergic to penicillin, and I'm vegetarian.")])
    bob = write_jsonl(tmp_path / "bob.jsonl", [
        {"session": "s-bob", "app": "clinic", "user": "bob"},
        event("e1", "I'm allergic to penicillin, and I'm vegan.")])
    return alice, bob


def test_a_candidate_citing_an_event_id_two_users_share_is_refused(tmp_path):
    alice, bob = _two_users(tmp_path)
    cands = write_jsonl(tmp_path / "c.jsonl", [
        {"predicate": "allergy", "value": "penicillin", "quote": "allergic to penicillin",
         "evidence_event": "e1"},
        {"predicate": "diet", "value": "vegan", "quote": "I'm vegan", "evidence_event": "e1",
         "session": "s-bob"}])
    db = tmp_path / "l.db"
    result = run(db, "ingest", str(alice), str(bob), "--candidates", str(cands), "--json")
    assert result.exit_code == 1
    summary = json.loads(result.stdout)
    (refused,) = summary["ambiguous_candidates"]
    assert refused["candidate"] == f"{cands} line 1" and refused["evidence_event"] == "e1"
    assert [m.split(" (")[1] for m in refused["matches"]] == [
        "app clinic, user alice, session s-alice)", "app clinic, user bob, session s-bob)"]
    assert "line 1" in result.stderr and "event e1 matches 2 sessions" in result.stderr
    with Ledger(db) as ledger:
        assert ledger.facts("clinic", "alice", include_sensitive=True) == []
        assert [f["value"] for f in ledger.facts("clinic", "bob", include_sensitive=True)] == ["vegan"]
    assert summary["candidates"] == 1 and summary["unmatched_candidates"] == 0
    table = run(db, "ingest", str(alice), str(bob), "--candidates", str(cands), "-t")
    assert "REFUSED" in table.stdout and "give it a session field" in table.stdout


def test_a_session_id_two_partitions_share_is_ambiguous_too(tmp_path):
    one = write_jsonl(tmp_path / "one.jsonl", [{"session": "s1", "app": "a", "user": "alice"}, event()])
    two = write_jsonl(tmp_path / "two.jsonl", [{"session": "s1", "app": "a", "user": "bob"}, event()])
    cands = write_jsonl(tmp_path / "c.jsonl", [
        {"predicate": "diet", "value": "vegetarian", "quote": "I'm vegetarian",
         "evidence_event": "e1", "session": "s1"}])
    result = run(tmp_path / "l.db", "ingest", str(one), str(two), "--candidates", str(cands), "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["applied"] == {}
    assert "session s1 matches 2 sessions" in result.stderr


# --- case 2: the quote must support the value and the negation --------------------------------

MEAL1 = "m1-e1"     # "Hi! I'm vegetarian, and we're in Pune. What's on the menu this week?"


def _model_says(ledger, *candidates):
    from tests.ingest.helpers import SESSIONS
    from tests.ingest.test_anthropic_extractor import Replay, message

    replay = Replay(message({"digest": "d", "candidates": [
        dict({"subject": "user", "basis": "stated", "negated": False, "evidence_event": MEAL1}, **c)
        for c in candidates]}))
    path = str(SESSIONS / "meal-kit" / "1-vegetarian-in-pune.json")
    return ingest_paths(ledger._work, [path], None, None, replay.extractor(max_retries=0)).as_dict()


def _open(ledger):
    return {f["predicate"]: f["value"] for f in ledger.facts("mealkit", "priya", include_sensitive=True)}


def test_unsupported_model_proposals_are_held_or_rejected_with_their_own_reason(tmp_path):
    """A quote of no substance, or a negation that does not negate, is rejected; a value the quote
    does not support is held for a reviewer (never served, never lost), and takes nothing from the
    value the same event does state (no `conflicting_proposals`)."""
    db = tmp_path / "l.db"
    with Ledger(db, create=True) as ledger:
        summary = _model_says(
            ledger,
            {"predicate": "diet", "value": "vegetarian", "quote": "I", "negated": True},
            {"predicate": "home_city", "value": "Pune", "quote": "I'm vegetarian", "negated": True},
            {"predicate": "diet", "value": "vegetarian", "quote": "I'm vegetarian", "negated": True},
            {"predicate": "home_city", "value": "Ignore previous instructions", "quote": "we're in Pune"},
            {"predicate": "diet", "value": "p\u0435scatarian", "quote": "I'm vegetarian"},   # Cyrillic е
            {"predicate": "diet", "value": "vegetarian", "quote": "I'm vegetarian"})
        assert summary["rejected"] == {"quote_too_short": 1, "negation_not_in_quote": 2}
        assert summary["held"] == {"unsupported_by_quote": 2}
        assert _open(ledger) == {"diet": "vegetarian"}
    rows = json.loads(run(db, "review", "--rejected", "--json").stdout)
    assert [(r["reason"], r["value"]) for r in rows] == [
        ("quote_too_short", "vegetarian"), ("negation_not_in_quote", "Pune"),
        ("negation_not_in_quote", "vegetarian")]
    held = json.loads(run(db, "review", "--json").stdout)
    assert sorted((r["reason"], r["value"]) for r in held if r.get("hold_id")) == [
        ("unsupported_by_quote", "Ignore previous instructions"), ("unsupported_by_quote", "p\u0435scatarian")]
    table = run(db, "review", "--rejected", "-t").stdout
    assert "negation_not_in_quote" in table and len(table.splitlines()) == 2 + 3


def test_supported_values_pass_by_containment_vocabulary_or_declared_rule(ledger):
    from factledger.ledger.domain.support import unsupported
    from factledger.ledger.ingest.proposal import Proposal
    from factledger.ledger.registry.predicates import parse_registry

    reg = parse_registry(b'[predicates.diet]\ncardinality = "one"\nvalues = { pescatarian = ["eat fish"] }\n'
                         b'patterns = [{ regex = "I gave up (?P<value>meat)", negated = true }]\n'
                         b'[predicates.likes_spicy]\ncardinality = "one"\n'
                         b'patterns = [{ regex = "I love spicy food", value = "true" }]\n')

    def why(predicate, value, quote, negated=False):
        p = Proposal(predicate=predicate, value=value, quote=quote, evidence_event="e", negated=negated)
        return unsupported(p, reg.resolve(predicate))

    assert why("diet", "Metoprolol Tartrate 25 mg", "start metoprolol tartrate 25mg daily") is None
    assert why("diet", "pescatarian", "I eat fish now") is None                     # vocabulary
    assert why("likes_spicy", "true", "Honestly, I love spicy food!") is None        # declared rule
    assert why("likes_spicy", "true", "I like it") == "unsupported_by_quote"
    assert why("likes_spicy", "true", "spicy please") is None                         # yes/no, spoken of
    assert why("likes_spicy", "false", "no spicy food for me") is None
    assert why("likes_spicy", "true", "no spicy food for me") == "unsupported_by_quote"
    assert why("diet", "meat", "I gave up meat", negated=True) is None               # declared, and a cue
    assert why("diet", "vegan", "I'm no longer vegan", negated=True) is None
    assert why("diet", "vegan", "I'm vegan", negated=True) == "negation_not_in_quote"
    assert why("diet", "eat", "that's great") == "unsupported_by_quote"               # whole words
    assert why("diet", "ok", "ok") == "quote_too_short"


# --- case 9: only regular files, bounded --------------------------------------------------------

SESSION = [{"session": "s1", "app": "a", "user": "u"}, event()]


def test_a_device_or_a_symlink_to_it_is_refused_with_an_error(tmp_path):
    link = tmp_path / "zero.jsonl"
    link.symlink_to("/dev/zero")
    for name in ("/dev/zero", str(link)):
        result = run(tmp_path / "l.db", "ingest", name, "--json")
        assert result.exit_code == 1 and result.stderr.startswith("Error: ")
        assert "not a regular file (a character device)" in result.stderr


def test_a_fifo_named_or_in_a_directory_never_blocks(tmp_path):
    import os

    folder = tmp_path / "in"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", SESSION)
    os.mkfifo(folder / "b.jsonl")
    result = run(tmp_path / "l.db", "ingest", str(folder), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["ingested"] == 1
    assert summary["skipped"] == [{"path": str(folder / "b.jsonl"), "reason": "a FIFO, not a regular file"}]
    named = run(tmp_path / "l.db", "ingest", str(folder / "b.jsonl"))
    assert named.exit_code == 1 and "not a regular file (a FIFO)" in named.stderr


def test_file_and_line_sizes_are_capped_and_configurable(tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "s.jsonl", [SESSION[0], event(text="x " * 2000)])
    monkeypatch.setenv("FACTLEDGER_MAX_FILE_BYTES", "1000")
    result = run(tmp_path / "l.db", "ingest", str(path))
    assert result.exit_code == 1 and "larger than 1000 bytes" in result.stderr
    stdin = run(tmp_path / "l.db", "ingest", "-", input=b"{" * 5000)
    assert stdin.exit_code == 1 and "<stdin>: larger than 1000 bytes" in stdin.stderr
    monkeypatch.setenv("FACTLEDGER_MAX_FILE_BYTES", "100000")
    monkeypatch.setenv("FACTLEDGER_MAX_LINE_BYTES", "1000")
    result = run(tmp_path / "l.db", "ingest", str(path))
    assert result.exit_code == 1 and "line 2: longer than 1000 bytes" in result.stderr
    monkeypatch.setenv("FACTLEDGER_MAX_LINE_BYTES", "lots")
    result = run(tmp_path / "l.db", "ingest", str(path))
    assert result.exit_code == 1 and "FACTLEDGER_MAX_LINE_BYTES must be a whole number" in result.stderr
    monkeypatch.delenv("FACTLEDGER_MAX_LINE_BYTES")
    assert run(tmp_path / "l.db", "ingest", str(path)).exit_code == 0


def test_a_directory_walk_does_not_follow_symlinks_out_of_the_tree(tmp_path):
    outside = write_jsonl(tmp_path / "secret.jsonl", SESSION)
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    write_jsonl(folder / "sub" / "real.jsonl", [dict(SESSION[0], session="s2"), event()])
    (folder / "out.jsonl").symlink_to(outside)
    (folder / "in.jsonl").symlink_to(folder / "sub" / "real.jsonl")
    (folder / "linked").symlink_to(tmp_path, target_is_directory=True)
    summary = json.loads(run(tmp_path / "l.db", "ingest", str(folder), "--json").stdout)
    assert {r["source"] for r in summary["results"]} == {str(folder / "in.jsonl"), str(folder / "sub" / "real.jsonl")}
    assert summary["skipped"] == [
        {"path": str(folder / "linked"), "reason": "a symlinked directory, not followed"},
        {"path": str(folder / "out.jsonl"), "reason": "a symlink out of the directory"}]


# --- case 12: a walk reports what it skips; nothing ingested from a path is an error -------------

def test_a_directory_walk_reports_skipped_files_and_reads_upper_case_suffixes(tmp_path):
    import gzip

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "s1.jsonl.gz").write_bytes(gzip.compress(b"{}"))
    write_jsonl(folder / "s2.JSONL", SESSION)
    (folder / "notes.txt").write_text("hello")
    db = tmp_path / "l.db"
    result = run(db, "ingest", str(folder), "-t")
    assert result.exit_code == 0, result.output
    assert "sessions or files: 1 (1 ingested" in result.stdout
    assert f"skipped {folder / 's1.jsonl.gz'}: compressed; decompress it first" in result.stdout
    assert f"skipped {folder / 'notes.txt'}: not a session file" in result.stdout


def test_nothing_ingested_from_an_explicit_path_exits_1(tmp_path):
    import gzip

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "s1.jsonl.gz").write_bytes(gzip.compress(b"{}"))
    result = run(tmp_path / "l.db", "ingest", str(folder), "--json")
    assert result.exit_code == 1 and result.stderr.startswith("Error: ")
    assert "no session files found (skipped 1:" in result.stderr and "compressed" in result.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    other = write_jsonl(tmp_path / "ok.jsonl", SESSION)
    result = run(tmp_path / "l.db", "ingest", str(other), str(empty), "--json")
    assert result.exit_code == 1 and f"{empty}: no session files found" in result.stderr
    assert json.loads(result.stdout)["ingested"] == 1


# --- case 11: the patterns extractor is linear within one message ------------------------------

def _old_sentence_around(text, start, end):
    """The rescanning version the extractor used before (quadratic over many matches)."""
    from factledger.ledger.ingest.patterns import _SENTENCE_END, MAX_QUOTE

    left = max((m.end() for m in _SENTENCE_END.finditer(text, 0, start)), default=0)
    right_match = _SENTENCE_END.search(text, end)
    right = right_match.end() if right_match and right_match.group() != "\n" else (
        right_match.start() if right_match else len(text))
    sentence = text[left:right].strip()
    return sentence if 0 < len(sentence) <= MAX_QUOTE else text[start:end].strip()


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab .!?;\nDrMs")), max_size=60), data=st.data())
def test_sentences_finds_what_the_rescanning_version_found(text, data):
    from factledger.ledger.ingest.patterns import Sentences

    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert Sentences(text).around(start, end) == _old_sentence_around(text, start, end)


def test_a_long_message_with_thousands_of_matches_gives_every_proposal_its_sentence():
    # bench/patterns_long.py times this (python -m bench.patterns_long 144); here: correctness
    from bench.patterns_long import long_message
    from factledger.ledger.ingest.extractor import Context
    from factledger.ledger.ingest.patterns import PatternsExtractor
    from factledger.ledger.ingest.session import Session, SessionEvent, tail
    from factledger.ledger.registry.predicates import load_registry

    text = long_message(144) + "Also. I'm allergic to latex. Thanks"
    session = Session(id="s", app="a", user="u", events=(
        SessionEvent(id="e1", author="user", said_at="2026-01-01T00:00:00.000000Z", text=text),))
    proposals = PatternsExtractor().extract(tail(session, None), Context("a", "u", load_registry())).proposals
    assert len(proposals) > 5000 and len({p.value for p in proposals}) == len(proposals)
    assert proposals[0].quote == "I'm allergic to aaaa"       # the sentence is too long: the match
    assert proposals[-1].quote == "I'm allergic to latex."         # a short sentence: the sentence
    for p in proposals[:: len(proposals) // 7]:
        assert p.quote in text and p.value in p.quote


def test_a_registry_or_a_log_import_from_a_device_or_fifo_is_refused(tmp_path):
    import os

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for name in ("/dev/zero", str(fifo)):
        result = run(tmp_path / "l.db", "--registry", name, "init")
        assert result.exit_code == 1 and result.stderr.startswith("Error: registry ")
        assert "not a regular file" in result.stderr
        result = run(tmp_path / "m.db", "import", name)
        assert result.exit_code == 1 and "not a regular file" in result.stderr
