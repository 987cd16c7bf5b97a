"""Serves through the drivers: an MCP HTTP `recall` with the token `alice` (and its facts,
history and why), and an ADK `search_memory`, each appear in `served` with the right caller and
fact ids, and `served show` says identical."""

from __future__ import annotations

import json

import anyio
import pytest

from tests.mcp.helpers import cli, http_server, http_session, new_ledger, said


@pytest.mark.skipif(__import__("importlib").util.find_spec("mcp") is None, reason="the mcp extra")
def test_mcp_reads_are_recorded_with_the_token_name(tmp_path):
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    done = cli(db, "mcp", "--new-token", "--tokens", str(tokens), "--app", "mealkit", "--user", "u1",
               "--clearance", "health", "--name", "alice")
    token = done.stdout.strip()

    async def story(url):
        async with http_session(url, token) as session:
            kept = (await session.call_tool("remember", said("Lisbon"))).structured_content["fact_id"]
            recalled = await session.call_tool("recall", {"query": "where do I live"})
            await session.call_tool("facts", {})
            await session.call_tool("history", {})
            await session.call_tool("why", {"fact_id": kept})
            return kept, recalled

    with http_server(db, tokens) as url:
        kept, recalled = anyio.run(story, url)
    assert not recalled.is_error
    rows = json.loads(cli(db, "served", "--app", "mealkit", "--user", "u1", "--json").stdout)
    assert [(r["caller"], r["surface"], r["tool"], r["fact_ids"]) for r in rows] == [
        ("alice", "mcp", tool, [kept]) for tool in ("recall", "facts", "history", "why")]
    shown = cli(db, "served", "show", str(rows[0]["seq"]))
    assert shown.stdout.rstrip().endswith(": identical")
    assert rows[0]["text_sha256"] == __import__("hashlib").sha256(
        recalled.content[0].text.encode()).hexdigest()


def test_adk_search_memory_is_recorded_with_app_and_agent(tmp_path):
    pytest.importorskip("google.adk")
    from factledger.adk import LedgerMemoryService

    db = tmp_path / "ledger.db"
    from factledger.ledger import Ledger
    from tests.conftest import cand

    with Ledger(db, create=True) as ledger:
        fact = ledger.observe(cand(app="mealkit", user="u1", value="vegan", quote="I am vegan")).fact_id

    service = LedgerMemoryService(str(db), agent="concierge")

    async def search():
        return await service.search_memory(app_name="mealkit", user_id="u1", query="what do I eat")

    found = anyio.run(search)
    assert found.memories
    anyio.run(service.close)
    with Ledger(db, read_only=True) as ledger:
        rows = ledger.served("mealkit", "u1")
        assert [(r["caller"], r["surface"], r["fact_ids"]) for r in rows] == [("mealkit/concierge", "adk", [fact])]
        assert ledger.serves.served_show(rows[0]["seq"])["identical"] is True
