"""Isolation: no query ever returns another partition's data.

Hypothesis generates multi-tenant operation sequences (observations, reinforcements, retractions,
session / fact / whole-user erasures) over two apps, each with two users and a `_domain`
partition.  Every value carries its partition's token, so a leak shows as a foreign token.  After
each sequence, for every partition: `facts` (now, --as-of, --valid-at), `history`, `why` of each
of its facts, `log` filtered by the partition (and by the app alone), `recall` (with --explain),
and the data-subject `export` contain only that partition's tokens, except that `recall` also
serves the same app's `_domain` facts, never another app's.  The output states how many
sequences were checked.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factledger.cli.main import cli
from factledger.ledger import Ledger, LedgerError, make_candidate
from tests.conftest import MovableClock

APPS = ("appx", "appy")
USERS = ("ua", "ub", "_domain")
PARTITIONS = [(a, u) for a in APPS for u in USERS]
PREDICATES = ("pet", "favorite_cuisine", "home_city", "allergy", "employer")
CHECKED = {"sequences": 0, "operations": 0, "queries": 0, "erasures": 0}


def token(app: str, user: str) -> str:
    return f"tok{app}{user.strip('_')}"


ALL_TOKENS = {p: token(*p) for p in PARTITIONS}


def value_for(partition, n: int) -> str:
    # values are lower-case so registry normalisers ("lower", "title") keep the token findable
    return f"{token(*partition)} item{n}"


operation = st.one_of(
    st.tuples(st.just("observe"), st.sampled_from(PARTITIONS), st.sampled_from(PREDICATES),
              st.integers(0, 4), st.integers(0, 5), st.booleans()),
    st.tuples(st.just("forget_session"), st.sampled_from(PARTITIONS), st.integers(0, 5)),
    st.tuples(st.just("forget_fact"), st.sampled_from(PARTITIONS), st.integers(0, 20)),
    st.tuples(st.just("forget_user"), st.sampled_from(PARTITIONS)),
)


def run(ledger: Ledger, clock: MovableClock, ops) -> None:
    for op in ops:
        clock.tick(3600)
        kind, partition = op[0], op[1]
        app, user = partition
        try:
            if kind == "observe":
                _, _, predicate, n, session, negated = op
                value = value_for(partition, n)
                ledger.observe(make_candidate(
                    app=app, user=user, predicate=predicate, value=value,
                    quote=f"I no longer say {value}" if negated and n % 2 == 0 else f"I said {value}",
                    session=f"{token(*partition)}-s{session}", evidence_event="e1",
                    said_at=clock.now.isoformat(), negated=negated and n % 2 == 0))
            else:
                receipt = None
                if kind == "forget_session":
                    receipt = ledger.forget(app, user, session=f"{token(*partition)}-s{op[2]}",
                                            reason="test")
                elif kind == "forget_fact":
                    facts = ledger.facts(app, user, include_sensitive=True)
                    if facts:
                        receipt = ledger.forget(app, user, fact=facts[op[2] % len(facts)]["fact_id"],
                                                reason="test")
                elif kind == "forget_user":
                    receipt = ledger.forget(app, user, reason="test")
                CHECKED["erasures"] += bool(receipt and not receipt["noop"])
        except LedgerError as exc:            # forgetting what was never there
            assert "no session" in str(exc) or "no fact" in str(exc), exc


def foreign(text: str, allowed: set[str]) -> set[str]:
    return {t for p, t in ALL_TOKENS.items() if t not in allowed and t in text}


def check_partition(ledger: Ledger, partition, as_of: str) -> None:
    app, user = partition
    own = {token(*partition)}
    queries = 0

    def dumped(value) -> str:
        return orjson.dumps(value, default=str).decode()

    reads = {
        "facts": ledger.facts(app, user, include_sensitive=True),
        "facts --as-of": ledger.facts(app, user, include_sensitive=True, as_of=as_of),
        "facts --valid-at": ledger.facts(app, user, include_sensitive=True, valid_at=as_of),
        "history": ledger.history(app, user),
    }
    for name, rows in reads.items():
        queries += 1
        for row in rows:
            assert (row["app"], row["user"]) == partition, (name, row)
        assert not foreign(dumped(rows), own), (name, partition)
    for row in reads["history"]:
        why = ledger.why(row["fact_id"])
        queries += 1
        assert (why["fact"]["app"], why["fact"]["user"]) == partition
        for event in why["events"]:
            body = event["body"]
            assert body is None or (body["app"], body["user"]) == partition, (partition, event)
        assert not foreign(dumped(why), own), ("why", partition)
    log = ledger.log(app=app, user=user)
    queries += 1
    assert all((e["app"], e["user"]) == partition for e in log)
    assert not foreign(dumped(log), own), ("log", partition)
    app_log = ledger.log(app=app)
    queries += 1
    assert all(e["app"] == app for e in app_log)
    assert not foreign(dumped(app_log), {token(app, u) for u in USERS}), ("log --app", partition)
    recall_allowed = own | ({token(app, "_domain")} if user != "_domain" else set())
    for query in ("", " ".join(ALL_TOKENS.values()), "item1 item2"):
        result = ledger.recall(app, user, query, explain=True, preload=True, clearance="all",
                               min_confidence=0)
        queries += 1
        for fact in result.selected + result.candidates:
            assert fact["app"] == app and fact["user"] in ({user, "_domain"} if user != "_domain"
                                                           else {"_domain"}), (partition, fact)
        text = result.text + dumped(result.selected) + dumped(result.candidates)
        assert not foreign(text, recall_allowed), ("recall", partition, query)
    export = ledger.export_subject(app, user)
    queries += 1
    assert not foreign(dumped(export), own), ("export", partition)
    assert all(e["body"] is None or (e["body"]["app"], e["body"]["user"]) == partition
               for e in export["events"])
    CHECKED["queries"] += queries


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(ops=st.lists(operation, min_size=4, max_size=24))
def test_no_query_returns_another_partitions_data(ops):
    with tempfile.TemporaryDirectory() as folder:
        clock = MovableClock("2026-09-01T00:00:00Z")
        with Ledger(Path(folder) / "iso.db", clock=clock, synchronous="OFF", create=True) as ledger:
            middle = max(1, len(ops) // 2)
            run(ledger, clock, ops[:middle])
            as_of = clock.now.isoformat()
            run(ledger, clock, ops[middle:])
            for partition in PARTITIONS:
                check_partition(ledger, partition, as_of)
            assert ledger.verify()["ok"]
    CHECKED["sequences"] += 1
    CHECKED["operations"] += len(ops)


@pytest.fixture(scope="module")
def tenants(tmp_path_factory):
    """A fixed multi-tenant ledger for the command-line checks."""
    db = tmp_path_factory.mktemp("tenants") / "t.db"
    clock = MovableClock("2026-09-01T00:00:00Z")
    with Ledger(db, clock=clock, create=True) as ledger:
        ops = [("observe", p, pred, n, n % 3, False) for n in range(3) for p in PARTITIONS
               for pred in ("pet", "home_city")]
        run(ledger, clock, ops)
    return db


@pytest.mark.parametrize("partition", PARTITIONS)
def test_cli_reads_stay_in_their_partition(tenants, partition, monkeypatch):
    monkeypatch.setenv("FACTLEDGER_NOW", "2026-11-01T00:00:00Z")
    app, user = partition
    own = {token(*partition)}
    part = ["--app", app, "--user", user]
    runner = CliRunner()

    def out(*args):
        result = runner.invoke(cli, ["--db", str(tenants), *args])
        assert result.exit_code == 0, (args, result.output)
        return result.stdout

    facts = json.loads(out("facts", *part, "--include-sensitive", "--json"))
    assert facts and all((f["app"], f["user"]) == partition for f in facts)
    for args in (["facts", *part, "--json"], ["history", *part, "--json"],
                 ["log", *part, "--json"], ["export", *part, "--data-subject"],
                 ["sessions", *part, "--json"], ["why", facts[0]["fact_id"], "--json"]):
        assert not foreign(out(*args), own), args
    allowed = own | ({token(app, "_domain")} if user != "_domain" else set())
    for args in (["recall", "item0 item1 item2", *part, "--preload", "--clearance", "all"],
                 ["recall", " ".join(ALL_TOKENS.values()), *part, "--explain", "--json",
                  "--clearance", "all"]):
        text = out(*args)
        if "--json" in args:                      # the query itself is echoed back: leave it out
            report = json.loads(text)
            report.pop("query")
            text = json.dumps(report)
        assert not foreign(text, allowed), args
        if user != "_domain" and "--explain" not in args:
            assert token(app, "_domain") in text       # the domain rule serves the app's _domain
    CHECKED["queries"] += 9


@pytest.fixture(scope="module", autouse=True)
def report_isolation_counts(request):
    """After the module's last test, whatever order they ran in: say how much was checked, and
    fail when a property that ran checked nothing (a property that generates no case proves nothing)."""
    yield
    capman = request.config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled():
        print(f"\nisolation sequences checked: {CHECKED['sequences']} "
              f"({CHECKED['operations']} operations, {CHECKED['erasures']} erasures, "
              f"{CHECKED['queries']} queries, "
              f"{len(PARTITIONS)} partitions in 2 apps)")
    ran = {item.name for item in request.session.items if item.module.__name__ == __name__}
    if any(name.startswith("test_no_query_returns") for name in ran):
        assert CHECKED["sequences"] > 0 and CHECKED["queries"] > 0
