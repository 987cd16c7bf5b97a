"""The MCP server's edges, as a client meets them: a confirmation code spent by a mismatched
forget says so when it is offered again; `serverInfo.version` is the package's; a 401 points at
no OAuth metadata that is not there; refused arguments are `Error: ...` lines naming them, not the
validator's text."""

from __future__ import annotations

from importlib.metadata import version

import anyio
import pytest

pytest.importorskip("mcp")

import httpx2  # noqa: E402

from tests.mcp.helpers import cli, http_server, new_ledger, new_token, open_facts, said, stdio_session  # noqa: E402

PART = ("--app", "mealkit", "--user", "priya")


def test_a_code_spent_by_a_mismatched_request_says_so(tmp_path):
    db = new_ledger(tmp_path)

    async def story():
        async with stdio_session(db, *PART, "--allow-forget") as session:
            fact = (await session.call_tool("remember", said("Lisbon"))).structured_content["fact_id"]
            code = (await session.call_tool("forget", {"fact_id": fact, "reason": "user asked"})).structured_content["confirm"]
            wrong = await session.call_tool("forget", {"fact_id": fact, "reason": "another reason", "confirm": code})
            right = await session.call_tool("forget", {"fact_id": fact, "reason": "user asked", "confirm": code})
            unknown = await session.call_tool("forget", {"fact_id": fact, "reason": "user asked", "confirm": "0000"})
            code = (await session.call_tool("forget", {"fact_id": fact, "reason": "user asked"})).structured_content["confirm"]
            done = await session.call_tool("forget", {"fact_id": fact, "reason": "user asked", "confirm": code})
            again = await session.call_tool("forget", {"fact_id": fact, "reason": "user asked", "confirm": code})
            return wrong, right, unknown, done, again

    wrong, right, unknown, done, again = anyio.run(story)
    text = lambda r: r.content[0].text  # noqa: E731
    assert wrong.is_error and text(wrong).startswith("Error: the confirmation code does not match this request")
    assert "(reason differs from the plan's)" in text(wrong) and "now spent" in text(wrong)
    # the same code with the plan's own arguments: not "does not match", but how it was spent
    assert right.is_error and "already used" in text(right) and "arguments differed" in text(right)
    assert "does not match" not in text(right)
    assert unknown.is_error and "not one this server issued" in text(unknown)
    assert done.structured_content["committed"]
    assert again.is_error and "already used (it committed its forget)" in text(again)
    assert open_facts(db, "mealkit", "priya") == []


def test_refused_arguments_are_error_lines_naming_them(tmp_path):
    db = new_ledger(tmp_path)

    async def story():
        async with stdio_session(db, *PART) as session:
            missing = await session.call_tool("remember", {"predicate": "home_city", "value": "Lisbon"})
            typed = await session.call_tool("recall", {"query": "x", "limit": "many"})
            bounded = await session.call_tool("recall", {"query": "x", "limit": 1000})
            nothing = await session.call_tool("forget", {})
            unknown = await session.call_tool("no_such_tool", {})
            return missing, typed, bounded, nothing, unknown

    missing, typed, bounded, nothing, unknown = anyio.run(story)
    for result in (missing, typed, bounded, nothing, unknown):
        assert result.is_error and result.content[0].text.startswith("Error: ")
        assert "validation error" not in result.content[0].text and "pydantic" not in result.content[0].text
    assert missing.content[0].text == ("Error: remember: missing argument 'quote'; missing argument 'session';"
                                       " nothing was changed")
    assert "argument 'limit'" in typed.content[0].text and "many" not in typed.content[0].text
    assert "argument 'limit'" in bounded.content[0].text
    assert "missing argument 'reason'" in nothing.content[0].text
    assert cli(db, "head").stdout.startswith("0:")


def test_server_info_names_the_package_version(tmp_path):
    db = new_ledger(tmp_path)

    async def story():
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        from tests.mcp.helpers import FACTLEDGER

        params = StdioServerParameters(command=FACTLEDGER, args=["--db", str(db), "mcp", *PART])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await session.initialize()

    hello = anyio.run(story)
    assert hello.server_info.name == "factledger" and hello.server_info.version == version("factledger")


def test_a_401_points_at_no_metadata_that_is_not_there(tmp_path):
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    good = new_token(db, tokens, user="priya")
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with http_server(db, tokens) as url:
        refused = httpx2.post(url, json=hello, headers=accept)
        base = url.rsplit("/mcp", 1)[0]
        metadata = [httpx2.get(base + path) for path in ("/.well-known/oauth-protected-resource/mcp",
                                                         "/.well-known/oauth-protected-resource",
                                                         "/.well-known/oauth-authorization-server")]
        right = httpx2.post(url, json=hello, headers={**accept, "Authorization": "Bearer " + good})
    assert refused.status_code == 401
    challenge = refused.headers.get("www-authenticate", "")
    assert challenge.startswith("Bearer") and "resource_metadata" not in challenge
    assert all(m.status_code == 404 for m in metadata)      # nothing advertised, so nothing to follow
    assert right.status_code == 200 and right.json()["result"]["serverInfo"]["version"] == version("factledger")
