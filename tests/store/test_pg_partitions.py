"""A PostgreSQL ledger's hash partitions (ledger/store/postgres/partitions.py): a forget vacuums only
the leaves holding its partition, the write path's statements read one leaf, creation records the
leaf count, a ledger made before partitioning still opens and works, and `verify` notices the
chain's table missing or altered."""

from __future__ import annotations

import re
import time

import pytest

from factledger.ledger import Ledger, LedgerError
from factledger.ledger.store.postgres import partitions
from factledger.projections import current
from factledger.projections.factbatch import _CLOSE, _DELETE_CURRENT
from tests.conftest import cand

pytestmark = pytest.mark.usefixtures("postgres")


@pytest.fixture(autouse=True)
def partitioned(monkeypatch):
    """Partitioning is asked for (`FACTLEDGER_PG_LEAVES`; a new ledger is plain by default)."""
    monkeypatch.setenv("FACTLEDGER_PG_LEAVES", str(partitions.SUGGESTED_LEAVES))


def _fill(ledger, users=12):
    for i in range(users):
        ledger.observe(cand(user=f"u{i}", predicate="diet", value="vegan"))
        ledger.observe(cand(user=f"u{i}", predicate="home_city", value=f"Town{i}"))


def _remainder(conn, user: str, table: str = "events") -> int:
    return conn.raw.execute(
        "SELECT r FROM generate_series(0, %s) AS r WHERE satisfies_hash_partition(%s::regclass, %s, r, %s::text, %s::text)",
        (conn.leaves - 1, f'"{conn.schema}".{table}', conn.leaves, "app", user)).fetchone()[0]


def _vacuum_counts(raw, schema: str) -> dict[str, int]:
    return dict(raw.execute("SELECT relname, vacuum_count FROM pg_stat_user_tables WHERE schemaname = %s",
                            (schema,)).fetchall())


def test_creation_records_the_leaf_count_and_makes_every_leaf(postgres, clock):
    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        conn = ledger._conn
        assert conn.leaves == partitions.SUGGESTED_LEAVES
        assert conn.execute("SELECT value FROM ledger_meta WHERE key = ?",
                            (partitions.META_KEY,)).fetchone()[0] == str(partitions.SUGGESTED_LEAVES)
        split = partitions.partitioned_tables(conn)
        assert set(split) == {t for t in partitions.PARTITIONED if t in {"events", *ledger._work.projector.all_tables}}
        assert set(split.values()) == {partitions.SUGGESTED_LEAVES}


def test_every_leaf_is_autovacuumed_after_a_fixed_count_of_rows_not_a_fifth_of_it(postgres, clock):
    """A forget's VACUUM reads the pages written since autovacuum last ran: a fixed threshold keeps
    that backlog the same whatever the size of the leaf (partitions.LEAF_AUTOVACUUM)."""
    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        conn = ledger._conn
        split = partitions.partitioned_tables(conn)
        options = dict(conn.raw.execute(
            "SELECT c.relname, c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relkind = 'r'", (conn.schema,)).fetchall())
        wanted = sorted(f"{name}={value}" for name, value in partitions.LEAF_AUTOVACUUM.items())
        leaves = {f"{t}_p{r}" for t in split for r in range(split[t])}
        assert leaves and all(sorted(options[name] or []) == wanted for name in leaves)
        assert options["event_chain"] is None              # plain tables keep PostgreSQL's defaults


def test_an_existing_ledger_keeps_the_leaf_count_it_was_made_with(postgres, clock, monkeypatch):
    location = postgres.location()
    monkeypatch.setenv("FACTLEDGER_PG_LEAVES", "4")
    with Ledger(location, clock=clock, create=True) as ledger:
        ledger.observe(cand())
        assert ledger._conn.leaves == 4
    monkeypatch.setenv("FACTLEDGER_PG_LEAVES", "16")
    with Ledger(location, clock=clock) as ledger:
        assert ledger._conn.leaves == 4
        assert set(partitions.partitioned_tables(ledger._conn).values()) == {4}
        assert ledger.verify()["ok"]


