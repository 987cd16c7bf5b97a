"""Checkpoints and proofs on a real ledger: the tree is a projection (live == rebuild), proofs verify
with the stand-alone verifier and reveal only hashes, a forget keeps every proof valid, and each
tamper case is caught naming its reason."""

from __future__ import annotations

import shutil
import sqlite3

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factledger.ledger import Ledger, LedgerError
from factledger.ledger.store import chain
from factledger.ledger.tlog import merkle
from factledger.ledger.tlog.note import new_signer
from factledger.ledger.tlog.tlog_verify import (
    VerificationError,
    open_checkpoint,
    parse_vkey,
    verify_consistency_proof,
    verify_inclusion_proof,
)
from factledger.projections.merkle_tree import MerkleTree
from tests.audit.forger import raw_forger
from tests.conftest import MovableClock, cand

KEY = new_signer("factledger.test/ledger")
VKEY = parse_vkey(KEY.vkey)


def fill(ledger: Ledger, users: range, value: str = "Pune", session: str = "s1") -> None:
    ledger.observe_many([cand(user=f"u{i}", predicate="home_city", value=value, session=session,
                              quote=f"we live in {value}") for i in users])


def events(ledger: Ledger) -> int:
    return ledger._conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]


def test_the_tree_follows_the_log_and_equals_a_rebuild(ledger):
    for start in range(0, 40, 10):
        fill(ledger, range(start, start + 10))
        ledger.observe(cand(user="solo", value=f"v{start}", session=f"s{start}"))
    hashes = [bytes.fromhex(h) for (h,) in ledger._conn.execute("SELECT hash FROM events ORDER BY seq")]
    tree = MerkleTree(ledger._conn)
    assert tree.size() == len(hashes)
    reference = merkle.memory_tree([merkle.leaf_hash(h) for h in hashes])
    for size in range(1, len(hashes) + 1):
        assert tree.root(size) == merkle.root(size, reference)
    assert ledger.replay_differences() == []
    before = tree.root(len(hashes))
    ledger.replay()
    assert MerkleTree(ledger._conn).root(len(hashes)) == before


def test_checkpoint_is_recorded_and_proofs_verify_standalone(ledger):
    fill(ledger, range(25))
    issued = ledger.checkpoint(KEY)
    size = issued["tree_size"]
    assert size == events(ledger) - 1 and issued["seq"] == size + 1
    row = ledger.log(type="CheckpointIssued")[0]
    assert (row["app"], row["user"]) == ("_all", "_checkpoints")
    checkpoint = open_checkpoint(issued["note"], VKEY, origin=issued["origin"])
    assert checkpoint.size == size and checkpoint.root.hex() == issued["root_hash"]
    for seq in range(1, size + 1):
        proof = orjson.loads(orjson.dumps(ledger.prove_inclusion(seq)))
        assert verify_inclusion_proof(proof, checkpoint)["seq"] == seq
    with pytest.raises(LedgerError, match="not covered"):
        ledger.prove_inclusion(size + 1)
    fill(ledger, range(25, 40))
    later = ledger.checkpoint(KEY)
    proof = ledger.prove_consistency(issued["note"], later["note"])
    verify_consistency_proof(proof, checkpoint, open_checkpoint(later["note"], VKEY))
    assert ledger.verify_checkpoint(later["note"], VKEY, older=issued["note"])["ok"]


def test_proofs_reveal_only_hashes(ledger):
    fill(ledger, range(5), value="Zanzibar")
    note = ledger.checkpoint(KEY)["note"]
    fill(ledger, range(5, 8), value="Zanzibar")
    newer = ledger.checkpoint(KEY)["note"]
    for document in (ledger.prove_inclusion(3), ledger.prove_consistency(note, newer)):
        text = orjson.dumps(document).decode()
        assert "Zanzibar" not in text and "home_city" not in text
        # a partition id as a value of its own; "u1" may occur by chance inside base64 or hex
        assert not {"u1", "u3"} & set(strings(document))


