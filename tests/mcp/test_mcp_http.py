"""`factledger mcp --http`: streamable HTTP at /mcp behind hashed bearer tokens, with the official
Python client; each token's scope holds, a request without a valid token gets 401, and many
clients at once share the one writer."""

from __future__ import annotations

import json

import anyio
import pytest

pytest.importorskip("mcp")

import httpx2  # noqa: E402

from tests.mcp.helpers import (  # noqa: E402
    SEVEN,
    cli,
    http_server,
    http_session,
    new_ledger,
    new_token,
    open_facts,
    said,
    sixteen_at_once,
)


def test_new_token_prints_the_token_once_and_stores_only_its_hash(tmp_path):
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    first = new_token(db, tokens, user="u1")
    second = new_token(db, tokens, users="*", role="reviewer", clearance="all")
    text = tokens.read_text()
    assert first != second and first not in text and second not in text
    assert text.count("[[token]]") == 2 and 'users = ["*"]' in text and 'role = "reviewer"' in text
    assert oct(tokens.stat().st_mode & 0o777) == "0o600"
    refused = cli(db, "mcp", "--new-token", "--tokens", str(tokens), "--app", "mealkit", "--user", "_erasures",
                  check=False)
    assert refused.returncode == 1 and refused.stderr.startswith("Error: ") and "reserved" in refused.stderr
    assert tokens.read_text() == text


def test_a_request_without_a_valid_token_gets_401(tmp_path):
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    good = new_token(db, tokens, user="u1")
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with http_server(db, tokens) as url:
        none = httpx2.post(url, json=hello, headers=accept)
        wrong = httpx2.post(url, json=hello, headers={**accept, "Authorization": "Bearer " + good[:-1] + "x"})
        right = httpx2.post(url, json=hello, headers={**accept, "Authorization": "Bearer " + good})
    assert none.status_code == 401 and wrong.status_code == 401
    assert right.status_code == 200


def test_no_token_can_use_a_session_another_token_opened(tmp_path):
    """One worker keeps MCP sessions, each bound to the token that opened it."""
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    u1, u2 = new_token(db, tokens, user="u1"), new_token(db, tokens, user="u2")
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "facts", "arguments": {}}}
    plain = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
             "mcp-protocol-version": "2025-06-18"}
    with http_server(db, tokens, "--workers", "1") as url:
        opened = httpx2.post(url, json=hello, headers={**plain, "Authorization": "Bearer " + u1})
        session = {**plain, "mcp-session-id": opened.headers["mcp-session-id"]}
        httpx2.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                    headers={**session, "Authorization": "Bearer " + u1})
        stolen = httpx2.post(url, json=call, headers={**session, "Authorization": "Bearer " + u2})
        own = httpx2.post(url, json=call, headers={**session, "Authorization": "Bearer " + u1})
    assert stolen.status_code == 404 and "u1" not in stolen.text
    assert own.status_code == 200 and own.json()["result"]["structuredContent"]["user"] == "u1"


def test_with_several_workers_there_is_no_session_and_each_request_is_its_tokens(tmp_path):
    """Several workers serve stateless HTTP: no session id is issued, and a request that carries
    another caller's (or a made-up) session id is served in its own token's scope, never the other's."""
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    u1, u2 = new_token(db, tokens, user="u1"), new_token(db, tokens, user="u2")
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    remember = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "remember", "arguments":
                                                                              said("Lisbon")}}
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "facts", "arguments": {}}}
    plain = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
             "mcp-protocol-version": "2025-06-18"}
    with http_server(db, tokens, "--workers", "2") as url:
        opened = httpx2.post(url, json=hello, headers={**plain, "Authorization": "Bearer " + u1})
        httpx2.post(url, json=remember, headers={**plain, "Authorization": "Bearer " + u1}).raise_for_status()
        other = {**plain, "mcp-session-id": "0" * 32, "Authorization": "Bearer " + u2}
        theirs = httpx2.post(url, json=call, headers=other)
        own = httpx2.post(url, json=call, headers={**plain, "Authorization": "Bearer " + u1})
    assert opened.status_code == 200 and "mcp-session-id" not in opened.headers
    assert theirs.status_code == 200 and "Lisbon" not in theirs.text
    assert theirs.json()["result"]["structuredContent"]["user"] == "u2"
    assert [f["value"] for f in own.json()["result"]["structuredContent"]["facts"]] == ["Lisbon"]


