"""Class 4 of issue 32: catalog statistics keep what was forgotten (PostgreSQL).

ANALYZE (autovacuum runs it by itself) samples columns into `pg_statistic`; VACUUM, even FULL, of
the ledger's tables never touches it.  The ledger keeps every text column out of statistics
(`ledger/store/postgres/statistics.py`): after an ANALYZE and `forget --vacuum`, `pg_stats` of the
ledger's schema and the database's data files hold none of the forgotten values; an older ledger
whose text was sampled loses the samples when opened; a column an operator let back into
statistics is analysed again by the forget and named by `residue`, as are extended statistics.
"""

from __future__ import annotations

import json
import subprocess

from factledger.ledger import Ledger
from tests.conftest import cand
from tests.forget.test_pg_forget import _data_files_holding
from tests.store.test_concurrency_writers import ENV, FACTLEDGER

# The forgotten value, said often enough to be a common value, and the forgotten user, with more
# events than anyone else.  The data-file scans read the whole database, which other tests' ledgers
# share: only the test that forgets its ledger's user uses VALUE; the others say OTHER.
VALUE, OTHER = "Qorvexhampton", "Brindlewick"
USER = "usr_Wqmztbl"


def _fill(ledger, value: str = OTHER) -> None:
    for i in range(30):
        ledger.observe(cand(user=f"keep{i}", predicate="diet", value="vegan", session=f"k{i}"))
    for i in range(30):
        ledger.observe(cand(user=USER, predicate="allergy", value=f"{value} pollen {i}", session=f"g{i}",
                            event=f"e{i}", quote=f"I react to {value} pollen {i}"))
        ledger.observe(cand(user=USER, predicate="home_city", value=value, session=f"g{i}",
                            event=f"h{i}", quote=f"we live in {value}"))


def _stats_holding(ledger, *needles: str) -> list[str]:
    """`select * from pg_stats where schemaname = <ledger>`, each row as text, that hold a needle."""
    raw = ledger._conn.raw
    rows = raw.execute("SELECT tablename, attname, s::text FROM pg_stats s WHERE schemaname = %s",
                       (ledger._conn.schema,)).fetchall()
    return sorted(f"{t}.{c}" for t, c, text in rows if any(n in text for n in needles))


def _forget(location: str, *extra: str) -> dict:
    result = subprocess.run([FACTLEDGER, "--db", location, "forget", "--app", "app", "--user", USER,
                             "--reason", "erasure request", "--yes", "--json", *extra],
                            capture_output=True, text=True, env=ENV)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _residue(location: str) -> dict:
    result = subprocess.run([FACTLEDGER, "--db", location, "residue", "--json"], capture_output=True,
                            text=True, env=ENV)
    assert result.returncode == 0, result.stderr
    return {p["place"]: p for p in json.loads(result.stdout)["places"]}


def test_after_analyze_and_forget_vacuum_pg_stats_holds_no_forgotten_value(postgres, clock):
    location = postgres.location()
    with Ledger(location, clock=clock, create=True) as ledger:
        _fill(ledger, VALUE)
        ledger._conn.raw.execute("ANALYZE")           # as autovacuum would, before the forget
        assert _stats_holding(ledger, VALUE, USER) == []
        numbers = {c for (c,) in ledger._conn.raw.execute(
            "SELECT attname FROM pg_stats WHERE schemaname = %s AND tablename = 'events'",
            (ledger._conn.schema,))}
        assert "seq" in numbers                      # numbers keep their statistics (the planner's)
    receipt = _forget(location, "--vacuum")
    assert receipt["purge"]["full"] is True
    with Ledger(location, clock=clock, create=True) as ledger:
        ledger._conn.raw.execute("ANALYZE")
        assert _stats_holding(ledger, VALUE, USER) == []
        assert _data_files_holding(ledger, VALUE) == []
        assert ledger.verify()["ok"]
    assert "catalog statistics (pg_statistic)" not in _residue(location)


def _sample_text_again(ledger, columns) -> None:
    """What an older version left (or an operator does): text columns back in statistics, sampled."""
    raw = ledger._conn.raw
    for table, column in columns:
        raw.execute(f'ALTER TABLE {table} ALTER COLUMN "{column}" SET STATISTICS -1')
    raw.execute("ANALYZE")


