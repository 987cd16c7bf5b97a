"""`import` holds a body to the registry's words (issue 47 item 6).

A re-chained export whose observation said `"sensitivity": "secret"` (no level) imported with
exit 0 and every later `history` of that partition failed with a traceback; so did a held
candidate whose predicate was a number, for `review`.  An observation's sensitivity and
cardinality must be the registry's words and its kind one the importing ledger's registry knows
(on append, a kind's shape: a registry may define kinds of its own), and a stored candidate's
fields must have a candidate's types, on import as on append; the untouched export still imports.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from factledger.cli.main import cli
from factledger.ledger import Ledger, LedgerError
from factledger.ledger.domain.events import CandidateHeld, parse_body
from tests.audit.test_adversarial_timestamps import rechained, source_export


def held(field, value):
    return "CandidateHeld", lambda b: b["candidate"].update({field: value})


CHANGES = {
    "sensitivity no level": ("FactObserved", lambda b: b.update(sensitivity="secret")),
    "sensitivity in capitals": ("FactObserved", lambda b: b.update(sensitivity="HEALTH")),
    "sensitivity a number": ("FactObserved", lambda b: b.update(sensitivity=2)),
    "cardinality no word": ("FactObserved", lambda b: b.update(cardinality="two")),
    "kind not the registry's": ("FactObserved", lambda b: b.update(kind="opinion")),
    "kind empty": ("FactObserved", lambda b: b.update(kind="")),
    "kind not a word": ("FactObserved", lambda b: b.update(kind="Fact; DROP")),
    "held predicate a number": held("predicate", 7),
    "held value a list": held("value", ["x"]),
    "held author no author": held("author", "bogus"),
    "held basis no basis": held("basis", "sure"),
    "held negated a string": held("negated", "yes"),
    "held confidence a string": held("confidence", "high"),
    "held quote null": held("quote", None),
}


@pytest.mark.parametrize("case", sorted(CHANGES))
def test_import_refuses_a_body_outside_the_registrys_words(tmp_path, case):
    type_, change = CHANGES[case]
    path = tmp_path / "x.jsonl"
    path.write_text(rechained(source_export(tmp_path), type_, change))
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "b.db"), "import", str(path)])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("Error: line ") and "not a valid event body" in result.stderr, result.stderr
    assert not (tmp_path / "b.db").exists()
    with Ledger(tmp_path / "lib.db", create=True) as copy:
        with pytest.raises(LedgerError, match="not a valid event body"):
            copy.import_log(path)
        assert copy.head()[0] == 0


def test_the_untouched_export_imports_and_reads(tmp_path):
    path = tmp_path / "ok.jsonl"
    path.write_text(rechained(source_export(tmp_path), "FactObserved", lambda b: None))
    db = str(tmp_path / "ok.db")
    assert CliRunner().invoke(cli, ["--db", db, "import", str(path)]).exit_code == 0
    for command in (["history", "--app", "app", "--user", "u1"], ["review"]):
        done = CliRunner().invoke(cli, ["--db", db, *command])
        assert done.exit_code == 0, done.output


def test_the_models_refuse_the_same_words_on_append():
    good = {"type": "FactObserved", "app": "a", "user": "u", "fact_id": "f", "rule": "new_key",
            "subject": "user", "predicate": "diet", "value": "vegan", "session": "s", "evidence_event": "e",
            "quote": "I am vegan", "author": "user", "basis": "stated", "confidence": 0.9,
            "sensitivity": "normal", "kind": "preference", "cardinality": "one",
            "said_at": "2026-08-01T00:00:00.000000Z"}
    parse_body(good)
    for field, value in (("sensitivity", "secret"), ("kind", "Opinion!"), ("cardinality", "two")):
        with pytest.raises(ValidationError):
            parse_body({**good, field: value})
    with pytest.raises(ValidationError):
        CandidateHeld(app="a", user="u", hold_id="h", reason="r", candidate={"predicate": 7})