def test_a_token_for_u1_can_neither_read_nor_write_u2(tmp_path):
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    u1, u2 = new_token(db, tokens, user="u1"), new_token(db, tokens, user="u2")

    async def story(url):
        async with http_session(url, u2) as session:
            kept = (await session.call_tool("remember", said("Porto"))).structured_content["fact_id"]
        async with http_session(url, u1) as session:
            names = {t.name for t in (await session.list_tools()).tools}
            own = await session.call_tool("remember", said("Lisbon"))
            calls = {
                "recall": await session.call_tool("recall", {"query": "where", "user": "u2"}),
                "facts": await session.call_tool("facts", {"user": "u2"}),
                "history": await session.call_tool("history", {"user": "u2"}),
                "why": await session.call_tool("why", {"fact_id": kept}),
                "remember": await session.call_tool("remember", said("Faro", user="u2")),
                "ingest": await session.call_tool("ingest_session", {"session": {
                    "id": "s9", "appName": "mealkit", "userId": "u2", "events": [
                        {"id": "e1", "author": "user", "timestamp": 1764000000,
                         "content": {"parts": [{"text": "I live in Faro"}]}}]}}),
                "forget": await session.call_tool("forget", {"fact_id": kept, "reason": "x", "user": "u2"}),
                "other app": await session.call_tool("facts", {"app": "other"}),
            }
            mine = await session.call_tool("recall", {"query": "where do I live"})
            return names, own, calls, mine, kept

    with http_server(db, tokens) as url:
        names, own, calls, mine, kept = anyio.run(story, url)
    assert names == SEVEN and not own.is_error
    for name, answer in calls.items():
        assert answer.is_error, name
        text = answer.content[0].text
        assert text.startswith("Error: ") and "scope" in text, (name, text)
        assert "Porto" not in json.dumps(answer.model_dump(mode="json")), name
    assert [f["value"] for f in mine.structured_content["facts"]] == ["Lisbon"]
    assert [f["value"] for f in open_facts(db, "mealkit", "u2")] == ["Porto"]
    assert open_facts(db, "mealkit", "u2")[0]["fact_id"] == kept


def test_a_token_for_every_user_names_the_user_and_not_the_apps_shared_partition(tmp_path):
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    anyone = new_token(db, tokens, users="*")

    async def story(url):
        async with http_session(url, anyone) as session:
            return (await session.call_tool("recall", {"query": "x"}),
                    await session.call_tool("remember", said("Lisbon", user="u7")),
                    await session.call_tool("remember", said("Lisbon", user="_domain")))

    with http_server(db, tokens) as url:
        unnamed, named, shared = anyio.run(story, url)
    assert unnamed.is_error and "name a user" in unnamed.content[0].text
    assert named.structured_content["decision"] == "insert"
    assert shared.is_error and "outside this caller's scope" in shared.content[0].text


def test_sixteen_clients_at_once_share_the_one_writer(tmp_path):
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    token = new_token(db, tokens, users="*", role="reviewer")
    users = [f"u{i}" for i in range(16)]

    with http_server(db, tokens) as url:
        answers = sixteen_at_once(url, token, users)
    assert len(answers) == 48 and not any(d.is_error or s.is_error for _, d, s in answers)
    for _user, _decided, served in answers:
        assert all(f["value"].startswith("City") for f in served.structured_content["facts"])
    for user in users:
        assert [f["value"] for f in open_facts(db, "mealkit", user)] == ["City2"]
    assert json.loads(cli(db, "verify", "--json").stdout)["ok"] is True
