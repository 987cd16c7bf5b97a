"""What is served is what the log says: a projection row edited in place (value, status, interval,
provenance, sensitivity, a row added, a row deleted) is never served by any read, and `verify`
exits 1 naming the table.  Real SQLite files; the CLI through CliRunner; the ADK service too."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger
from factledger.ledger.errors import ProjectionMismatch
from tests.conftest import MovableClock, cand

APP, USER = "app", "u1"
FORGED = "FORGED"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """A ledger with a history (home_city moved twice), a plain fact, a health fact."""
    path = tmp_path_factory.mktemp("verified") / "pristine.db"
    clock = MovableClock("2026-09-01T00:00:00Z")
    with Ledger(path, clock=clock, create=True) as ledger:
        for i, city in enumerate(("Pune", "Bengaluru", "Mysuru")):
            clock.tick(60)
            ledger.observe(cand(predicate="home_city", value=city, session=f"c{i}", event=f"c{i}",
                                said_at=f"2026-08-{i + 1:02d}T10:00:00Z"))
        clock.tick(60)
        ledger.observe(cand(predicate="diet", value="pescatarian", session="d", event="d",
                            said_at="2026-08-10T10:00:00Z"))
        clock.tick(60)
        ledger.observe(cand(predicate="diet", value="pescatarian", session="d2", event="d2",
                            said_at="2026-08-11T10:00:00Z"))
        clock.tick(60)
        ledger.observe(cand(predicate="medication_dose", value="metoprolol tartrate 50 mg", session="m",
                            event="m", said_at="2026-08-12T10:00:00Z", basis="verified", author="document"))
    return path


@pytest.fixture
def db(pristine, tmp_path) -> Path:
    path = tmp_path / "ledger.db"
    shutil.copyfile(pristine, path)
    return path


def edit(path: Path, *statements: str) -> None:
    """A forger's edit of the projection tables (they have no guard; the log's triggers stay)."""
    conn = sqlite3.connect(path)
    for sql in statements:
        conn.execute(sql)
    conn.commit()
    conn.close()


def fact_id(path: Path, predicate: str, value: str | None = None) -> str:
    conn = sqlite3.connect(path)
    sql, args = "SELECT fact_id FROM fact_history WHERE predicate = ?", [predicate]
    if value:
        sql, args = sql + " AND value = ?", [*args, value]
    found = conn.execute(sql + " ORDER BY recorded_from DESC LIMIT 1", args).fetchone()[0]
    conn.close()
    return found


def invoke(path: Path, *args: str):
    return CliRunner().invoke(cli, ["--db", str(path), *args])


# Each edit changes what some read would serve.  (name, statements, the table verify names,
# the reads that must refuse).  The forged text, where there is one, is FORGED.
_DIET = "predicate = 'diet'"
_CITY_OLD = "predicate = 'home_city' AND value = 'Pune'"
_CITY_NOW = "predicate = 'home_city' AND value = 'Mysuru'"
TAMPERS = [
    ("current value", [f"UPDATE facts_current SET value = '{FORGED}' WHERE {_DIET}"],
     "facts_current", {"facts", "recall", "why"}),
    ("metoprolol", ["UPDATE facts_current SET value = 'metoprolol tartrate 500 mg'"
                    " WHERE value = 'metoprolol tartrate 50 mg'"], "facts_current", {"facts", "recall", "why"}),
    ("current status", [f"UPDATE facts_current SET status = 'disputed' WHERE {_DIET}"],
     "facts_current", {"facts", "recall", "why"}),
    ("current quote", [f"UPDATE facts_current SET quote = '{FORGED} words' WHERE {_DIET}"],
     "facts_current", {"facts", "recall", "why"}),
    ("current session", [f"UPDATE facts_current SET session = '{FORGED}' WHERE {_DIET}"],
     "facts_current", {"facts", "recall", "why"}),
    ("current said_at", [f"UPDATE facts_current SET said_at = '2020-01-01T00:00:00.000000Z' WHERE {_DIET}"],
     "facts_current", {"facts", "recall", "why"}),
    ("current sensitivity lowered", ["UPDATE facts_current SET sensitivity = 'normal'"
                                     " WHERE predicate = 'medication_dose'"], "facts_current", {"facts", "recall"}),
    ("current sensitivity raised", [f"UPDATE facts_current SET sensitivity = 'health' WHERE {_DIET}"],
     "facts_current", {"facts"}),
    ("current row deleted", [f"DELETE FROM facts_current WHERE {_DIET}"], "facts_current", {"facts", "recall"}),
    ("current row added", [f"INSERT INTO facts_current SELECT 'forged-id', app, user, subject, predicate,"
                           f" '{FORGED}', value_key, status, basis, base_confidence, reinforcements, confidence,"
                           " sensitivity, kind, cardinality, said_at, recorded_at, effective_date, confirmed_at,"
                           " confirmed_by, session, evidence_event, quote, author, disputes, sessions,"
                           f" observed_seq + 1000, valid_to FROM facts_current WHERE {_DIET}"],
     "facts_current", {"facts", "recall"}),
    ("closed fact reopened", [f"INSERT INTO facts_current SELECT fact_id, app, user, subject, predicate, value,"
                              " value_key, 'current', basis, base_confidence, reinforcements, confidence,"
                              " sensitivity, kind, cardinality, said_at, recorded_at, effective_date,"
                              " confirmed_at, confirmed_by, session, evidence_event, quote, author, disputes,"
                              " sessions, observed_seq, valid_to FROM fact_history WHERE recorded_to IS NULL"
                              f" AND {_CITY_OLD}"],
     "facts_current", {"facts", "recall"}),
    ("history value", [f"UPDATE fact_history SET value = '{FORGED}' WHERE {_CITY_OLD}"],
     "fact_history", {"history", "why_old"}),
    ("history interval", [f"UPDATE fact_history SET valid_to = '2030-01-01T00:00:00.000000Z' WHERE {_CITY_OLD}"
                          " AND recorded_to IS NULL"], "fact_history", {"history", "why_old"}),
    ("history state", [f"UPDATE fact_history SET state = 'current' WHERE {_CITY_OLD} AND recorded_to IS NULL"],
     "fact_history", {"history", "why_old"}),
    ("history provenance", [f"UPDATE fact_history SET quote = '{FORGED} words' WHERE {_CITY_NOW}"],
     "fact_history", {"history", "why"}),
    ("history row deleted", [f"DELETE FROM fact_history WHERE {_CITY_OLD} AND recorded_to IS NOT NULL"],
     "fact_history", {"history"}),
    ("history row added", [f"INSERT INTO fact_history SELECT fact_id, app, user, subject, predicate, '{FORGED}',"
                           " value_key, state, basis, base_confidence, reinforcements, confidence, sensitivity,"
                           " kind, cardinality, said_at, recorded_at, effective_date, confirmed_at, confirmed_by,"
                           " session, evidence_event, quote, author, disputes, sessions, observed_seq, valid_to,"
                           " from_seq + 1000, valid_from, '2000-01-01T00:00:00.000000Z', recorded_from, ended_by,"
                           f" reason FROM fact_history WHERE {_CITY_NOW}"], "fact_history", {"history"}),
    ("provenance row deleted", [f"DELETE FROM fact_events WHERE type = 'FactSuperseded' AND fact_id ="
                                f" (SELECT fact_id FROM fact_history WHERE {_CITY_OLD} LIMIT 1)"],
     "fact_events", {"why_old"}),
    ("provenance row added", [f"INSERT INTO fact_events SELECT (SELECT fact_id FROM facts_current WHERE {_DIET}),"
                              " seq, app, user, type, role FROM fact_events WHERE type = 'FactObserved'"
                              " AND fact_id = (SELECT fact_id FROM facts_current WHERE predicate = 'home_city')"],
     "fact_events", {"why"}),
    ("recall terms", [f"UPDATE recall_index SET terms = 'forged' WHERE fact_id ="
                      f" (SELECT fact_id FROM facts_current WHERE {_DIET})"], "recall_index", {"recall"}),
    ("recall row deleted", [f"DELETE FROM recall_index WHERE fact_id = (SELECT fact_id FROM facts_current"
                            f" WHERE {_DIET})"], "recall_index", {"recall"}),
    ("recall row added", [f"INSERT INTO recall_index SELECT observed_seq, fact_id, app, user, subject, predicate,"
                          f" '{FORGED.lower()}' FROM fact_history WHERE {_CITY_OLD} AND recorded_to IS NULL"],
     "recall_index", {"recall"}),
]


def library_reads(path: Path) -> dict:
    """Each library read, run: what it served (as text), or the ProjectionMismatch it raised."""
    out = {}
    with Ledger(path, clock=MovableClock("2026-09-02T00:00:00Z")) as ledger:
        reads = {
            "facts": lambda: ledger.facts(APP, USER, include_sensitive=True),
            "facts_normal": lambda: ledger.facts(APP, USER),
            "history": lambda: ledger.history(APP, USER),
            "why": lambda: [ledger.why(f["fact_id"]) for f in _ids(path, current=True)],
            "why_old": lambda: [ledger.why(f["fact_id"]) for f in _ids(path, current=False)],
            "recall": lambda: [ledger.recall(APP, USER, "", clearance=c, explain=True).as_dict()
                               for c in ("normal", "personal,health")],
            "recall_search": lambda: ledger.recall(APP, USER, "diet city", clearance="personal,health").as_dict(),
        }
        for name, read in reads.items():
            try:
                out[name] = json.dumps(read(), default=str)
            except ProjectionMismatch as exc:
                out[name] = exc
    return out


def _ids(path: Path, current: bool) -> list[dict]:
    """The fact ids of the log (FactObserved bodies), open now or closed: why is asked of each."""
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT json_extract(body, '$.fact_id'), json_extract(body, '$.value') FROM events"
                        " WHERE type = 'FactObserved'").fetchall()
    conn.close()
    closed = {"Pune", "Bengaluru"}
    return [{"fact_id": f} for f, value in rows if (value in closed) != current]


def test_the_untouched_ledger_serves_and_verifies(db):
    result = invoke(db, "verify", "--json")
    assert result.exit_code == 0, result.output
    checked = json.loads(result.stdout)
    assert checked["checked"] == ["chain", "commitments", "triggers", "indexes", "projections"]
    assert {"facts_current", "fact_history", "fact_events", "recall_index", "review_queue", "sessions",
            "erasures", "fact_vectors", "merkle_hashes"} <= set(checked["projections"])
    log_only = json.loads(invoke(db, "verify", "--json", "--log-only").stdout)
    assert log_only["ok"] and log_only["checked"] == ["chain", "commitments", "triggers", "indexes"]
    assert "projections" not in log_only
    for name, answer in library_reads(db).items():
        assert not isinstance(answer, Exception), (name, answer)


@pytest.mark.parametrize("name,statements,table,refusing", TAMPERS, ids=[t[0] for t in TAMPERS])
def test_a_forged_projection_row_is_never_served(db, name, statements, table, refusing):
    edit(db, *statements)
    result = invoke(db, "verify")
    assert result.exit_code == 1, result.output
    assert result.output.startswith("Error: the ledger is damaged:") or "Error: the ledger is damaged:" in result.output
    assert f"{table} (" in result.output
    log_only = invoke(db, "verify", "--log-only")
    assert log_only.exit_code == 0, log_only.output           # the chain itself is intact

    answers = library_reads(db)
    for read in refusing:
        assert isinstance(answers[read], ProjectionMismatch), (read, answers[read])
        assert str(answers[read]).startswith("the ledger is damaged: ")
    for read, what in answers.items():
        if not isinstance(what, Exception):
            assert FORGED not in what and FORGED.lower() not in what and "500 mg" not in what, read


@pytest.mark.parametrize("name,statements,table,refusing",
                         [t for t in TAMPERS if t[2] == "facts_current"], ids=lambda t: t if isinstance(t, str) else "")
def test_the_command_line_refuses_a_forged_current_row(db, name, statements, table, refusing):
    edit(db, *statements)
    commands = {"facts": ["facts", "--app", APP, "--user", USER, "--include-sensitive"],
                "recall": ["recall", "--preload", "--app", APP, "--user", USER, "--clearance", "personal,health"]}
    for read, args in commands.items():
        result = invoke(db, *args)
        assert FORGED not in result.output and "500 mg" not in result.output
        if read in refusing:
            assert result.exit_code == 1, (read, result.output)
            assert "Error: the ledger is damaged: " in result.output


def test_the_metoprolol_edit(db):
    """The issue's example: recall, facts and why refuse and say why; verify names the table and the fact."""
    edit(db, "UPDATE facts_current SET value = 'metoprolol tartrate 500 mg' WHERE value = 'metoprolol tartrate 50 mg'")
    fact = fact_id(db, "medication_dose")
    result = invoke(db, "verify")
    assert result.exit_code == 1 and "facts_current" in result.output and fact in result.output
    for args in (["recall", "--preload", "--app", APP, "--user", USER, "--clearance", "health"],
                 ["facts", "--app", APP, "--user", USER, "--include-sensitive"], ["why", fact]):
        result = invoke(db, *args)
        assert result.exit_code == 1, (args, result.output)
        assert "500 mg" not in result.output
        assert f"Error: the ledger is damaged: facts_current's row of fact {fact}: its value differs" in result.output


