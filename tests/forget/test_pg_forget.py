"""Forgetting on PostgreSQL: redaction and the partition's replay, then by default VACUUM FULL of
the touched tables, after which no data file of the database holds a byte of the forgotten value;
with `--no-vacuum`, a plain VACUUM, the indexes skipped (the dead row versions leave the heap;
their index entries stay, and no query reaches a row through them), and the receipt, stderr and
`residue` say the bytes remain until the next VACUUM FULL.  The WAL still does, and `factledger residue` names
it and the other places a forget cannot reach.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from factledger.ledger import Ledger
from tests.conftest import cand
from tests.store.test_concurrency_writers import ENV, FACTLEDGER

MARKER = "Zqxvilleborough"


def _data_files_holding(ledger, marker: str) -> list[str]:
    raw = ledger._conn.raw
    raw.execute("CHECKPOINT")                 # dirty pages on disk: what the heap holds now
    data = Path(raw.execute("SHOW data_directory").fetchone()[0])
    database = raw.execute("SELECT oid FROM pg_database WHERE datname = current_database()").fetchone()[0]
    hits = []
    for path in (data / "base" / str(database)).iterdir():
        if path.is_file() and marker.encode() in path.read_bytes():
            hits.append(path.name)
    names = dict(raw.execute("SELECT pg_relation_filenode(oid)::text, relname FROM pg_class "
                             "WHERE pg_relation_filenode(oid) IS NOT NULL").fetchall())
    return [names.get(hit, hit) for hit in hits]


def _fill(ledger):
    for i in range(40):
        ledger.observe(cand(user=f"keep{i}", predicate="diet", value="vegan"))
    ledger.observe(cand(user="gone", predicate="home_city", value=MARKER, quote=f"we live in {MARKER}"))
    ledger.observe(cand(user="gone", predicate="diet", value="vegan", quote=f"vegan in {MARKER}"))


def test_forget_with_vacuum_leaves_no_byte_in_the_data_files(postgres, clock):
    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        _fill(ledger)
        assert _data_files_holding(ledger, MARKER)          # the scan finds it before
        receipt = ledger.forget("app", "gone", reason="erasure request", vacuum=True)
        assert receipt["purge"]["vacuumed"] and receipt["purge"]["full"]
        assert _data_files_holding(ledger, MARKER) == []
        assert ledger.verify()["ok"] and ledger.replay_differences() == []


def test_forget_by_default_leaves_no_byte_in_the_data_files(postgres, clock):
    """No choice made: VACUUM FULL, as with `vacuum=True`; nothing owed, says `residue`."""
    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        _fill(ledger)
        receipt = ledger.forget("app", "gone", reason="erasure request")
        assert receipt["purge"]["full"] and "bytes" not in receipt["purge"]
        assert _data_files_holding(ledger, MARKER) == []
        freed = next(p for p in ledger.residue()["places"] if p["place"] == "freed page space")
        assert "none owed" in freed["note"]
        assert ledger.verify()["ok"] and ledger.replay_differences() == []


def test_forget_vacuums_the_touched_tables_no_row_holds_the_value(postgres, clock):
    """Plain VACUUM (`vacuum=False`, `--no-vacuum`): the dead row versions are gone from every table,
    so no query, snapshot or replica reads them; their bytes stay in a page's free space (and their
    keys in the indexes) until reused (docs/forgetting.md), which the receipt and `residue` say
    until a VACUUM FULL removes them."""
    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        _fill(ledger)
        receipt = ledger.forget("app", "gone", reason="erasure request", vacuum=False)
        assert receipt["purge"]["vacuumed"] and not receipt["purge"]["full"]
        assert receipt["purge"]["bytes"].startswith("remain in freed page space until the next VACUUM FULL")
        for table in ("events", *ledger.projector.all_tables):
            rows = ledger._conn.raw.execute(f"SELECT t::text FROM {table} AS t").fetchall()
            assert not any(MARKER in row[0] for row in rows), table
        # no dead row version left, by VACUUM's own report (`held_back` would count them); the
        # statistics view can count the scrub's updates for up to a second after VACUUM reported
        # (ledger/store/postgres/vacuum.py), so it is not asked here
        assert "held_back" not in receipt["purge"]
        assert receipt["purge"]["index_entries"] == "left until a VACUUM cleans the indexes"
        assert ledger.verify()["ok"] and ledger.replay_differences() == []
        freed = next(p for p in ledger.residue()["places"] if p["place"] == "freed page space")
        assert "--no-vacuum" in freed["note"] and "until the next VACUUM FULL" in freed["note"]


def test_an_index_entry_a_forget_left_leads_no_query_to_the_row(postgres, clock):
    """The forget's VACUUM skips the indexes, so the old rows' entries stay in them; an index-only
    scan of the forgotten user's keys (the one plan that could answer from the index alone) still
    visits the heap, because PostgreSQL never marks a page holding dead line pointers all-visible,
    and returns nothing."""
    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        _fill(ledger)
        ledger.forget("app", "gone", reason="erasure request", vacuum=False)
        raw = ledger._conn.raw
        raw.execute("SET enable_seqscan = off")
        raw.execute("SET enable_bitmapscan = off")
        query = "SELECT app, \"user\", subject, predicate FROM facts_current WHERE app = 'app' AND \"user\" = 'gone'"
        plan = raw.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + query).fetchone()[0][0]["Plan"]
        assert plan["Node Type"] == "Index Only Scan" and plan["Index Name"] == "facts_current_key"
        assert plan["Heap Fetches"] > 0           # the entries are there, and each went to the heap
        assert plan["Actual Rows"] == 0
        assert raw.execute(query).fetchall() == []
        raw.execute("RESET enable_seqscan")
        raw.execute("RESET enable_bitmapscan")


def test_residue_lists_the_places_a_forget_cannot_reach(postgres):
    location = postgres.location()
    subprocess.run([FACTLEDGER, "--db", location, "init"], check=True, capture_output=True, env=ENV)
    result = subprocess.run([FACTLEDGER, "--db", location, "residue", "--json"], capture_output=True,
                            text=True, env=ENV)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    places = [p["place"] for p in report["places"]]
    assert report["backend"] == "postgresql"
    assert {"index entries", "WAL (pg_wal)", "WAL archive", "base backups", "pg_dump files and exports"} <= set(places)
    assert report["settings"]["archive_mode"] == "off"


def test_the_cli_says_when_freed_pages_may_still_hold_the_bytes(postgres, clock):
    """Nothing said in silence: a plain VACUUM's limit (`--no-vacuum`) is told on stderr, in every
    format; after the default VACUUM FULL there is nothing to tell."""
    location = postgres.location()
    with Ledger(location, clock=clock, create=True) as ledger:
        _fill(ledger)
        ledger.observe(cand(user="also", predicate="diet", value="vegan"))
    forget = [FACTLEDGER, "--db", location, "forget", "--app", "app", "--reason", "erasure request", "--yes"]
    plain = subprocess.run([*forget, "--user", "gone", "--json", "--no-vacuum"], capture_output=True, text=True,
                           env=ENV)
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["purge"]["full"] is False
    assert "the rewrite was deferred (--no-vacuum)" in plain.stderr and "until the next VACUUM FULL" in plain.stderr
    assert "the indexes keep the old rows' indexed columns" in plain.stderr
    residue = subprocess.run([FACTLEDGER, "--db", location, "residue", "--json"], capture_output=True, text=True,
                             env=ENV)
    freed = next(p for p in json.loads(residue.stdout)["places"] if p["place"] == "freed page space")
    assert "until the next VACUUM FULL" in freed["note"]
    full = subprocess.run([*forget, "--user", "also"], capture_output=True, text=True, env=ENV)
    assert full.returncode == 0, full.stderr
    assert json.loads(full.stdout)["purge"]["full"] is True and "freed page" not in full.stderr
    residue = subprocess.run([FACTLEDGER, "--db", location, "residue", "--json"], capture_output=True, text=True,
                             env=ENV)
    freed = next(p for p in json.loads(residue.stdout)["places"] if p["place"] == "freed page space")
    assert "none owed" in freed["note"]


def test_old_rows_an_open_transaction_still_sees_are_reported_not_hidden(postgres, clock):
    """A VACUUM cannot remove a row version a snapshot may still read: the forget vacuums again
    for a while, then counts what is held back in its receipt instead of claiming a purge."""
    import psycopg

    from factledger.ledger.store.postgres.vacuum import vacuum_tables

    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        _fill(ledger)
        with psycopg.connect(postgres.conninfo) as reader:
            reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            reader.execute(f'SELECT COUNT(*) FROM "{ledger._conn.schema}".events').fetchone()
            receipt = ledger.forget("app", "gone", reason="erasure request", vacuum=False)
            purge = receipt["purge"]
            assert purge["held_back"] > 0 and "events" in purge["held_back_tables"]
            reader.rollback()
        again = vacuum_tables(ledger._conn, purge["held_back_tables"])
        assert "held_back" not in again
        assert ledger.verify()["ok"] and ledger.replay_differences() == []


def test_a_table_a_long_reader_holds_is_vacuumed_plainly_and_named(postgres, clock):
    """The default VACUUM FULL waits a few seconds for a table's lock, not for ever (every other
    reader would queue behind it): a table an open transaction holds gets the plain pass, and the
    receipt names it and says the bytes remain."""
    import psycopg

    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        _fill(ledger)
        with psycopg.connect(postgres.conninfo) as reader:
            reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            reader.execute(f'SELECT COUNT(*) FROM "{ledger._conn.schema}".events').fetchone()
            purge = ledger.forget("app", "gone", reason="erasure request")["purge"]
            reader.rollback()
        assert purge["full"] is False and purge["not_rewritten"] == ["events"]
        assert purge["bytes"].startswith("remain in freed page space")
        freed = next(p for p in ledger.residue()["places"] if p["place"] == "freed page space")
        assert "until the next VACUUM FULL" in freed["note"]


def test_the_receipt_and_stderr_say_how_many_old_rows_were_held_back(capsys):
    from factledger.cli.forget import render_receipt, warn_freed_pages

    receipt = {"noop": False, "scope_kind": "user", "scope_hash": "h", "redaction_seq": 9, "event_id": "e",
               "recorded_at": "t", "counts": {"events": 2}, "compensating_seqs": [],
               "purge": {"vacuumed": True, "full": False, "tables": 12, "held_back": 4,
                         "held_back_tables": ["events"]}}
    assert ("tables vacuumed (VACUUM, 12 tables); 4 old row versions held back by an open transaction"
            in render_receipt(receipt))
    warn_freed_pages(receipt)
    err = capsys.readouterr().err
    assert "4 old row versions" in err and "tables: events" in err and "VACUUM cannot remove them" in err
