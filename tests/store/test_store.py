"""The event store: schema, pragmas, triggers, the hash chain, time."""

from __future__ import annotations

import sqlite3

import orjson
import pytest

from factledger.ledger.domain.events import EVENT_TYPES, parse_body
from factledger.ledger.store import chain
from tests.conftest import cand


def test_pragmas_are_set(ledger):
    conn = ledger._conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2          # FULL
    assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000


def test_delete_is_refused(ledger):
    ledger.observe(cand())
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        ledger._conn.execute("DELETE FROM events")


@pytest.mark.parametrize("assignment", [
    "body = '{}'", "type = 'FactRetracted'", "hash = 'x'", "prev_hash = 'x'", "commitment = 'x'",
    "recorded_at = '2000-01-01'", "app = 'other'", "user = 'other'", "event_id = 'x'",
    "body = NULL", "body = NULL, salt = NULL",
])
def test_update_other_than_redaction_is_refused(ledger, assignment):
    ledger.observe(cand())
    with pytest.raises(sqlite3.DatabaseError, match="redacted"):
        ledger._conn.execute(f"UPDATE events SET {assignment} WHERE seq = 1")


def test_redaction_shape_is_allowed(ledger):
    ledger.observe(cand())
    ledger._conn.execute("UPDATE events SET body = NULL, salt = NULL, redacted_by = 1,"
                        " user = 'erased:abc' WHERE seq = 1")
    assert ledger._conn.execute("SELECT body, user FROM events").fetchone() == (None, "erased:abc")


def test_chain_links_every_event(ledger):
    for i in range(5):
        ledger.observe(cand(value=f"v{i}", predicate="allergy", session=f"s{i}"))
    rows = ledger._conn.execute("SELECT seq, event_id, type, recorded_at, body, salt, commitment,"
                               " prev_hash, hash FROM events ORDER BY seq").fetchall()
    prev = chain.GENESIS
    for seq, event_id, type_, at, body, salt, commit, prev_hash, digest in rows:
        assert prev_hash == prev
        assert commit == chain.commitment(salt, body.encode())
        assert digest == chain.link(prev, seq, event_id, type_, at, commit)
        assert len(salt) == 16
        prev = digest
    assert ledger.head() == (5, prev)


def test_bodies_are_canonical_json_readable_by_sqlite(ledger):
    ledger.observe(cand(value="vegan"))
    body, value = ledger._conn.execute(
        "SELECT body, json_extract(body, '$.value') FROM events").fetchone()
    assert value == "vegan"
    assert body == orjson.dumps(orjson.loads(body), option=orjson.OPT_SORT_KEYS).decode()
    assert parse_body(orjson.loads(body)).type == "FactObserved"


def test_recorded_at_comes_from_the_injected_clock(ledger, clock):
    clock.set("2026-07-03T12:34:56.789Z")
    ledger.observe(cand(said_at="2026-06-01"))
    assert ledger._conn.execute("SELECT recorded_at FROM events").fetchone()[0] == \
        "2026-07-03T12:34:56.789000Z"


def test_recorded_at_never_goes_backwards(ledger, clock):
    clock.set("2026-07-03T00:00:00Z")
    ledger.observe(cand(value="a", said_at="2026-06-01"))
    clock.set("2026-07-01T00:00:00Z")
    ledger.observe(cand(value="b", said_at="2026-06-02"))
    times = [r[0] for r in ledger._conn.execute("SELECT recorded_at FROM events ORDER BY seq")]
    assert times == sorted(times)


def test_one_transaction_shares_one_recorded_at(ledger, clock):
    ledger.observe(cand(value="Pune", predicate="home_city"))
    clock.tick()
    ledger.observe(cand(value="Bengaluru", predicate="home_city", said_at="2026-09-30", session="s2"))
    rows = ledger._conn.execute("SELECT seq, recorded_at FROM events ORDER BY seq").fetchall()
    assert rows[1][1] == rows[2][1] != rows[0][1]


def test_a_failed_batch_writes_nothing(ledger):
    good = cand(value="vegan")

    class Boom(Exception):
        pass

    def exploding():
        yield good
        raise Boom()

    with pytest.raises(Boom):
        ledger.observe_many(exploding())
    assert ledger._conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
    assert ledger._conn.execute("SELECT COUNT(*) FROM facts_current").fetchone()[0] == 0


def test_every_event_type_has_a_model():
    assert len(EVENT_TYPES) == 17
    from factledger.ledger.domain import events

    for name in EVENT_TYPES:
        assert getattr(events, name).model_fields["type"].default == name


def test_second_writer_waits_then_gets_a_clear_error(tmp_path, clock):
    from factledger.ledger import Ledger, LedgerError

    path = tmp_path / "busy.db"
    first = Ledger(path, clock=clock, create=True)
    second = Ledger(path, clock=clock, busy_timeout=0.2)
    first._conn.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(LedgerError, match="busy"):
            second.observe(cand())
    finally:
        first._conn.execute("ROLLBACK")
    second.observe(cand())
    assert second.stats()["events"] == 1