def test_the_adk_service_refuses_a_forged_row(db):
    pytest.importorskip("google.adk")
    from factledger.adk import LedgerMemoryService

    edit(db, f"UPDATE facts_current SET value = '{FORGED}' WHERE {_DIET}")
    with Ledger(db, clock=MovableClock("2026-09-02T00:00:00Z")) as ledger:
        service = LedgerMemoryService(ledger)
        with pytest.raises(ProjectionMismatch, match="the ledger is damaged: facts_current"):
            asyncio.run(service.search_memory(app_name=APP, user_id=USER, query="diet"))


def test_a_body_that_no_longer_matches_its_commitment_is_not_served(db):
    """An event under a served fact rewritten (the triggers dropped): the read refuses it even
    before verify is run."""
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER events_refuse_update")
    conn.execute("UPDATE events SET body = replace(body, 'pescatarian', 'FORGED') WHERE type = 'FactObserved'"
                 " AND body LIKE '%pescatarian%'")
    conn.execute("UPDATE facts_current SET value = 'FORGED' WHERE predicate = 'diet'")
    conn.commit()
    conn.close()
    with Ledger(db, clock=MovableClock("2026-09-02T00:00:00Z")) as ledger:
        with pytest.raises(ProjectionMismatch, match="does not match its commitment"):
            ledger.facts(APP, USER)


