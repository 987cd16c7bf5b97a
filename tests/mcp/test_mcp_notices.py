"""Notices and "did you mean" suggestions never name a partition outside the caller's scope
(issue 47, class 3).  A token whose own partition is empty once got "no user 'kim' ... (did you
mean 'kim@example.com'?)" naming another user of its app, and "no app ... (did you mean
'mealkit2'?)" naming another tenant's app.  The CLI reads the whole file and still suggests."""

from __future__ import annotations

from factledger.ledger import Ledger, make_candidate
from factledger.mcp_server.scope import Scope
from factledger.mcp_server.tools import MemoryTools


def seeded(tmp_path) -> MemoryTools:
    tools = MemoryTools(lambda read_only: Ledger(tmp_path / "ledger.db", create=not read_only, read_only=read_only))
    tools.writer.observe_many([make_candidate(
        app=app, user=user, predicate="home_city", value="Lisbon", quote="I live in Lisbon", session="s",
        evidence_event=f"e-{app}-{user}", said_at="2025-12-01T00:00:00Z")
        for app, user in (("mealkit", "kim@example.com"), ("mealkit", "_domain"), ("mealkit2", "kim"))])
    return tools


def test_a_token_whose_partition_is_empty_hears_of_no_one_else(tmp_path):
    tools = seeded(tmp_path)
    try:
        for scope in (Scope.build("mealkit", ["kim"]), Scope.build("mealkit", ["kim", "lee"]),
                      Scope.build("mealkit1", ["*"]), Scope.build("mealkit1", ["kim"])):
            for tool in ("facts", "history"):
                answer = getattr(tools, tool)(scope, user="kim")
                assert answer["facts"] == [] and answer["notice"], answer
                for name in ("kim@example.com", "mealkit2", "_domain", "did you mean"):
                    assert name not in answer["notice"], (scope, answer["notice"])
        # within the scope, a near spelling is still offered
        answer = tools.facts(Scope.build("mealkit", ["*"]), user="kim@example.co")
        assert "kim@example.com" in answer["notice"] and "_domain" not in answer["notice"]
    finally:
        tools.close()


def test_the_cli_reader_of_the_whole_file_still_hears_the_near_spellings(tmp_path):
    tools = seeded(tmp_path)
    tools.close()
    with Ledger(tmp_path / "ledger.db") as ledger:
        assert "kim@example.com" in ledger.notices.partition_notice("mealkit", "kim@example.co")
        assert "mealkit2" in ledger.notices.partition_notice("mealkit1", "kim")
