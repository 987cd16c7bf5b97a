"""Export the log as JSONL, import it into an empty ledger: same projections, verify passes.

Includes redacted events (travelling as envelopes), a pseudonymised user and the data-subject
export of one user.
"""

from __future__ import annotations

import io

import orjson
import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger, LedgerError
from tests.conftest import MovableClock, cand


def tables(ledger):
    out = {}
    for table in ledger.projector.tables:
        out[table] = sorted(ledger._conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
    return out


@pytest.fixture
def source(tmp_path):
    clock = MovableClock()
    ledger = Ledger(tmp_path / "source.db", clock=clock, create=True)
    ledger.observe(cand(predicate="home_city", value="Pune", session="s1", said_at="2026-08-01"))
    clock.tick()
    ledger.observe(cand(predicate="home_city", value="Bengaluru", session="s2", said_at="2026-09-01"))
    ledger.observe(cand(user="u2", value="vegan", session="s3"))
    ledger.observe(cand(user="u3", value="vegan", session="s4"))
    clock.tick()
    ledger.forget("app", "u1", session="s2", reason="r")
    ledger.forget("app", "u3", reason="r")
    yield ledger
    ledger.close()


def test_export_import_reproduces_projections_and_verifies(source, tmp_path):
    buffer = io.StringIO()
    count = source.export_log(buffer)
    lines = buffer.getvalue().splitlines()
    header = orjson.loads(lines[0])
    assert header["complete"] and header["head"] == "{}:{}".format(*source.head())
    assert count == len(lines) - 1
    redacted = [orjson.loads(x) for x in lines[1:] if orjson.loads(x)["body"] is None]
    assert redacted and all(r["salt"] is None and r["commitment"] for r in redacted)
    path = tmp_path / "log.jsonl"
    path.write_text(buffer.getvalue())
    with Ledger(tmp_path / "copy.db", create=True) as copy:
        result = copy.import_log(path)
        assert result["imported"] == count and copy.verify()["ok"]
        assert copy.head() == source.head()
        assert tables(copy) == tables(source)
        assert copy.erased.is_forgotten_session("app", "u1", "s2")


def test_import_refuses_a_non_empty_ledger_and_tampered_lines(source, tmp_path):
    buffer = io.StringIO()
    source.export_log(buffer)
    with pytest.raises(LedgerError, match="empty"):
        source.import_log(io.StringIO(buffer.getvalue()))
    lines = buffer.getvalue().splitlines()
    body = next(i for i, x in enumerate(lines) if i and orjson.loads(x)["body"])
    row = orjson.loads(lines[body])
    row["body"] = row["body"].replace("Pune", "Puna")
    lines[body] = orjson.dumps(row).decode()
    with Ledger(tmp_path / "copy.db", create=True) as copy:
        with pytest.raises(LedgerError, match="does not verify"):
            copy.import_log(io.StringIO("\n".join(lines)))
        assert copy._conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0


def test_partition_export_is_not_importable(source, tmp_path):
    buffer = io.StringIO()
    source.export_log(buffer, "app", "u2")
    assert len(buffer.getvalue().splitlines()) == 2
    with Ledger(tmp_path / "copy.db", create=True) as copy:
        with pytest.raises(LedgerError, match="one partition"):
            copy.import_log(io.StringIO(buffer.getvalue()))


def test_data_subject_export(source):
    report = source.export_subject("app", "u1")
    assert report["format"] == "factledger-subject/1"
    assert report["sessions"] == source.sessions("app", "u1")      # always there, never swallowed
    assert [f["value"] for f in report["facts"]] == ["Pune"]
    assert {h["value"] for h in report["history"]} == {"Pune"}
    assert any(e["body"] is None for e in report["events"])           # scrubbed: envelope only
    assert "Bengaluru" not in orjson.dumps(report).decode()


def test_cli_export_import_and_data_subject(source, tmp_path):
    db = str(source.path)
    out = tmp_path / "log.jsonl"
    runner = CliRunner()
    result = runner.invoke(cli, ["--db", db, "export", "--all", "--out", str(out)])
    assert result.exit_code == 0, result.output
    copy = str(tmp_path / "copy.db")
    imported = runner.invoke(cli, ["--db", copy, "import", str(out), "--json"])
    assert imported.exit_code == 0, imported.output
    assert orjson.loads(imported.stdout)["head"] == "{}:{}".format(*source.head())
    assert runner.invoke(cli, ["--db", copy, "replay", "--check"]).exit_code == 0
    again = runner.invoke(cli, ["--db", copy, "import", str(out)])
    assert again.exit_code == 1 and "empty" in again.stderr
    subject = runner.invoke(cli, ["--db", db, "export", "--app", "app", "--user", "u1",
                                  "--data-subject"])
    assert subject.exit_code == 0 and orjson.loads(subject.stdout)["user"] == "u1"
    bad = runner.invoke(cli, ["--db", db, "export", "--data-subject"])
    assert bad.exit_code == 1 and "Error:" in bad.stderr
    stdout = runner.invoke(cli, ["--db", db, "export", "--all"])
    assert stdout.exit_code == 0 and stdout.stdout.startswith('{"format":"factledger-log/1"')


def test_import_of_a_garbage_file(tmp_path):
    path = tmp_path / "junk.jsonl"
    path.write_text("not json\n")
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "c.db"), "import", str(path)])
    assert result.exit_code == 1 and "Error:" in result.stderr
    assert not (tmp_path / "c.db").exists()                   # no empty ledger left behind


