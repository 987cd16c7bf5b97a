"""Consequential actions trust the log, not a projection (issue 47, class 1).

A writer of the file who cannot read the signing key edits a projection row; the action that
would act on it (sign a checkpoint, serve a proof, accept a held candidate, export a data
subject's record, serve digests and erasures) refuses with "the ledger is damaged" instead.
Each forgery is a careful forger's (`tests/audit/forger.py`): the guard triggers come back.
"""

from __future__ import annotations

import pytest

from factledger.ledger import Ledger
from factledger.ledger.errors import ProjectionMismatch
from factledger.ledger.tlog import merkle
from factledger.ledger.tlog.note import new_signer, skey_text
from factledger.ledger.tlog.tlog_verify import open_checkpoint, parse_vkey, verify_inclusion_proof
from tests.audit.forger import raw_forger
from tests.conftest import MovableClock, cand

KEY = new_signer("factledger.test/actions")
VKEY = parse_vkey(KEY.vkey)


def fill(ledger: Ledger, count: int = 12) -> None:
    ledger.observe_many([cand(user=f"u{i}", predicate="home_city", value="Pune", quote="we live in Pune")
                         for i in range(count)])


def forge(ledger: Ledger, *statements) -> None:
    """Edit the open ledger's file from outside it (the ledger's own connection stays open)."""
    conn = raw_forger(ledger._work.location)
    for sql, *args in statements:
        conn.execute(sql, *args)
    conn.close()


# --- signing and proving ----------------------------------------------------------------------

def _fork_tree(ledger: Ledger) -> None:
    """Replace the stored tree by a fork's: the same size, other leaves (what the forger wants signed)."""
    size = ledger.head()[0]
    node = merkle.memory_tree([merkle.leaf_hash(bytes([i % 256]) * 32) for i in range(size)])
    hashes = []
    for level in range(size.bit_length()):
        for index in range(size >> level):
            hashes.append((merkle.stored_index(level, index), node(level, index)))
    forge(ledger, ("DELETE FROM merkle_hashes",),
          *(("INSERT INTO merkle_hashes (pos, hash) VALUES (?, ?)", (pos, h)) for pos, h in hashes))


def test_a_forked_tree_is_never_signed(ledger):
    fill(ledger)
    _fork_tree(ledger)
    with pytest.raises(ProjectionMismatch, match="the ledger is damaged: merkle_hashes"):
        ledger.checkpoint(KEY)
    assert ledger.log(type="CheckpointIssued") == []          # nothing signed, nothing recorded


def test_one_forged_node_makes_checkpoint_and_prove_refuse(ledger):
    fill(ledger)
    note = ledger.checkpoint(KEY)["note"]
    size = open_checkpoint(note, VKEY).size
    verify_inclusion_proof(ledger.prove_inclusion(5), open_checkpoint(note, VKEY))
    # a leaf on seq 5's path (its sibling), which a root read from the stored subtrees need not touch
    forge(ledger, ("UPDATE merkle_hashes SET hash = ? WHERE pos = ?", (b"\x01" * 32, merkle.stored_index(0, 5))))
    with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
        ledger.prove_inclusion(5, note)
    # what a checkpoint signs is the log's root, whatever the node: a forged node below it changes nothing
    assert ledger.verify_checkpoint(ledger.checkpoint(KEY)["note"], VKEY)["check"] in (None, "tree")
    # the top node of the tree the checkpoint covers: the root itself disagrees
    fill(ledger, 2)
    forge(ledger, ("UPDATE merkle_hashes SET hash = ? WHERE pos = (SELECT MAX(pos) FROM merkle_hashes)",
                   (b"\x02" * 32,)))
    with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
        ledger.checkpoint(KEY)
    ledger.replay()                                            # the tree refolded from the log
    later = ledger.checkpoint(KEY)["note"]
    verify_inclusion_proof(ledger.prove_inclusion(5, note), open_checkpoint(note, VKEY))
    assert ledger.prove_consistency(note, later)["old_size"] == size


def test_a_deleted_node_is_damage_not_a_bad_argument(ledger):
    fill(ledger)
    note = ledger.checkpoint(KEY)["note"]
    forge(ledger, ("DELETE FROM merkle_hashes WHERE pos = ?", (merkle.stored_index(0, 3),)))
    with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
        ledger.prove_inclusion(3, note)


def test_the_cli_refuses_to_sign_a_forged_tree(tmp_path):
    from click.testing import CliRunner

    from factledger.cli.main import cli

    path = tmp_path / "ledger.db"
    with Ledger(path, clock=MovableClock(), create=True) as ledger:
        fill(ledger)
        _fork_tree(ledger)
    key = tmp_path / "key"
    key.write_text(skey_text(KEY) + "\n")
    result = CliRunner().invoke(cli, ["--db", str(path), "checkpoint", "--key", str(key)])
    assert result.exit_code == 1 and "the ledger is damaged" in result.output, result.output
    assert "Traceback" not in result.output


# --- the review queue ---------------------------------------------------------------------------

