"""The MCP tools show what the CLI and the web view show a reader of that clearance: a quote that
states a value above it is masked, readers open read-only, an unknown predicate is an error
(in-process, through `MemoryTools`; the SDK transports are tested beside this)."""

from __future__ import annotations

import orjson
import pytest

from factledger.ledger import Ledger, LedgerError
from factledger.mcp_server.scope import Scope
from factledger.mcp_server.tools import MemoryTools
from tests.conftest import cand

QUOTE = "I'm vegan, and I am allergic to peanuts"


@pytest.fixture
def tools(tmp_path):
    db = tmp_path / "l.db"
    opened = MemoryTools(lambda read_only: Ledger(db, create=not read_only, read_only=read_only))
    opened.writer.observe(cand(predicate="diet", value="vegan", quote=QUOTE, event="e1"))
    opened.writer.observe(cand(predicate="allergy", value="peanuts", quote=QUOTE, event="e1"))
    yield opened
    opened.close()


def test_facts_history_and_why_mask_a_health_value_for_a_personal_caller(tools):
    scope = Scope.build("app", ["u1"], "personal")
    facts, history = tools.facts(scope), tools.history(scope)
    assert [f["value"] for f in facts["facts"]] == ["vegan"] and facts["withheld"] == 1
    diet = facts["facts"][0]
    why = tools.why(scope, diet["fact_id"])
    for answer in (facts, history, why):
        text = orjson.dumps(answer).decode()
        assert "peanuts" not in text and "[withheld]" in text
    health = tools.facts(Scope.build("app", ["u1"], "health"))
    assert "peanuts" in orjson.dumps(health).decode()


def test_readers_open_read_only_and_the_writer_does_not(tools):
    assert tools._reader()._work.read_only is True
    assert tools.writer._work.read_only is False


def test_an_unknown_predicate_is_an_error_as_on_the_command_line(tools):
    scope = Scope.build("app", ["u1"], "health")
    with pytest.raises(LedgerError, match="favourite_colour"):
        tools.facts(scope, predicate="favourite_colour")
    with pytest.raises(LedgerError, match="favourite_colour"):
        tools.history(scope, predicate="favourite_colour")