def strings(document) -> list[str]:
    """Every string in a JSON document, keys and values alike."""
    if isinstance(document, str):
        return [document]
    if isinstance(document, dict):
        return [*document, *(s for value in document.values() for s in strings(value))]
    if isinstance(document, list):
        return [s for value in document for s in strings(value)]
    return []


def test_a_forget_between_checkpoints_keeps_every_proof_valid(ledger):
    fill(ledger, range(6))
    ledger.observe(cand(user="u2", predicate="home_city", value="Bengaluru", session="s2",
                        quote="we moved to Bengaluru"))
    first = ledger.checkpoint(KEY)
    old_proofs = {seq: ledger.prove_inclusion(seq) for seq in range(1, first["tree_size"] + 1)}
    receipt = ledger.forget("app", "u2", session="s2", reason="user request")
    assert receipt["counts"]["events"] > 0
    second = ledger.checkpoint(KEY)
    old, new = open_checkpoint(first["note"], VKEY), open_checkpoint(second["note"], VKEY)
    scrubbed = [seq for (seq,) in ledger._conn.execute("SELECT seq FROM events WHERE body IS NULL")]
    assert scrubbed
    for proof in old_proofs.values():                          # proofs made before the forget
        verify_inclusion_proof(proof, old)
    for seq in range(1, new.size + 1):                         # and after it, scrubbed events too
        verify_inclusion_proof(ledger.prove_inclusion(seq, second["note"]), new)
        if seq <= old.size:
            verify_inclusion_proof(ledger.prove_inclusion(seq, first["note"]), old)
    verify_consistency_proof(ledger.prove_consistency(first["note"], second["note"]), old, new)
    assert ledger.verify_checkpoint(second["note"], VKEY, older=first["note"])["ok"]
    assert ledger.verify()["ok"] and ledger.replay_differences() == []


# --- tamper cases -----------------------------------------------------------------------------

def _raw(path) -> sqlite3.Connection:
    return raw_forger(path)                                # a careful forger (tests/audit/forger.py)


def _rechain(conn, start: int) -> None:
    """What a careful forger does after editing seq `start`: every commitment and link recomputed."""
    rows = conn.execute("SELECT seq, event_id, type, recorded_at, body, salt, commitment, prev_hash"
                        " FROM events WHERE seq >= ? ORDER BY seq", (start,)).fetchall()
    prev = conn.execute("SELECT hash FROM events WHERE seq = ?", (start - 1,)).fetchone()
    prev = prev[0] if prev else chain.GENESIS
    for seq, event_id, type_, at, body, salt, commit, _prev in rows:
        if body is not None:
            commit = chain.commitment(salt, body.encode())
        link = chain.link(prev, seq, event_id, type_, at, commit)
        conn.execute("UPDATE events SET commitment = ?, prev_hash = ?, hash = ? WHERE seq = ?",
                     (commit, prev, link, seq))
        prev = link


@pytest.fixture
def published(tmp_path):
    """A ledger with a signed checkpoint over its first events, closed; (path, checkpoint note)."""
    path = tmp_path / "ledger.db"
    with Ledger(path, clock=MovableClock(), create=True) as ledger:
        fill(ledger, range(12))
        note = ledger.checkpoint(KEY)["note"]
        fill(ledger, range(12, 15))
    return path, note


def _verify(path, note, key=VKEY, older=None) -> dict:
    with Ledger(path, clock=MovableClock()) as ledger:
        chain_ok = ledger.verify(log_only=True)          # the chain alone, not the projections
        result = ledger.verify_checkpoint(note, key, older=older)
    return {**result, "chain_ok": chain_ok["ok"], "chain_problem": chain_ok["problem"]}


def test_pristine_ledger_passes(published):
    path, note = published
    result = _verify(path, note)
    assert result["ok"] and result["chain_ok"]