def test_a_projection_added_later_is_built_from_the_log(tmp_path, clock):
    from factledger.ledger import Ledger

    path = tmp_path / "old.db"
    with Ledger(path, clock=clock, create=True) as ledger:
        ledger.observe(cand(value="vegan"))
        ledger._conn.execute("DROP TABLE fact_events")      # as if made before that projection
    with Ledger(path, clock=clock) as reopened:
        assert reopened._conn.execute("SELECT COUNT(*) FROM fact_events").fetchone()[0] == 1
        assert reopened.replay_differences() == []


def test_a_candidate_outside_a_transaction_leaves_nothing_held(tmp_path, clock):
    """What the facts projection reads is only true under the write lock: outside a transaction
    it refuses, so another writer's change in between is never folded over with a stale copy."""
    from factledger.ledger import Ledger, LedgerError

    path = tmp_path / "l.db"
    with Ledger(path, clock=clock, create=True) as a, Ledger(path, clock=clock, create=True) as b:
        a.observe(cand())
        with pytest.raises(LedgerError, match="facts projection is read or applied outside"):
            a.append_candidate(cand(value="vegan", session="s2", event="e2"))
        assert a.projector._facts._batch is None
        clock.tick(60)
        b.observe(cand(value="pescatarian", session="s3", event="e3", said_at="2026-08-31T10:00:00Z"))
        clock.tick(60)
        a.observe(cand(value="vegan", session="s4", event="e4", said_at="2026-09-01T10:00:00Z"))
        assert [f["value"] for f in a.facts("app", "u1")] == ["vegan"]
        assert a.replay_differences() == []


def test_an_older_file_gets_this_versions_indexes(tmp_path, clock):
    from factledger.ledger import Ledger

    path = tmp_path / "old.db"
    with Ledger(path, clock=clock, create=True) as ledger:
        ledger.observe(cand())
        conn = ledger._conn
        conn.execute("DROP INDEX fact_history_intervals")
        conn.execute("CREATE INDEX fact_history_key ON fact_history (app, user, subject, predicate)")
        conn.execute("CREATE INDEX fact_history_as_of ON fact_history (app, user, recorded_from, recorded_to)")
    with Ledger(path, clock=clock) as ledger:
        names = {r[0] for r in ledger._conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert "fact_history_intervals" in names
        assert not {"fact_history_key", "fact_history_as_of"} & names
        assert ledger.facts("app", "u1")[0]["value"] == "vegetarian"


def test_verify_inside_a_transaction_checks_what_it_has_not_committed(ledger, monkeypatch):
    """An import verifies its rows before it commits them; a second connection would not see
    them, so the integrity check runs on the caller's (the only one allowed here)."""
    import factledger.ledger.store.sqlite.integrity as integrity_module

    ledger.observe(cand())

    def no_second_connection(*args, **kwargs):
        raise AssertionError("verify opened a second connection inside a transaction")

    with ledger.transaction():
        ledger.append_candidate(cand(value="vegan", session="s2", event="e2"))
        monkeypatch.setattr(integrity_module.sqlite3, "connect", no_second_connection)
        result = ledger.verify(log_only=True)
        monkeypatch.undo()
        assert result["ok"] and result["events"] == ledger._store.last_seq > 1


def test_an_older_file_with_a_damaged_projection_page_still_opens(tmp_path, clock):
    """The index migration must not lock a user out of `verify` and `replay` on a damaged file."""
    import sqlite3 as _sqlite3

    from factledger.ledger import Ledger

    path = tmp_path / "old.db"
    with Ledger(path, clock=clock, create=True) as ledger:
        for i in range(40):
            ledger.observe(cand(user=f"u{i}", session=f"s{i}", event=f"e{i}", quote="vegetarian " + "x" * 1500))
        conn = ledger._conn
        conn.execute("DROP INDEX fact_history_intervals")
        conn.execute("CREATE INDEX fact_history_key ON fact_history (app, user, subject, predicate)")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = _sqlite3.connect(path)
    page = raw.execute("SELECT pageno FROM dbstat WHERE name = 'fact_history' AND pagetype = 'leaf'"
                       " ORDER BY pageno LIMIT 1").fetchone()[0]
    size = raw.execute("PRAGMA page_size").fetchone()[0]
    raw.close()
    # The whole page, its header too: a page type of 0xff is refused the moment the page is read.
    # Keeping the header and clobbering only the cells let SQLite parse each cell from the page's
    # last byte on (a pointer of 0xffff is masked to 4095), into the page cache's bookkeeping past
    # the page, which differs from process to process: about one run in forty, CREATE INDEX read
    # that as rows and succeeded.
    with open(path, "r+b") as f:
        f.seek((page - 1) * size)
        f.write(b"\xff" * size)
    with Ledger(path, clock=clock) as ledger:            # opens: only indexes would differ
        result = ledger.verify(log_only=True)
        # the log itself is intact; the index the damaged file could not be given is named
        assert result["first_bad_seq"] == 0 and result["events"] == 40
        assert result["schema"] == ["index fact_history_intervals is missing"]
