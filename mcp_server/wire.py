"""What the stdio transport reads, checked before the SDK parses it: a tool call it could not
parse gets an `Error: ...` answer, not silence.

The SDK parses each line with pydantic, which refuses a lone surrogate (Python's stand-in for
bytes that are not UTF-8, or a `\\ud800` escape) and JSON nested deeper than it reads; the line
then turns into an exception no request id is known for, and the caller waits for an answer
that never comes (issue 47).  Here the SDK's parse is tried first; a line it refuses that is a
`tools/call` with an id is replaced by the same call carrying only the reason (`REFUSED`), which
`server.LedgerServer.call_tool` answers as an `Error: ...` tool result.  Input is read as UTF-8
with `surrogateescape`, so bytes that are not UTF-8 are refused too, where the SDK would have
replaced them with U+FFFD and stored text the caller never sent.

Over HTTP (`CheckedBodies`) the same check runs on each POSTed body before the SDK's transport
reads it, for a caller whose bearer token is valid (any other request goes on to the SDK's 401):
a refused `tools/call` becomes the same refused call (an `Error: ...` tool result, HTTP 200);
any other body the SDK cannot parse (not JSON, not UTF-8, nested too deeply) is answered HTTP
400 with a JSON-RPC error whose message is one `Error: ...` line, where the SDK would have sent
its parser's words.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import mcp_types as types

# The one argument a refused call carries: the reason, in words (no MCP tool has this name).
REFUSED = "__factledger_refused__"

_DECODER = json.JSONDecoder()
_SPACE = " \t\r\n"


class CheckedLines:
    """An async iterable of lines (what `stdio_server(stdin=...)` reads), each checked."""

    def __init__(self, lines):
        self.lines = lines

    def __aiter__(self) -> AsyncIterator[str]:
        return self._checked()

    async def _checked(self) -> AsyncIterator[str]:
        async for line in self.lines:
            yield checked_line(line)


def checked_line(line: str) -> str:
    """`line` itself, or a refused tool call in its place (see the module's docstring)."""
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return line
    except Exception:       # anything the SDK refuses: read what can be read of it below
        pass
    fields = _top_fields(line)
    if fields.get("method") != "tools/call" or not isinstance(fields.get("id"), int | str) \
            or isinstance(fields.get("id"), bool):
        return line
    name = fields.get("name") if isinstance(fields.get("name"), str) else ""
    refused = {"jsonrpc": "2.0", "id": fields["id"], "method": "tools/call",
               "params": {"name": _clean(name), "arguments": {REFUSED: _problem(line)}}}
    return json.dumps(refused)


def _refused(line: str) -> str | None:
    """None when the SDK reads `line`; else what to send it instead (a refused tool call), or ""
    when no call with an id can be read from it."""
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except Exception:       # anything the SDK refuses
        pass
    replaced = checked_line(line)
    return "" if replaced == line else replaced


PARSE_ERROR = -32700       # JSON-RPC's code for a request that cannot be parsed


class CheckedBodies:
    """ASGI middleware in front of the streamable HTTP app: each POSTed body checked as a stdio
    line is (see the module's docstring).  `authorised(headers)`: whether the request carries a
    valid bearer token (only such a caller is answered here; the SDK answers everyone else)."""

    def __init__(self, app, authorised: Callable[[dict[str, str]], bool]):
        self.app, self.authorised = app, authorised

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        body = b""
        while True:
            message = await receive()
            if message["type"] != "http.request":       # the client went away: nothing to answer
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if self.authorised(headers):
            text = body.decode("utf-8", "surrogateescape")
            instead = _refused(text)
            if instead == "":
                await _answer_error(send, _problem(text), _top_fields(text).get("id"))
                return
            if instead is not None:
                body = instead.encode("utf-8")
        await self.app(scope, _replay(body, receive), send)


def _replay(body: bytes, receive):
    sent = False

    async def again():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()
    return again


async def _answer_error(send, problem: str, request_id) -> None:
    if not isinstance(request_id, int | str) or isinstance(request_id, bool):
        request_id = None
    error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": PARSE_ERROR, "message": f"Error: {problem}"}}
    payload = json.dumps(error).encode()
    await send({"type": "http.response.start", "status": 400,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})


def _clean(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8")


def _problem(line: str) -> str:
    """Why the SDK could not read the call, in a caller's words."""
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return "the call is not valid UTF-8 (it holds bytes that are no text); nothing was done"
    try:
        message = json.loads(line)
    except RecursionError:
        return "the call's arguments are nested too deeply to read; nothing was done"
    except ValueError:
        return "the call is not valid JSON; nothing was done"
    if _has_lone_surrogate(message):
        return "the call holds text that is not valid Unicode (a lone surrogate); nothing was done"
    return "the call's arguments are nested too deeply to read; nothing was done"


def _has_lone_surrogate(value) -> bool:
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return False


def _top_fields(line: str) -> dict:
    """The top-level `id` and `method` of a JSON-RPC line, and `params.name`, read without
    parsing the rest (which may be nested past any parser's depth): one pass over the line."""
    found: dict = {}
    depth, i, n, top_key = 0, 0, len(line), None
    while i < n:
        char = line[i]
        if char == '"':
            try:
                text, end = _DECODER.raw_decode(line, i)        # a string: not recursive
            except ValueError:
                return found
            j = end
            while j < n and line[j] in _SPACE:
                j += 1
            if j < n and line[j] == ":" and depth in (1, 2):
                k = j + 1
                while k < n and line[k] in _SPACE:
                    k += 1
                if depth == 1:
                    top_key = text
                wanted = (depth == 1 and text in ("id", "method")) or \
                    (depth == 2 and top_key == "params" and text == "name")
                if wanted and k < n and line[k] not in "[{":
                    try:
                        found[text] = _DECODER.raw_decode(line, k)[0]
                    except ValueError:
                        return found
                i = k
                continue
            i = end
            continue
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        i += 1
    return found