def test_rewritten_event_is_caught_by_the_chain_and_rechained_by_the_root(published):
    path, note = published
    conn = _raw(path)
    conn.execute("UPDATE events SET body = replace(body, 'Pune', 'Paris') WHERE seq = 3")
    conn.close()
    result = _verify(path, note)
    assert not result["chain_ok"] and "commitment" in result["chain_problem"]
    conn = _raw(path)
    _rechain(conn, 3)                                  # the chain alone now verifies again
    conn.close()
    result = _verify(path, note)
    assert result["chain_ok"]
    assert (result["ok"], result["check"]) == (False, "root")
    assert "rewritten" in result["problem"]
    with Ledger(path, clock=MovableClock()) as ledger:     # a forger who also rebuilds the tree
        ledger.replay()
    assert _verify(path, note)["check"] == "root"


def test_truncated_log_is_caught(published):
    path, note = published
    conn = _raw(path)
    conn.execute("DELETE FROM events WHERE seq > 5")
    conn.close()
    result = _verify(path, note)
    assert result["chain_ok"] and result["check"] == "size"
    assert "covers" in result["problem"] and "truncated" in result["problem"]


def test_truncated_and_re_extended_log_is_caught(published):
    path, note = published
    conn = _raw(path)
    conn.execute("DELETE FROM events WHERE seq > 5")
    conn.close()
    with Ledger(path, clock=MovableClock()) as ledger:
        ledger.replay()
        fill(ledger, range(50, 80), value="Goa")               # longer than the checkpoint again
        assert events(ledger) > open_checkpoint(note, VKEY).size
    result = _verify(path, note)
    assert result["chain_ok"] and result["check"] == "root"


def test_forked_log_is_caught(published, tmp_path):
    path, note = published
    fork = tmp_path / "fork.db"
    with Ledger(path, clock=MovableClock(), create=True) as ledger:
        ledger._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copyfile(path, fork)
    with Ledger(path, clock=MovableClock()) as a, Ledger(fork, clock=MovableClock()) as b:
        fill(a, range(100, 103), value="Delhi")
        fill(b, range(200, 203), value="Mumbai")
        note_a, note_b = a.checkpoint(KEY)["note"], b.checkpoint(KEY)["note"]
        assert a.verify_checkpoint(note_b, VKEY)["check"] == "root"       # same origin, other root
        assert a.verify_checkpoint(note_a, VKEY, older=note)["ok"]
        assert b.verify_checkpoint(note_b, VKEY, older=note)["ok"]      # each alone is consistent
        proof_a = a.prove_consistency(note, note_a)
        with pytest.raises(LedgerError, match="fork"):
            a.prove_consistency(note, note_b)
    old, forked = open_checkpoint(note, VKEY), open_checkpoint(note_b, VKEY)
    with pytest.raises(VerificationError, match="not the checkpoint's"):
        verify_consistency_proof(proof_a, old, forked)                 # A's proof, B's head
    doctored = {**proof_a, "new_size": forked.size, "new_root": forked.root.hex()}
    with pytest.raises(VerificationError, match="consistency"):
        verify_consistency_proof(doctored, old, forked)


def test_wrong_key_is_caught(published):
    path, note = published
    result = _verify(path, note, key=parse_vkey(new_signer("factledger.test/ledger").vkey))
    assert result["check"] == "signature" and "not signed by the log key" in result["problem"]


def test_checkpoint_of_another_ledger_is_caught(published, tmp_path):
    path, _note = published
    with Ledger(tmp_path / "other.db", clock=MovableClock(), create=True) as other:
        fill(other, range(12))
        foreign = other.checkpoint(KEY)["note"]
    result = _verify(path, foreign)
    assert result["check"] == "origin" and "another log" in result["problem"]
    with Ledger(path, clock=MovableClock()) as ledger, pytest.raises(LedgerError, match="another log"):
        ledger.prove_inclusion(1, foreign)


