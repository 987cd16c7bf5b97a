"""`factledger mcp --http` answers a body it cannot parse with one `Error: ...` line (issue 47).

Raw HTTP requests to a real server process: a body that is not JSON, not UTF-8 or nested past
any parser's depth gets HTTP 400 with a JSON-RPC error whose message is one `Error: ...` line (the
SDK's own answer was its parser's words); such a body that is still a `tools/call` with an id is
answered as that call, a tool error in the same form, as the stdio server answers it.  A request
without a valid token still gets the SDK's 401 whatever its body.
"""

from __future__ import annotations

import pytest

pytest.importorskip("mcp")

import httpx2  # noqa: E402

from tests.mcp.helpers import http_server, new_ledger, new_token  # noqa: E402

PLAIN = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
         "mcp-protocol-version": "2025-06-18"}
HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}


def _session(url: str, token: str) -> dict:
    """The headers of an initialized session (the server's default workers: none, each request alone)."""
    auth = {**PLAIN, "Authorization": "Bearer " + token}
    opened = httpx2.post(url, json=HELLO, headers=auth)
    session = opened.headers.get("mcp-session-id")
    headers = {**auth, **({"mcp-session-id": session} if session else {})}
    httpx2.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


def _one_error_line(text: str) -> None:
    assert text.startswith("Error: ") and "\n" not in text and "Traceback" not in text, text


DEEP = 100_000


@pytest.mark.parametrize("body,why", [
    (b"this is not json", "not valid JSON"),
    (b'{"jsonrpc": "2.0", "id": 3, "method": "tools/list"', "not valid JSON"),
    (b'{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"x": "\xff\xfe"}}', "not valid UTF-8"),
    (b"[" * DEEP + b"]" * DEEP, "nested too deeply"),
    (b'{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": ' + b'{"a": ' * DEEP + b"1" + b"}" * DEEP + b"}",
     "nested too deeply"),
])
def test_a_body_that_cannot_be_parsed_gets_one_error_line(tmp_path, body, why):
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    token = new_token(db, tokens, user="u1")
    with http_server(db, tokens) as url:
        headers = _session(url, token)
        answer = httpx2.post(url, content=body, headers=headers)
        assert answer.status_code == 400
        error = answer.json()["error"]
        _one_error_line(error["message"])
        assert why in error["message"]
        # the server goes on answering
        alive = httpx2.post(url, json={"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                       "params": {"name": "facts", "arguments": {}}}, headers=headers)
        assert alive.status_code == 200 and alive.json()["result"]["structuredContent"]["user"] == "u1"


@pytest.mark.parametrize("arguments,why", [
    (b'{"predicate": "diet", "value": "\xff", "quote": "I said x", "session": "s1"}', "not valid UTF-8"),
    (b'{"predicate": "diet", "value": "\\ud800", "quote": "I said x", "session": "s1"}', "lone surrogate"),
    (b'{"value": ' + b"[" * DEEP + b"]" * DEEP + b"}", "nested too deeply"),
])
def test_a_tool_call_that_cannot_be_parsed_is_answered_as_a_tool_error(tmp_path, arguments, why):
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    token = new_token(db, tokens, user="u1")
    body = b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "remember", "arguments": ' \
        + arguments + b"}}"
    with http_server(db, tokens) as url:
        headers = _session(url, token)
        answer = httpx2.post(url, content=body, headers=headers)
    assert answer.status_code == 200, answer.text
    reply = answer.json()
    assert reply["id"] == 7 and reply["result"]["isError"] is True
    (text,) = [c["text"] for c in reply["result"]["content"]]
    _one_error_line(text)
    assert why in text


def test_without_a_token_a_bad_body_still_gets_401(tmp_path):
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    new_token(db, tokens, user="u1")
    with http_server(db, tokens) as url:
        answer = httpx2.post(url, content=b"this is not json", headers=PLAIN)
        wrong = httpx2.post(url, content=b"[" * DEEP, headers={**PLAIN, "Authorization": "Bearer nope"})
    assert answer.status_code == 401 and wrong.status_code == 401