def test_a_fold_kept_for_a_head_still_finds_an_edited_row_and_a_deleted_index_row(db):
    """Reads keep what the log says of a fact for as long as the head stays (one statement per
    read instead of a fold); what they compare is the row read now."""
    with Ledger(db, clock=MovableClock("2026-09-02T00:00:00Z")) as ledger:
        old = _ids(db, current=False)[0]["fact_id"]
        ledger.facts(APP, USER, include_sensitive=True)  # this ledger's folds, kept for this head
        ledger.why(old)
        assert ledger._served_kept.folds
        edit(db, f"UPDATE facts_current SET value = '{FORGED}' WHERE {_DIET}",
             "DELETE FROM fact_events WHERE type = 'FactSuperseded' AND role = 'subject'")
        with pytest.raises(ProjectionMismatch, match="its value differs"):
            ledger.facts(APP, USER)
        with pytest.raises(ProjectionMismatch, match="fact_events"):
            ledger.why(old)


def test_a_wrong_pin_says_the_log_does_not_extend_it(db):
    head = invoke(db, "head").stdout.strip()
    seq, digest = head.split(":")
    wrong = f"{int(seq) - 1}:{'ab' * 32}"
    result = invoke(db, "verify", "--expect-head", wrong)
    assert result.exit_code == 1
    assert (f"Error: the log does not extend the pinned head (pinned {wrong}, log at {head})"
            in result.output), result.output
    assert "chain broken" not in result.output