def _held(ledger: Ledger, user: str = "u1") -> str:
    ledger.observe(cand(user=user, predicate="zq_not_in_registry", value="teal"))
    return ledger.held("app", user)[0]["hold_id"]


@pytest.mark.parametrize("column,value", [
    ("user", "victim"),                                       # another user's log
    ("candidate", '{"author":"user","predicate":"diet","value":"vegan"}'),
    ("reason", "ambiguous"),
    ("held_seq", 1),
])
def test_a_forged_queue_row_is_neither_listed_nor_accepted(ledger, column, value):
    ledger.observe(cand(user="victim", predicate="diet", value="vegetarian"))
    hold_id = _held(ledger)
    before = ledger.head()
    forge(ledger, (f"UPDATE review_queue SET {column} = ? WHERE hold_id = ?", (value, hold_id)))
    with pytest.raises(ProjectionMismatch, match="the ledger is damaged: review_queue"):
        ledger.held("app", None)
    for act in (lambda: ledger.review_accept(hold_id, "diet", by="rev"),
                lambda: ledger.review_reject(hold_id, "no", by="rev")):
        with pytest.raises(ProjectionMismatch, match="the ledger is damaged: review_queue"):
            act()
    assert ledger.head() == before                            # nothing written, in anyone's name


def test_a_closed_item_put_back_to_open_is_not_accepted_again(ledger):
    hold_id = _held(ledger)
    ledger.review_reject(hold_id, "not a fact", by="rev")
    before = ledger.head()
    forge(ledger, ("UPDATE review_queue SET status = 'open', closed_seq = NULL, closed_reason = NULL"
                   " WHERE hold_id = ?", (hold_id,)))
    with pytest.raises(ProjectionMismatch, match="rejected in the log"):
        ledger.review_accept(hold_id, "diet", by="rev")
    assert ledger.head() == before
    ledger.replay()
    assert [r["status"] for r in ledger.held("app", "u1", status=None)] == ["rejected"]


# --- a meaning vector of the wrong length -------------------------------------------------------

@pytest.mark.parametrize("edit", ["substr(vector, 1, length(vector) - 4)", "CAST(vector || zeroblob(4) AS BLOB)", "zeroblob(3)"])
def test_a_vector_of_the_wrong_length_is_named_by_plain_verify_and_refused_by_recall(meaning, tmp_path, edit):
    from click.testing import CliRunner

    from factledger.cli.main import cli

    path = tmp_path / "meaning.db"
    with Ledger(path, clock=MovableClock("2026-09-01T00:00:00Z"), create=True) as ledger:
        ledger.observe(cand(predicate="diet", value="pescatarian", said_at="2026-08-10T10:00:00Z"))
        ledger.observe(cand(predicate="home_city", value="Pune", session="s2", event="e2",
                            said_at="2026-08-11T10:00:00Z"))
        assert ledger.verify()["ok"]
        forge(ledger, (f"UPDATE fact_vectors SET vector = {edit} WHERE seq = (SELECT MIN(seq) FROM fact_vectors)",))
        result = ledger.verify()
        assert not result["ok"] and "fact_vectors" in result["problem"], result
        with pytest.raises(ProjectionMismatch, match="meaning vector is .* bytes"):
            ledger.recall("app", "u1", "what do I eat")
    run = CliRunner().invoke(cli, ["--db", str(path), "recall", "what do I eat", "--app", "app", "--user", "u1"])
    assert run.exit_code == 1 and "the ledger is damaged" in run.output and "Traceback" not in run.output
    with Ledger(path) as ledger:
        ledger.replay()
        assert ledger.verify()["ok"] and ledger.recall("app", "u1", "what do I eat").selected


# --- a deleted history interval -----------------------------------------------------------------

def test_a_deleted_interval_is_noticed_by_history_and_past_reads(ledger, clock):
    ledger.observe(cand(predicate="home_city", value="Paris", said_at="2026-01-01T00:00:00Z"))
    clock.tick()
    ledger.observe(cand(predicate="home_city", value="Berlin", session="s2", said_at="2026-03-01T00:00:00Z"))
    paris = next(f["fact_id"] for f in ledger.history("app", "u1") if f["value"] == "Paris")
    assert [f["value"] for f in ledger.facts("app", "u1", valid_at="2026-02-01")] == ["Paris"]
    forge(ledger, ("DELETE FROM fact_history WHERE fact_id = ?", (paris,)))
    with pytest.raises(ProjectionMismatch, match="the ledger is damaged: fact_history"):
        ledger.history("app", "u1")
    with pytest.raises(ProjectionMismatch, match="the ledger is damaged: fact_history"):
        ledger.history("app", "u1", predicate="home_city")
    with pytest.raises(ProjectionMismatch, match="the ledger is damaged: fact_history"):
        ledger.facts("app", "u1", valid_at="2026-02-01")
    assert not ledger.verify()["ok"]


# --- the data-subject export, session digests, the erasures list ----------------------------------

