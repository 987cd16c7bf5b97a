"""`verify` that costs what changed: after a full check has recorded the projections' pages, a
plain `verify` refolds only the partitions that may have changed, and still catches a row forged
in a partition that did not change (before the record or after it), a row added, a row removed,
and a page restored from before a later write.  Real files, real `factledger` processes."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from factledger.ledger import Ledger
from tests.conftest import cand

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))


@pytest.fixture
def db(tmp_path, clock, monkeypatch):
    monkeypatch.setenv("FACTLEDGER_VERIFY_STATE", str(tmp_path / "state"))
    path = tmp_path / "ledger.db"
    with Ledger(path, clock=clock, create=True) as ledger:
        for user in range(40):
            for i in range(3):
                clock.tick()
                ledger.observe(cand(user=f"u{user}", predicate="home_city", value=f"City{user}-{i}",
                                    session=f"s{i}", event=f"e{user}-{i}", said_at=f"2026-08-{i + 1:02d}"))
    return path


def verify(path: Path, *extra: str) -> dict:
    done = subprocess.run([FACTLEDGER, "--db", str(path), "verify", "--json", *extra], capture_output=True,
                          text=True, timeout=120)
    out = json.loads(done.stdout) if done.stdout.strip() else {}
    out["returncode"], out["stderr"] = done.returncode, done.stderr
    return out


def forge(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    for sql in statements:
        conn.execute(sql)
    conn.commit()
    conn.close()


def more(path: Path, clock, users=("u1", "u2")) -> None:
    with Ledger(path, clock=clock) as ledger:
        for user in users:
            clock.tick()
            ledger.observe(cand(user=user, predicate="home_city", value=f"Later-{user}", session="s9",
                                event=f"later-{user}", said_at="2026-09-01"))


def test_a_plain_verify_after_a_full_one_refolds_only_what_changed(db, clock):
    first = verify(db)
    assert first["ok"] and "incremental" not in first           # no record yet: the whole log
    again = verify(db)
    assert again["ok"] and again["incremental"]["partitions_refolded"] == 0
    more(db, clock)
    later = verify(db)
    # the two written, and no other: one page of a small table holds every partition's rows, and
    # the rows of that page are compared one by one with their digests in the record
    assert later["ok"] and later["incremental"]["partitions_refolded"] == 2, later
    assert later["incremental"]["rows_compared"] > 2, later
    assert verify(db, "--full")["ok"] and "incremental" not in verify(db, "--full")


FORGERIES = [
    ("facts_current", ["UPDATE facts_current SET value = '\"Paris\"' WHERE user = 'u30'"]),
    ("fact_history", ["UPDATE fact_history SET quote = 'I never said that' WHERE user = 'u31' AND recorded_to IS NOT NULL"]),
    ("fact_events", ["DELETE FROM fact_events WHERE rowid = (SELECT min(rowid) FROM fact_events WHERE user = 'u32')"]),
    ("fact_events", ["CREATE TEMP TABLE copied AS SELECT * FROM fact_events WHERE user = 'u33' LIMIT 1",
                     "UPDATE copied SET role = 'forged'", "INSERT INTO fact_events SELECT * FROM copied"]),
    ("merkle_hashes", ["UPDATE merkle_hashes SET hash = zeroblob(32) WHERE pos = 7"]),
]


@pytest.mark.parametrize(("table", "statements"), FORGERIES, ids=[f"{t}-{i}" for i, (t, _s) in enumerate(FORGERIES)])
@pytest.mark.parametrize("writes_after", [False, True])
def test_a_row_forged_where_nothing_changed_is_still_caught(db, clock, table, statements, writes_after):
    """Forged in a partition with no event since the record (the record was taken before the
    forgery), with or without other partitions written since: plain `verify` fails, naming the
    table as a full check does."""
    assert verify(db)["ok"]                                      # the full check, recorded
    if writes_after:
        more(db, clock)
    forge(db, *statements)
    result = verify(db)
    assert result["returncode"] == 1 and not result["ok"], result
    assert table in result["problem"], result["problem"]


def test_a_page_restored_from_before_a_later_write_is_caught(db, clock, tmp_path):
    """The rollback a page digest alone would miss: a later write changes a partition's rows, and
    the forger puts the old file back under the new log.  The partition has events since the
    record, so it is refolded, and its rows are not what the log gives."""
    assert verify(db)["ok"]
    before = tmp_path / "before.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copy(db, before)
    more(db, clock, users=("u5",))
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    # the projections as they were, under the log as it is now
    forge(db, f"ATTACH '{before}' AS old", "DELETE FROM facts_current WHERE user = 'u5'",
          "INSERT INTO facts_current SELECT * FROM old.facts_current WHERE user = 'u5'")
    result = verify(db)
    assert result["returncode"] == 1 and "facts_current" in result["problem"], result


def test_a_record_of_another_ledger_or_a_broken_one_means_a_full_check(db, tmp_path):
    assert verify(db)["ok"]
    state = tmp_path / "state"
    (record,) = state.iterdir()
    record.write_text("{not json")
    assert "incremental" not in verify(db)                       # unreadable: refolds all, records again
    data = json.loads(record.read_text())
    data["hash"] = "00" * 32
    record.write_text(json.dumps(data))
    assert "incremental" not in verify(db)                       # not this log's head
    forge(db, "UPDATE facts_current SET value = '\"Paris\"' WHERE user = 'u3'")
    assert not verify(db)["ok"]


def checkpoint(path: Path) -> str:
    done = subprocess.run([FACTLEDGER, "--db", str(path), "checkpoint", "--projections"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_checkpoint_commits_the_record_and_verify_starts_from_it(db, clock):
    """`checkpoint --projections` proves the projections (the whole log: no record yet), keeps
    the record and commits its digest in the note; later verifies start from that checkpoint,
    even after a full check has recorded again."""
    note = checkpoint(db)
    size = int(note.split("\n")[1])
    assert "\nprojections " in note, note
    more(db, clock)
    later = verify(db)
    assert later["ok"] and later["incremental"]["since_seq"] == size, later
    assert verify(db, "--full")["ok"]
    assert verify(db)["incremental"]["since_seq"] == size
    assert int(checkpoint(db).split("\n")[1]) > size                   # from the committed record, again
    assert verify(db)["incremental"]["partitions_refolded"] <= 1       # the checkpoint's own partition


@pytest.mark.parametrize("writes_after", [False, True])
def test_a_record_forged_to_hide_a_row_is_refused_once_a_checkpoint_commits_one(db, clock, tmp_path, writes_after):
    """The forger rewrites a row and then every record the verifier keeps, made afresh from the
    forged file (its pages and rows as they now are, at the log's head): the digest committed
    by the checkpoint no longer matches, so the record is not used and the full check names the
    row."""
    from factledger.ledger.audit import verifycheck

    checkpoint(db)
    if writes_after:
        more(db, clock)
    forge(db, "UPDATE facts_current SET value = '\"Paris\"' WHERE user = 'u30'")
    with Ledger(db, clock=clock) as ledger:
        forged = verifycheck.encode(verifycheck.record(ledger._conn, ledger.projector))
        own = Path(ledger.verify_record())
    for path in (own, verifycheck.committed_record(own)):
        path.write_bytes(forged)
    result = verify(db)
    assert result["returncode"] == 1 and "facts_current" in result["problem"], result


def test_a_checkpoint_refuses_to_commit_projections_that_are_not_the_logs(db):
    forge(db, "UPDATE facts_current SET value = '\"Paris\"' WHERE user = 'u30'")
    done = subprocess.run([FACTLEDGER, "--db", str(db), "checkpoint", "--projections"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1 and "facts_current" in done.stderr, done.stderr
    assert verify(db)["returncode"] == 1


def test_a_forget_since_the_record_is_refolded_and_a_forgery_beside_it_caught(db, clock):
    """A session forgotten since the record scrubs events before the record's head: its partition
    is found from the Redacted event since (not from a scan of `redacted_by`), refolded, and
    agrees; a row forged in another partition on the same pages is still caught."""
    from factledger.ledger.audit import verifycheck

    since = verify(db)["events"]
    with Ledger(db, clock=clock) as ledger:
        ledger.forget("app", "u7", session="s1", reason="asked")
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM events WHERE seq <= ? AND redacted_by > ? AND user = 'u7'",
                        (since, since)).fetchone()[0] > 0                # scrubbed before the record's head
    assert ("app", "u7") in verifycheck._written_since(conn, since)        # by the Redacted event's targets
    conn.close()
    after = verify(db)
    assert after["ok"] and after["incremental"]["partitions_refolded"] >= 1, after
    forge(db, "UPDATE fact_history SET quote = 'I never said that' WHERE user = 'u8'")
    result = verify(db)
    assert result["returncode"] == 1 and "fact_history" in result["problem"], result



def test_a_leaf_whose_row_spills_is_never_recorded_as_its_page_alone(tmp_path):
    """What lets a plain verify skip the cells (`leaves_only`): the full walk that records digests
    a leaf with a spilling row together with its overflow pages, so the leaf's bytes alone never
    match the record, and a forgery in an overflow page (the leaf unchanged) makes it "changed"."""
    from factledger.ledger.store.sqlite import pages

    path = tmp_path / "spill.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (app TEXT, user TEXT, value TEXT)")
    conn.execute("INSERT INTO t VALUES ('a', 'u', 'short')")
    conn.execute("INSERT INTO t VALUES ('a', 'v', ?)", ("Lisbon " * 2000,))
    conn.commit()
    recorded = pages.table_pages(conn, ("t",))["t"]
    alone = pages.table_pages(conn, ("t",), leaves_only=True)["t"]
    assert set(recorded) == set(alone) and all(recorded[p] != alone[p] for p in recorded)
    conn.execute("DELETE FROM t WHERE user = 'v'")
    conn.commit()
    assert pages.table_pages(conn, ("t",)) == pages.table_pages(conn, ("t",), leaves_only=True)
    conn.close()