SAMPLED = [("events", "user"), ("events", "body"), ("facts_current", "value"), ("fact_history", "quote")]


def test_an_older_ledger_loses_its_sampled_text_when_opened(postgres, clock):
    location = postgres.location()
    with Ledger(location, clock=clock, create=True) as ledger:
        _fill(ledger)
        _sample_text_again(ledger, SAMPLED)
        assert {"events.user", "events.body", "facts_current.value"} <= set(_stats_holding(ledger, OTHER, USER))
        assert "catalog statistics (pg_statistic)" in _places(ledger)
    with Ledger(location, clock=clock, create=True) as ledger:     # an open by the owner drops the samples
        assert _stats_holding(ledger, OTHER, USER) == []
        targets = dict(((t, c), n) for t, c, _type, _coll, n, _s in _text_columns(ledger))
        assert all(targets[col] == 0 for col in SAMPLED)
        assert ledger.facts("app", USER, include_sensitive=True)          # the data itself is intact
        assert ledger.verify()["ok"] and ledger.replay_differences() == []


def _text_columns(ledger):
    from factledger.ledger.store.postgres.statistics import text_columns

    return text_columns(ledger._conn)


def test_a_forget_analyses_again_a_table_whose_text_is_sampled(postgres, clock):
    """An operator let text back into statistics while the ledger is open: the forget's clean-up
    samples the touched tables again, so the forgotten values leave pg_stats."""
    with Ledger(postgres.location(), clock=clock, create=True) as ledger:
        _fill(ledger, VALUE)
        _sample_text_again(ledger, SAMPLED)
        assert _stats_holding(ledger, VALUE, USER)
        receipt = ledger.forget("app", USER, reason="erasure request", vacuum=True)
        assert {"events", "facts_current", "fact_history"} <= set(receipt["purge"]["analyzed"])
        assert _stats_holding(ledger, VALUE, USER) == []
        assert _data_files_holding(ledger, VALUE) == []


def _places(ledger) -> dict:
    return {p["place"]: p for p in ledger.residue()["places"]}


def test_residue_names_sampled_text_and_extended_statistics(postgres, clock):
    """What the ledger cannot keep out (a column sampled since it was opened, a CREATE STATISTICS
    object of someone else's), `residue` names.  `residue` is a read: it opens read-only and
    changes nothing, so it names the sampled column too; the next write open drops the samples."""
    location = postgres.location()
    with Ledger(location, clock=clock, create=True) as ledger:
        _fill(ledger)
        ledger._conn.raw.execute("CREATE STATISTICS values_by_key (mcv) ON subject, value FROM facts_current")
        _sample_text_again(ledger, [("facts_current", "value")])
        places = _places(ledger)
        assert "facts_current.value" in places["catalog statistics (pg_statistic)"]["where"]
        assert "values_by_key" in places["extended statistics"]["where"]
    places = _residue(location)
    assert "facts_current.value" in places["catalog statistics (pg_statistic)"]["where"]
    assert "values_by_key" in places["extended statistics"]["where"]
    Ledger(location, clock=clock).close()            # a write open excludes the text again
    places = _residue(location)
    assert "catalog statistics (pg_statistic)" not in places
    assert "values_by_key" in places["extended statistics"]["where"]


def test_a_role_that_does_not_own_the_tables_opens_and_is_told_what_is_sampled(postgres, clock):
    """Only the tables' owner may exclude a column: another role's open changes nothing, fails in
    nothing, and its `residue` names the sampled text."""
    location = postgres.location()
    with Ledger(location, clock=clock, create=True) as ledger:
        _fill(ledger)
        _sample_text_again(ledger, [("facts_current", "value")])
        schema, raw = ledger._conn.schema, ledger._conn.raw
        raw.execute(f"CREATE ROLE reader_{schema} LOGIN")
        raw.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO reader_{schema}')
        raw.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO reader_{schema}')
    with Ledger(location.replace("postgres@", f"reader_{schema}@", 1), clock=clock) as reader:
        assert "facts_current.value" in _places(reader)["catalog statistics (pg_statistic)"]["where"]
        assert reader.facts("app", USER, include_sensitive=True)