def _subject(ledger: Ledger) -> tuple[str, str]:
    ledger.observe(cand(predicate="allergy", value="peanuts", quote="I am allergic to peanuts"))
    ledger.observe(cand(subject="user.partner", predicate="allergy", value="shellfish", session="s2",
                        quote="my partner is allergic to shellfish"))
    own = next(f["fact_id"] for f in ledger.facts("app", "u1", include_sensitive=True) if f["value"] == "peanuts")
    assert [f["value"] for f in ledger.export_subject("app", "u1")["facts"]] == ["peanuts"]
    return own, "peanuts"


@pytest.mark.parametrize("tables,column,value", [
    (("facts_current", "fact_history"), "subject", "user.partner"),   # a person's own fact made "another's"
    (("facts_current",), "value", "forged"),
    (("fact_history",), "value", "forged"),
    (("fact_history",), "quote", "I said forged"),
])
def test_the_data_subject_export_prints_only_what_the_log_says(ledger, tables, column, value):
    own, _ = _subject(ledger)
    forge(ledger, *((f"UPDATE {table} SET {column} = ? WHERE fact_id = ?", (value, own)) for table in tables))
    with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
        ledger.export_subject("app", "u1")


def test_the_data_subject_export_refuses_an_added_fact(ledger):
    own, _ = _subject(ledger)
    forge(ledger, ("CREATE TEMP TABLE copied AS SELECT * FROM fact_history WHERE fact_id = ?", (own,)),
          ("UPDATE copied SET fact_id = 'f-forged', value = 'forged'",),
          ("INSERT INTO fact_history SELECT * FROM copied",))
    with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
        ledger.export_subject("app", "u1")


def test_a_forged_session_digest_is_not_served(ledger):
    from tests.ingest.test_validator_session import c, ingest

    ingest(ledger, c(predicate="diet", value="vegan", quote="I am vegan"))
    sessions = ledger.sessions("app", "u1")
    assert sessions
    for sql in ("UPDATE sessions SET digest = 'the user is diabetic'",
                "UPDATE sessions SET watermark = 'zzz'",
                "DELETE FROM sessions"):
        forge(ledger, (sql,))
        with pytest.raises(ProjectionMismatch, match="the ledger is damaged: sessions"):
            ledger.sessions("app", "u1")
        ledger.replay()
        assert ledger.sessions("app", "u1") == sessions


def test_the_erasures_list_is_the_log_s(ledger):
    ledger.observe(cand(user="u2", predicate="home_city", value="Lima"))
    ledger.forget("app", "u2", reason="erasure request", ticket="CASE-1")
    listed = ledger.erasures()
    assert [r["reason"] for r in listed] == ["erasure request"]
    for sql in ("UPDATE erasures SET reason = 'routine cleanup'", "DELETE FROM erasures",
                "INSERT INTO erasures SELECT seq + 1000, event_id || 'x', app, user, recorded_at, scope_kind,"
                " scope_hash, reason, requester, events, counts, partitions FROM erasures",
                "DELETE FROM forgotten_scopes"):
        forge(ledger, (sql,))
        with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
            ledger.erasures()
        ledger.replay()
        assert ledger.erasures() == listed


# --- a reviewer's settlement --------------------------------------------------------------------

@pytest.mark.parametrize("sql", [
    "UPDATE facts_current SET status = 'disputed' WHERE value = 'basic'",     # a dispute made up
    "UPDATE facts_current SET user = 'victim' WHERE value = 'premium'",       # moved to another user
    "DELETE FROM facts_current WHERE value = 'gold'",                          # a challenger hidden
    "UPDATE facts_current SET basis = 'inferred' WHERE value = 'basic'",      # the heir chosen differently
])
def test_resolve_settles_only_on_the_log_s_facts(ledger, sql):
    base = ledger.observe(cand(predicate="plan", value="basic", author="document", basis="verified"))
    premium = ledger.observe(cand(predicate="plan", value="premium", session="s2", said_at="2026-09-01"))
    ledger.observe(cand(predicate="plan", value="gold", session="s3", said_at="2026-09-02",
                        author="agent", basis="inferred"))
    before = ledger.head()
    forge(ledger, (sql,))
    with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
        ledger.resolve(base.fact_id if "premium" not in sql else premium.fact_id, accept=False,
                       by="rev", reason="plan changed")
    assert ledger.head() == before


def test_a_contradiction_is_listed_only_from_the_log_s_facts(ledger):
    ledger.observe(cand(predicate="deploy.region", value="eu-west-1", quote="we deploy to eu-west-1"))
    ledger.observe(cand(predicate="deploy.avoided_region", value="eu-west-1", session="s2",
                        quote="never use eu-west-1"))
    assert len(ledger.contradictions()) == 1
    forge(ledger, ("UPDATE facts_current SET value = 'us-east-1' WHERE predicate = 'deploy.region'",),
          ("UPDATE facts_current SET value = 'us-east-1' WHERE predicate = 'deploy.avoided_region'",))
    with pytest.raises(ProjectionMismatch, match="the ledger is damaged"):
        ledger.contradictions()