def test_a_checkpoint_against_an_empty_ledger_says_it_is_empty(db, tmp_path):
    note = tmp_path / "checkpoint.txt"
    made = invoke(db, "checkpoint")
    assert made.exit_code == 0, made.output
    note.write_text(made.stdout)
    empty = tmp_path / "empty.db"
    assert invoke(empty, "init").exit_code == 0
    result = invoke(empty, "verify", "--checkpoint", str(note))
    assert result.exit_code == 1
    assert "the ledger is empty" in result.output and "None" not in result.output


def test_the_web_view_refuses_a_forged_row(tmp_path, clock):
    pytest.importorskip("datasette", reason="the web view is the optional `ui` extra")
    from tests.web.helpers import Client, fill, web

    path = tmp_path / "web.db"
    fill(path, clock)
    edit(path, f"UPDATE facts_current SET value = '{FORGED}' WHERE app = 'mealkit' AND user = 'priya'"
               " AND predicate = 'home_city'")
    client = Client(web(path, clock))
    client.sign_in("rao")
    try:
        page = client.get("/-/factledger/user?app=mealkit&user=priya")
        assert FORGED not in page.text
        assert page.status_code >= 400 and "the ledger is damaged" in page.text
    finally:
        client.close()


def test_verify_checks_the_vectors_rows_and_with_vectors_their_bytes(meaning, tmp_path):
    db = tmp_path / "meaning.db"
    with Ledger(db, clock=MovableClock("2026-09-01T00:00:00Z"), create=True) as ledger:
        ledger.observe(cand(predicate="diet", value="pescatarian", said_at="2026-08-10T10:00:00Z"))
        ledger.observe(cand(predicate="home_city", value="Pune", session="s2", event="e2",
                            said_at="2026-08-11T10:00:00Z"))
    conn = sqlite3.connect(db)
    has = conn.execute("SELECT COUNT(*) FROM fact_vectors").fetchone()[0]
    conn.close()
    assert has == 2
    assert invoke(db, "verify", "--vectors").exit_code == 0
    edit(db, "UPDATE fact_vectors SET vector = zeroblob(length(vector))"
             " WHERE seq = (SELECT MIN(seq) FROM fact_vectors)")
    assert invoke(db, "verify").exit_code == 0                 # the bytes are taken as stored
    result = invoke(db, "verify", "--vectors")
    assert result.exit_code == 1 and "fact_vectors (seq " in result.output and "vector not what" in result.output
    edit(db, "UPDATE fact_vectors SET fact_id = 'elsewhere' WHERE seq = (SELECT MAX(seq) FROM fact_vectors)")
    result = invoke(db, "verify")
    assert result.exit_code == 1 and "fact_vectors (seq " in result.output
    assert invoke(db, "verify", "--vectors", "--log-only").exit_code == 2


def test_each_ledger_keeps_its_own_verified_folds(db, tmp_path):
    """The folds a read keeps belong to its ledger: two ledgers in one process (here two copies of
    one file, the same first hash and head) share none, and dropping one's leaves the other's."""
    other = tmp_path / "other.db"
    shutil.copyfile(db, other)
    with Ledger(db) as first, Ledger(other) as second:
        first.facts(APP, USER, include_sensitive=True)
        second.facts(APP, USER, include_sensitive=True)
        assert first._served_kept is not second._served_kept
        assert first._served_kept.folds and second._served_kept.folds
        first._served_kept.clear()
        assert not first._served_kept.folds and second._served_kept.folds
        assert first.facts(APP, USER) == second.facts(APP, USER)