def test_unsigned_checkpoint_and_empty_ledger(ledger):
    with pytest.raises(LedgerError, match="empty"):
        ledger.checkpoint()
    fill(ledger, range(3))
    issued = ledger.checkpoint()
    assert not issued["signed"] and "\n\n" not in issued["note"]
    assert ledger.verify_checkpoint(issued["note"])["ok"]              # root and origin, no signature
    assert ledger.verify_checkpoint(issued["note"], VKEY)["check"] == "signature"
    with pytest.raises(LedgerError, match="already name it"):
        ledger.checkpoint(origin="example.org/renamed")
    with pytest.raises(LedgerError, match="reserved"):
        ledger.forget("_all", "_checkpoints", reason="no")
    with pytest.raises(LedgerError, match="reserved"):
        ledger.observe(cand(app="_all", user="_checkpoints"))


def test_an_exported_and_imported_log_keeps_its_checkpoints(ledger, tmp_path):
    fill(ledger, range(8))
    note = ledger.checkpoint(KEY)["note"]
    with open(tmp_path / "log.jsonl", "w", encoding="utf-8") as out:
        ledger.export_log(out)
    with Ledger(tmp_path / "copy.db", clock=MovableClock(), create=True) as copy:
        copy.import_log(tmp_path / "log.jsonl")
        assert copy.verify_checkpoint(note, VKEY)["ok"]
        verify_inclusion_proof(copy.prove_inclusion(3), open_checkpoint(note, VKEY))


def test_a_tree_behind_the_log_catches_up_before_a_checkpoint(ledger):
    fill(ledger, range(6))
    ledger._conn.execute("DELETE FROM merkle_hashes WHERE pos >= 4")
    issued = ledger.checkpoint(KEY)
    assert issued["tree_size"] == events(ledger) - 1
    assert ledger.verify_checkpoint(issued["note"], VKEY)["ok"] and ledger.replay_differences() == []


def test_a_file_made_before_the_tree_gets_it_on_open(tmp_path):
    path = tmp_path / "old.db"
    with Ledger(path, clock=MovableClock(), create=True) as ledger:
        fill(ledger, range(9))
        ledger._conn.execute("DROP TABLE merkle_hashes")
    with Ledger(path, clock=MovableClock()) as ledger:
        assert MerkleTree(ledger._conn).size() == events(ledger)
        size = events(ledger)
        assert ledger.checkpoint(KEY)["tree_size"] == size
        assert ledger.replay_differences() == []


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["observe", "move", "forget", "checkpoint"]), min_size=3, max_size=12))
def test_every_checkpoint_is_consistent_with_every_later_one(tmp_path_factory, steps):
    path = tmp_path_factory.mktemp("props") / "ledger.db"
    notes: list[str] = []
    with Ledger(path, clock=MovableClock(), create=True) as ledger:
        for i, step in enumerate(steps):
            if step == "observe":
                fill(ledger, range(i, i + 3))
            elif step == "move":
                ledger.observe(cand(user="u0", predicate="home_city", value=f"City{i}", session=f"m{i}",
                                    quote=f"we moved to City{i}"))
            elif step == "forget" and events(ledger):
                ledger.forget("app", "u0", reason="request")
            elif step == "checkpoint" and events(ledger):
                notes.append(ledger.checkpoint(KEY)["note"])
        if events(ledger):
            notes.append(ledger.checkpoint(KEY)["note"])
        opened = [open_checkpoint(n, VKEY) for n in notes]
        for a in range(len(notes)):
            for b in range(a, len(notes)):
                proof = ledger.prove_consistency(notes[a], notes[b])
                verify_consistency_proof(proof, opened[a], opened[b])
            for seq in range(1, opened[a].size + 1, 3):
                verify_inclusion_proof(ledger.prove_inclusion(seq, notes[a]), opened[a])
        assert ledger.replay_differences() == []