def _notices(conn) -> list[str]:
    """The server's notices on this connection from now on (VACUUM (VERBOSE)'s reports among them)."""
    seen: list[str] = []
    conn.raw.add_notice_handler(lambda d: seen.append(d.message_primary or ""))
    return seen


def _vacuum_reports(seen: list[str]) -> dict[str, str]:
    """leaf or table -> the text of its VACUUM (VERBOSE) report, from the notices seen."""
    return {m.group(1): text for text in seen
            if (m := re.search(r'finished vacuuming "[^"]*\.([^".]+)"', text))}


def test_a_forget_vacuums_only_the_leaves_holding_the_partition(postgres, clock):
    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        _fill(ledger)
        conn = ledger._conn
        gone = _remainder(conn, "u3")
        seen = _notices(conn)
        before = _vacuum_counts(conn.raw, conn.schema)
        receipt = ledger.forget("app", "u3", reason="erasure request", vacuum=False)     # the plain pass
        assert receipt["purge"]["vacuumed"] and receipt["purge"]["leaves"] > 0
        vacuumed = set(_vacuum_reports(seen))
        split = partitions.partitioned_tables(conn)
        leaves = {f"{t}_p{r}" for t in split for r in range(split[t])}
        assert vacuumed & leaves == {f"{t}_p{gone}" for t in split}
        plain = {t for t in ("events", *ledger._work.projector.all_tables) if t not in split}
        assert plain <= vacuumed                       # the unpartitioned tables as before
        # the server's own statistics agree: no other leaf was vacuumed
        conn.raw.execute("SELECT pg_stat_force_next_flush()")
        deadline = time.monotonic() + 5
        while True:
            after = _vacuum_counts(conn.raw, conn.schema)
            grown = {t for t in leaves if after.get(t, 0) > before.get(t, 0)}
            if grown == {f"{t}_p{gone}" for t in split} or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert grown == {f"{t}_p{gone}" for t in split}
        assert ledger.verify()["ok"] and ledger.replay_differences() == []
        assert "Town3" not in str(ledger.facts("app", "u3"))
        # The default, VACUUM FULL, rewrites the same leaves (new files) and no other.
        gone = _remainder(conn, "u5")
        files = "SELECT relname, pg_relation_filenode(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace" \
                " WHERE n.nspname = %s AND c.relkind = 'r'"
        before = dict(conn.raw.execute(files, (conn.schema,)).fetchall())
        receipt = ledger.forget("app", "u5", reason="erasure request")
        assert receipt["purge"]["full"] and receipt["purge"]["leaves"] > 0
        after = dict(conn.raw.execute(files, (conn.schema,)).fetchall())
        assert {t for t in leaves if after[t] != before[t]} == {f"{t}_p{gone}" for t in split}
        assert ledger.verify()["ok"] and ledger.replay_differences() == []


def test_a_forget_cleans_the_log_leafs_indexes_and_skips_the_projections(postgres, clock):
    """The log's leaf is vacuumed with its indexes, so no dead line pointer is left on its pages
    (each would keep its page from being all-visible, and every later forget's VACUUM would read
    it, and its neighbours, again); a projection's leaf skips its indexes (ledger/store/postgres/vacuum.py)."""
    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        _fill(ledger)
        conn = ledger._conn
        gone = _remainder(conn, "u3")
        seen = _notices(conn)
        conn.raw.execute("SET min_parallel_index_scan_size = 0")   # a parallel index pass allowed
        ledger.forget("app", "u3", reason="erasure request", vacuum=False)   # the plain pass
        reports = _vacuum_reports(seen)
        log = reports[f"events_p{gone}"]
        assert "index scans: 1" in log and re.search(r"had [1-9]\d* dead item identifiers removed", log)
        assert "parallel" not in " ".join(seen)            # PARALLEL 0: no worker started for two small indexes
        current_leaf = reports[f"facts_current_p{gone}"]
        assert "index scans: 0" in current_leaf and "bypassed" in current_leaf
        seen.clear()
        conn.raw.execute(f"VACUUM (VERBOSE, INDEX_CLEANUP OFF) events_p{gone}")
        assert re.search(r"have 0 dead item identifiers", _vacuum_reports(seen)[f"events_p{gone}"])
        assert ledger.verify()["ok"] and ledger.replay_differences() == []