def _reseal(lines, change):
    """Change the body of the first event and re-seal it (commitment, hash, header head)."""
    from factledger.ledger.store.chain import canonical, commitment, link

    row = orjson.loads(lines[1])
    body = orjson.loads(row["body"])
    change(body)
    row["body"] = canonical(body).decode()
    row["commitment"] = commitment(bytes.fromhex(row["salt"]), row["body"].encode())
    row["hash"] = link(row["prev_hash"], row["seq"], row["event_id"], row["type"], row["recorded_at"],
                       row["commitment"])
    header = orjson.loads(lines[0])
    header["head"] = f"{row['seq']}:{row['hash']}"
    return orjson.dumps(header).decode() + "\n" + orjson.dumps(row).decode() + "\n"


@pytest.mark.parametrize("change", [lambda b: b.pop("subject"), lambda b: b.update(type="Nope"),
                                    lambda b: b.update(confidence="high")])
def test_import_of_a_sealed_but_invalid_body_is_an_error(tmp_path, change):
    with Ledger(tmp_path / "a.db", clock=MovableClock(), create=True) as ledger:
        ledger.observe(cand(predicate="home_city", value="Pune"))
        buffer = io.StringIO()
        ledger.export_log(buffer)
    path = tmp_path / "x.jsonl"
    path.write_text(_reseal(buffer.getvalue().splitlines(), change))
    with Ledger(tmp_path / "lib.db", create=True) as copy:
        with pytest.raises(LedgerError, match="line 2"):
            copy.import_log(path)
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "b.db"), "import", str(path)])
    assert result.exit_code == 1 and "Error: line 2" in result.stderr, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not (tmp_path / "b.db").exists()


def test_import_of_a_non_utf8_file_is_an_error(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"format": "factledger-log/1", "complete": true, "head": "0:"}\n\xff\xfe\n')
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "b.db"), "import", str(path)])
    assert result.exit_code == 1 and "not UTF-8" in result.stderr, result.output
    assert not (tmp_path / "b.db").exists()


def test_cli_export_checks_arguments_before_touching_the_file(source, tmp_path):
    db, out = str(source.path), tmp_path / "keep.jsonl"
    out.write_text("an earlier export\n")
    runner = CliRunner()
    for args in (["--data-subject"], ["--app", "app"]):
        bad = runner.invoke(cli, ["--db", db, "export", "-o", str(out), *args])
        assert bad.exit_code == 1 and "Error:" in bad.stderr, bad.output
        assert out.read_text() == "an earlier export\n"
    missing = runner.invoke(cli, ["--db", db, "export", "--all", "-o", str(tmp_path / "no" / "x.jsonl")])
    assert missing.exit_code == 1 and "Error: cannot write" in missing.stderr, missing.output
    good = runner.invoke(cli, ["--db", db, "export", "--all", "-o", str(out)])
    assert good.exit_code == 0 and out.read_text().startswith('{"format":"factledger-log/1"')
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".factledger")) == []


def test_an_access_export_withholds_what_the_user_said_about_others_unless_asked(tmp_path):
    """Bob's export: his own facts and words; his partner's allergy (another person's health data)
    counted by subject and predicate, its value, quote and event body withheld; included only when
    the controller asks (docs/forgetting.md, "What an access export contains")."""
    with Ledger(tmp_path / "l.db", clock=MovableClock(), create=True) as ledger:
        partner = ledger.observe(cand(user="bob", subject="user.partner", predicate="allergy", value="peanuts",
                                      quote="my partner is allergic to peanuts")).fact_id
        ledger.observe(cand(user="bob", predicate="diet", value="vegan", quote="I'm vegan"))
        withheld = ledger.export_subject("app", "bob")
        text = orjson.dumps(withheld).decode()
        assert "peanuts" not in text and "allergic" not in text and partner not in text
        assert [f["value"] for f in withheld["facts"]] == ["vegan"] and withheld["third_parties"] == "withheld"
        assert withheld["withheld_about_others"] == [{"subject": "user.partner", "predicate": "allergy",
                                                      "history_rows": 1}]
        assert [e["withheld"] for e in withheld["events"] if e.get("withheld")] == \
            ["about another person (user.partner)"]
        included = ledger.export_subject("app", "bob", third_parties=True)
        assert [f["value"] for f in included["about_others"]["facts"]] == ["peanuts"]
        assert all(e["body"] is not None for e in included["events"])
    runner = CliRunner()
    db = str(tmp_path / "l.db")
    shown = runner.invoke(cli, ["--db", db, "export", "--app", "app", "--user", "bob", "--data-subject",
                                "--include-third-parties"])
    assert shown.exit_code == 0 and "peanuts" in shown.stdout
    misused = runner.invoke(cli, ["--db", db, "export", "--all", "--include-third-parties"])
    assert misused.exit_code == 1 and "for a --data-subject export" in misused.stderr


def test_a_value_about_another_person_is_masked_in_the_users_own_quotes(tmp_path):
    quote = "I'm vegan, and my partner is allergic to peanuts"
    with Ledger(tmp_path / "l.db", clock=MovableClock(), create=True) as ledger:
        ledger.observe(cand(predicate="diet", value="vegan", quote=quote, event="e1"))
        ledger.observe(cand(subject="user.partner", predicate="allergy", value="peanuts", quote=quote, event="e1"))
        withheld = ledger.export_subject("app", "u1")
        included = ledger.export_subject("app", "u1", third_parties=True)
    text = orjson.dumps(withheld).decode()
    assert "peanuts" not in text and "[withheld]" in text
    assert [f["value"] for f in withheld["facts"]] == ["vegan"]
    assert "peanuts" in orjson.dumps(included).decode()
