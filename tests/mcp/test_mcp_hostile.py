"""Every MCP tool error is an `Error: ...` line, whatever the input (issue 47 item 6).

A raw JSON-RPC client over the stdio server (the official client cannot even send a lone
surrogate): missing and mistyped arguments answered pydantic's raw text; a lone surrogate (a
`\\ud800` escape, or bytes that are not UTF-8) or JSON nested deeper than the SDK reads got no
answer at all, the caller waiting forever; a deeply nested session text answered a generic
error and logged a traceback.  Now each is a tool error of one `Error: ...` line, nothing is
written, and the server answers the next call.
"""

from __future__ import annotations

import json
import select
import subprocess

import pytest

pytest.importorskip("mcp")

from tests.mcp.helpers import FACTLEDGER, cli, new_ledger, said  # noqa: E402

PART = ("--app", "mealkit", "--user", "priya")
DEEP = "[" * 100_000 + "]" * 100_000


class RawClient:
    """`factledger mcp` over stdio, spoken to line by line."""

    def __init__(self, db):
        self.proc = subprocess.Popen([FACTLEDGER, "--db", str(db), "mcp", *PART], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.last = 0
        assert "result" in self.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}})
        self.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())

    def write(self, line: bytes) -> None:
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict | None = None, raw: bytes | None = None) -> dict:
        """Send a request (or `raw`, a line holding this id) and read its answer; an answer
        that does not come within a minute fails the test (it used to never come)."""
        self.last += 1
        self.write(raw if raw is not None else json.dumps(
            {"jsonrpc": "2.0", "id": self.last, "method": method, "params": params}).encode())
        while True:
            ready, _, _ = select.select([self.proc.stdout], [], [], 60)
            assert ready, f"no answer to request {self.last} ({method})"
            line = self.proc.stdout.readline()
            assert line, "the server closed its output"
            message = json.loads(line)
            if message.get("id") == self.last:
                return message

    def call(self, name: str, arguments: dict) -> dict:
        return self.request("tools/call", {"name": name, "arguments": arguments})["result"]

    def close(self) -> str:
        self.proc.stdin.close()
        stderr = self.proc.stderr.read().decode("utf-8", "replace")
        self.proc.wait(timeout=60)
        return stderr


HOSTILE = {
    "no arguments": ("remember", {}),
    "a number for a string": ("remember", {"predicate": 5, "value": "x", "quote": "x", "session": "s"}),
    "a lone surrogate in the value": ("remember", said("Pune\ud800")),
    "a lone surrogate in the quote": ("remember", said("Pune", quote="I live in Pune\udfff")),
    "a lone surrogate in the session": ("remember", said("Pune", session="s\ud800")),
    "a huge value": ("remember", said("P" * 2_000_000)),
    "deeply nested session text": ("ingest_session", {"session": DEEP}),
    "deeply nested events in the text": ("ingest_session", {"session": '{"id": "s1", "events": ' + DEEP + "}"}),
    "session text that is not JSON": ("ingest_session", {"session": "not json"}),
    "a lone surrogate as the session": ("ingest_session", {"session": "\ud800"}),
    "a lone surrogate in an event's text": ("ingest_session", {"session": {
        "id": "s1", "appName": "mealkit", "userId": "priya", "events": [{
            "id": "e1", "author": "user", "timestamp": 1788080400.0,
            "content": {"parts": [{"text": "I live in Pune\ud800"}]}}]}}),
    "no session": ("ingest_session", {}),
    "a lone surrogate as a predicate": ("facts", {"predicate": "\ud800"}),
    "a lone surrogate as a time": ("facts", {"valid_at": "\ud800"}),
    "a lone surrogate as a query": ("recall", {"query": "\ud800"}),
    "a word for a limit": ("recall", {"limit": "many"}),
    "a lone surrogate as a fact id": ("why", {"fact_id": "\ud800"}),
    "no fact id": ("why", {}),
    "a number for a predicate": ("history", {"predicate": 7}),
    "a lone surrogate as a reason": ("forget", {"reason": "\ud800", "all": True}),
    "no reason": ("forget", {}),
    "no such tool": ("nosuchtool", {}),
}


def _error_line(result: dict) -> str:
    assert result.get("isError") is True, result
    text = result["content"][0]["text"]
    assert text.startswith("Error: ") and "\n" not in text, text
    assert "validation error" not in text and "input_value" not in text, text
    return text


def test_every_hostile_call_is_answered_with_one_error_line_and_nothing_is_written(tmp_path):
    db = new_ledger(tmp_path)
    client = RawClient(db)
    try:
        answers = {case: _error_line(client.call(*HOSTILE[case])) for case in HOSTILE}
        # bytes that are not UTF-8 inside a call (the SDK would have stored U+FFFD in their place)
        line = (b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "remember", '
                b'"arguments": {"predicate": "home_city", "value": "Pune\xff", "quote": "I live in Pune\xff", '
                b'"session": "s"}}}')
        answers["bytes that are not UTF-8"] = _error_line(
            client.request("tools/call", raw=line % (client.last + 1))["result"])
        # JSON nested deeper than the SDK's parser reads, in the arguments themselves
        line = ('{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "ingest_session", '
                '"arguments": {"session": {"id": "s", "events": ' + "[" * 5000 + "]" * 5000 + "}}}}")
        answers["arguments nested deeper than the SDK reads"] = _error_line(
            client.request("tools/call", raw=(line % (client.last + 1)).encode())["result"])
        # still serving
        fine = client.call("remember", said("Pune"))
        assert not fine.get("isError"), fine
    finally:
        stderr = client.close()
    assert "Unicode" in answers["a lone surrogate in the value"]
    assert "UTF-8" in answers["bytes that are not UTF-8"]
    assert "nested too deeply" in answers["deeply nested session text"]
    assert "nested too deeply" in answers["arguments nested deeper than the SDK reads"]
    assert answers["no arguments"].startswith("Error: remember: missing argument 'predicate'")
    assert "Traceback" not in stderr and "RecursionError" not in stderr, stderr[-3000:]
    facts = json.loads(cli(db, "facts", *PART, "--json").stdout)
    assert [f["value"] for f in facts] == ["Pune"]                 # only the last, good call