def test_a_full_replay_vacuums_the_tables_it_rewrote(postgres, clock):
    """A replay rewrites every projection row, leaving as many dead versions: it vacuums the
    projections once it has committed (each leaf and plain table once), and leaves the log alone."""
    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        _fill(ledger)
        conn = ledger._conn
        conn.raw.execute("SELECT pg_stat_force_next_flush()")
        before = _vacuum_counts(conn.raw, conn.schema)
        ledger.replay()
        split = partitions.partitioned_tables(conn)
        rebuilt = {f"{t}_p{r}" if t in split else t
                   for t in ledger._work.projector.all_tables for r in range(split.get(t, 1))}
        log = {name for name in before if name == "events" or name.startswith("events_p")}
        deadline = time.monotonic() + 5
        while True:
            conn.raw.execute("SELECT pg_stat_force_next_flush()")
            after = _vacuum_counts(conn.raw, conn.schema)
            grown = {t for t in after if after[t] > before.get(t, 0)}
            if grown >= rebuilt or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert grown == rebuilt and not grown & log
        assert all(after[t] == before.get(t, 0) + 1 for t in rebuilt)
        assert ledger.replay_differences() == []


def test_a_full_replay_builds_its_deferred_indexes_on_every_leaf(postgres, clock):
    """A full replay drops the secondary indexes and builds them again from their stored text; a
    partitioned table's text says `ON ONLY` the parent, which made an invalid index of the parent
    alone (every leaf then read by a sequential scan): each one is on every leaf, valid."""
    from factledger.projections.runner import DEFERRED_INDEXES

    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        _fill(ledger)
        ledger.replay()
        conn = ledger._conn
        rows = conn.raw.execute(
            "SELECT c.relname, t.relname, x.indisvalid, (SELECT COUNT(*) FROM pg_inherits h WHERE h.inhparent = c.oid)"
            " FROM pg_class c JOIN pg_index x ON x.indexrelid = c.oid JOIN pg_class t ON t.oid = x.indrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = ANY(%s)",
            (conn.schema, list(DEFERRED_INDEXES))).fetchall()
        split = partitions.partitioned_tables(conn)
        assert {name for name, *_rest in rows} == set(DEFERRED_INDEXES)
        assert {"facts_current", "fact_history"} <= {table for _name, table, *_rest in rows}
        for name, table, valid, leaves in rows:
            assert valid and leaves == split.get(table, 0), name
        assert ledger.verify()["ok"]


