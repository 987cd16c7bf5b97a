"""`factledger mcp` on a PostgreSQL ledger (tests/pg_server.py): the writer and the per-thread
readers are connections of their own; remember, recall, and a committed forget that verify passes."""

from __future__ import annotations

import json

import anyio
import pytest

pytest.importorskip("mcp")

from tests.mcp.helpers import cli, said, stdio_session  # noqa: E402


def test_remember_recall_and_forget_on_postgres(postgres):
    location = postgres.location("mcp_server")
    cli(location, "init")

    async def story():
        async with stdio_session(location, "--app", "mealkit", "--user", "priya", "--allow-forget") as session:
            decided = await session.call_tool("remember", said("Lisbon"))
            served = await session.call_tool("recall", {"query": "where do I live?"})
            plan = await session.call_tool("forget", {"all": True, "reason": "user asked"})
            done = await session.call_tool("forget", {"all": True, "reason": "user asked",
                                                      "confirm": plan.structured_content["confirm"]})
            after = await session.call_tool("recall", {"query": "where do I live?"})
            return decided, served, done, after

    decided, served, done, after = anyio.run(story)
    assert decided.structured_content["decision"] == "insert"
    assert [f["value"] for f in served.structured_content["facts"]] == ["Lisbon"]
    assert done.structured_content["committed"] and after.structured_content["facts"] == []
    assert json.loads(cli(location, "verify", "--json").stdout)["ok"] is True