def test_an_index_made_on_the_parent_only_is_altered_and_repair_rebuilds_it(postgres, clock):
    location = postgres.location()
    with Ledger(location, clock=clock, create=True) as ledger:
        _fill(ledger, users=3)
        ledger._conn.raw.execute("DROP INDEX facts_current_key")
        ledger._conn.raw.execute('CREATE INDEX facts_current_key ON ONLY facts_current (app, "user", subject, predicate)')
        result = ledger.verify()
        assert not result["ok"] and "facts_current_key" in result["problem"]
    with Ledger(location, clock=clock, repair=True) as ledger:
        assert any("index facts_current_key was altered; rebuilt" in line for line in ledger.schema_report)
        assert ledger._conn.raw.execute(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = 'facts_current_key'::regclass").fetchone()[0]
        assert ledger.verify()["ok"]


def _leaves_read(conn, sql: str, args) -> set[str]:
    """The relations an EXPLAIN of the statement (with these values) names."""
    text = "\n".join(row[0] for row in conn.execute("EXPLAIN " + sql, args).fetchall())
    return set(re.findall(r" on (\w+)", text))


def test_the_write_paths_statements_read_one_leaf(postgres, clock):
    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        _fill(ledger)
        conn = ledger._conn
        r = _remainder(conn, "u5")
        key = ("app", "u5", "u5", "diet")
        fact_id = conn.execute("SELECT fact_id FROM facts_current WHERE app = ? AND user = ?",
                               ("app", "u5")).fetchone()[0]
        # the key snapshot of a batched observe: one leaf of each table it joins
        statements = [
            (current.KEY_SNAPSHOTS, key, {f"facts_current_p{r}", f"fact_history_p{r}"}),
            (_CLOSE, ("t", 1, "why", fact_id, "app", "u5"), {f"fact_history_p{r}"}),
            (_DELETE_CURRENT, (fact_id, "app", "u5"), {f"facts_current_p{r}"}),
            ("DELETE FROM recall_index WHERE seq = ? AND app = ? AND user = ?", (1, "app", "u5"), {f"recall_index_p{r}"}),
            ("SELECT 1 FROM fact_history WHERE fact_id = ? AND recorded_to IS NULL AND app = ? AND user = ?",
             (fact_id, "app", "u5"), {f"fact_history_p{r}"}),
            ("SELECT seq FROM key_negations WHERE app = ? AND user = ? AND subject = ? AND predicate = ?",
             key, {f"key_negations_p{r}"}),
        ]
        for sql, args, wanted in statements:
            read = {t for t in _leaves_read(conn, sql, args) if re.fullmatch(r"\w+_p\d+", t)}
            assert read == wanted, (sql, read)
            conn.execute("BEGIN")
            conn.execute(sql, args)            # and the statement runs as written
            conn.execute("ROLLBACK")


class _Recorder:
    """Stands in for the connection: keeps each statement a read runs, and runs it."""

    def __init__(self, conn):
        self.conn, self.seen = conn, []

    def execute(self, sql, args=()):
        self.seen.append((sql, tuple(args)))
        return self.conn.execute(sql, args)


def test_a_scopes_reads_read_only_its_partitions_leaves(postgres, clock):
    """Recall's reads of a scope (a user and `_domain`): `user IN (...)` read every leaf; one
    SELECT per partition reads only the leaves holding them.  And no statement is JIT-compiled."""
    from factledger.ledger.audit import served
    from factledger.ledger.store import reads
    from factledger.ledger.store.scopes import summed_counts
    from factledger.projections import history, recall, vectors

    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        _fill(ledger)
        conn = ledger._conn
        assert conn.raw.execute("SHOW jit").fetchone()[0] == "off"
        users = ["u5", "_domain"]
        wanted = {_remainder(conn, user) for user in users}
        assert len(wanted) == 2            # two leaves: a read of one leaf only would not be the scope
        rec = _Recorder(conn)
        recall.scope_rows(rec, "app", users)
        history.values_above(rec, "app", users, ["public"])
        vectors.partition_vectors(rec, "app", users, "model")
        reads.redacting_seqs(rec, "app", tuple(users))
        assert "summed_counts" in served.check_recall.__code__.co_names
        rec.execute(*summed_counts(("facts_current", "recall_index"), "app", users))
        assert len(rec.seen) == 5
        for sql, args in rec.seen:
            read = {t for t in _leaves_read(conn, sql, args) if re.fullmatch(r"\w+_p\d+", t)}
            if sql.startswith("SELECT f.fact_id"):      # a fact's recall row: one key probe a leaf
                read = {t for t in read if not t.startswith("recall_index_p")}   # (projections/recall.py)
            assert read and {int(t.rsplit("_p", 1)[1]) for t in read} <= wanted, (sql, read)


def test_a_ledger_made_before_partitioning_opens_and_works(postgres, clock, monkeypatch):
    """An unpartitioned ledger (what versions before partitioning made: no leaf count recorded,
    plain tables) keeps its plain tables: it opens, writes, forgets and verifies as before."""
    location = postgres.location()
    monkeypatch.setenv("FACTLEDGER_PG_LEAVES", "0")
    with Ledger(location, clock=clock, create=True) as ledger:
        _fill(ledger, users=4)
        ledger._conn.execute("DELETE FROM ledger_meta WHERE key = ?", (partitions.META_KEY,))
    monkeypatch.setenv("FACTLEDGER_PG_LEAVES", "8")      # asked for now: the ledger is not remade
    with Ledger(location, clock=clock) as ledger:
        conn = ledger._conn
        assert conn.leaves == 0 and partitions.partitioned_tables(conn) == {}
        assert conn.raw.execute("SELECT to_regclass('event_chain')").fetchone()[0] is None
        ledger.observe(cand(user="u9", predicate="diet", value="vegan"))
        receipt = ledger.forget("app", "u1", reason="erasure request")
        assert receipt["purge"]["vacuumed"] and "leaves" not in receipt["purge"]
        assert ledger.verify()["ok"] and ledger.replay_differences() == []
        assert ledger._work.schema_problems() == []


def test_verify_notices_the_chain_table_altered_or_missing(postgres, clock):
    location = postgres.location()
    with Ledger(location, clock=clock, create=True) as ledger:
        _fill(ledger, users=3)
        assert ledger.verify()["ok"]
        ledger._conn.raw.execute("DROP INDEX event_chain_event_id")
        result = ledger.verify()
        assert not result["ok"] and "index event_chain_event_id is missing" in result["problem"]
    with Ledger(location, clock=clock) as ledger:          # a write open builds it again
        assert ledger.verify()["ok"]
        ledger._conn.raw.execute("DROP TRIGGER events_chain ON events")
        result = ledger.verify()
        assert not result["ok"] and "events_chain" in result["problem"]
        ledger._conn.raw.execute("DROP TABLE event_chain")
        assert any("event_chain" in line for line in ledger._work.schema_problems())


def test_the_partitioned_log_still_refuses_deletes_and_rewrites(postgres, clock):
    from factledger.ledger.errors import LedgerError

    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        _fill(ledger, users=2)
        conn = ledger._conn
        for sql in ("DELETE FROM events WHERE seq = 1", "TRUNCATE events",
                    "UPDATE events SET type = 'X' WHERE seq = 1",
                    "UPDATE events SET user = 'other' WHERE seq = 1"):
            with pytest.raises(LedgerError):
                conn.execute(sql)
        # a second event with a seq, an id or a link already in the chain is refused
        row = conn.execute("SELECT seq, event_id, type, app, user, recorded_at, body, salt, commitment,"
                           " prev_hash, hash FROM events WHERE seq = 2").fetchone()
        for change in ({3: "other"}, {}):
            values = [*row]
            values[4] = "someone-else"
            for i, v in change.items():
                values[i] = v
            with pytest.raises(LedgerError):
                conn.execute("INSERT INTO events (seq, event_id, type, app, user, recorded_at, body, salt,"
                             " commitment, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?,?,?)", values)
        assert ledger.verify()["ok"]


def test_new_ledgers_are_plain_unless_asked_and_a_bad_count_is_refused(postgres, clock, monkeypatch):
    monkeypatch.delenv("FACTLEDGER_PG_LEAVES")
    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        assert ledger._conn.leaves == 0 and partitions.partitioned_tables(ledger._conn) == {}
    monkeypatch.setenv("FACTLEDGER_PG_LEAVES", "eight")
    with pytest.raises(LedgerError, match="FACTLEDGER_PG_LEAVES='eight': give a whole number"):
        Ledger(postgres.location(), clock=clock, create=True)


def test_the_recall_checks_lookups_probe_the_users_leaf_by_key_whatever_its_statistics(postgres, clock, monkeypatch):
    """Recall on a partitioned ledger, for a user added after the leaves were last analysed (the
    planner's statistics know nothing of them): the served-fact check reads `fact_events`,
    `events` and `recall_index` from the user's leaf by name, with no (app, user) condition the
    planner could answer by the leaf's partition index, and recall's facts by id are probed one
    id at a time by each leaf's key index, never a scan of every leaf (docs/scale.md,
    "Partitioning")."""
    from factledger.ledger.audit import served
    from factledger.ledger.store.postgres import backend

    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        _fill(ledger, users=40)
        conn = ledger._conn
        conn.raw.execute("ANALYZE")                       # statistics from before the user
        ledger.observe_many([cand(user="late", predicate="allergy", value=f"pollen {i}", session=f"s{i}",
                                  event=f"late{i}") for i in range(400)])
        r = _remainder(conn, "late")
        result = ledger.recall("app", "late", "pollen", limit=12, clearance="personal,health", record=False)
        assert len(result.selected) == 12
        sent: list[tuple[str, tuple]] = []
        run = backend.PgConnection._run

        def recorded(self, text, args, then=None):
            sent.append((text, args))
            return run(self, text, args, then)

        monkeypatch.setattr(backend.PgConnection, "_run", recorded)
        served.check_recall(conn, "app", ["late"], result.selected)
        ids = [f["fact_id"] for f in result.selected]
        conn.execute("SELECT fact_id, value FROM facts_current WHERE fact_id IN (?, ?, ?)", ids[:3]).fetchall()
        monkeypatch.setattr(backend.PgConnection, "_run", run)
        by_key = [(text, args) for text, args in sent
                  if re.search(r"FROM (fact_events|events|recall_index)(_p\d+)? WHERE (fact_id|seq) ", text)
                  or "LATERAL" in text]
        tables = {re.search(r"FROM (\w+)", text).group(1) for text, _args in by_key if "LATERAL" not in text}
        assert tables == {f"fact_events_p{r}", f"events_p{r}", f"recall_index_p{r}"}, tables
        assert sum("LATERAL" in text for text, _args in by_key) == 1
        for text, args in by_key:
            plan = "\n".join(row[0] for row in conn.raw.execute("EXPLAIN " + text, args).fetchall())
            # the leaf's (app, user) indexes cannot serve a statement that does not name (app, user)
            assert "app_user" not in plan and "_partition" not in plan, (text, plan)
            assert set(re.findall(r" on (\w+_p\d+)", plan)) <= tables | {f"facts_current_p{n}" for n in range(8)}
            if "LATERAL" in text:   # facts by id: each id an index probe (the others' leaves: a page each)
                assert f"Seq Scan on facts_current_p{r} " not in plan, plan
                assert re.search(rf"Index Scan on facts_current_p{r}_pkey|using facts_current_p{r}_pkey", plan), plan


def test_the_write_paths_kept_check_folds_read_the_users_leaf_by_name(postgres, clock, monkeypatch):
    """A single observe checks its key's stored facts against the log through the ledger's kept
    folds (`ledger/audit/checkfolds.py`): on a partitioned ledger their lookups (`fact_events` by
    fact id, `events` by seq) read the user's leaf by name, not all eight leaves; the decision is
    the same and the chain verifies."""
    from factledger.ledger.store.postgres import backend

    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        _fill(ledger, users=12)
        r = _remainder(ledger._conn, "u3")
        sent: list[str] = []
        run = backend.PgConnection._run

        def recorded(self, text, args, then=None):
            sent.append(text)
            return run(self, text, args, then)

        monkeypatch.setattr(backend.PgConnection, "_run", recorded)
        first = ledger.observe(cand(user="u3", predicate="diet", value="vegetarian", event="e-later"))
        again = ledger.observe(cand(user="u3", predicate="home_city", value="Town3", session="s2", event="e-again"))
        monkeypatch.setattr(backend.PgConnection, "_run", run)
        assert first.decision == "supersede" and again.decision == "reinforce", (first, again)
        # the folds' two lookups (the guards' and the tail's reads of a hash by seq are others)
        lookups = [re.match(r"SELECT (fact_id, seq|seq, event_id, .*, hash) FROM (\w+) WHERE ", text) for text in sent]
        tables = {m.group(2) for m in lookups if m}
        assert tables and tables <= {f"fact_events_p{r}", f"events_p{r}"}, tables
        assert ledger.verify()["ok"]
