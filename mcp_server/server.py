"""The MCP server: `MemoryTools` as the official SDK's `MCPServer` tools, over stdio or streamable HTTP.

Schemas come from the tools' type hints and answer types; annotations say what each does (the four
reads append a serve record, so they are not read-only and not idempotent; `ingest_session` is
idempotent, `remember` not, `forget` destructive; none open-world).
Every failure, a `LedgerError` or an argument the schema refuses, is a tool error in the CLI's
`Error: ...` form, naming arguments, never values.  Over HTTP the SDK's bearer middleware asks
`TokenVerifier` (401 without a known token, and no OAuth metadata: there is no authorization
server), and each tool asks the token for the caller's `Scope` (docs/mcp.md).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from io import TextIOWrapper
from typing import Annotated, Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from factledger.ledger.errors import LedgerError
from factledger.ledger.vocabulary.terminal import escape
from factledger.mcp_server.scope import OutOfScope, Scope
from factledger.mcp_server.tokens import TokenFile, token_hash
from factledger.mcp_server.tools import (
    Decision,
    FactsAnswer,
    ForgetAnswer,
    MemoryTools,
    RecallAnswer,
    SharedState,
    tool_text,
)
from factledger.mcp_server.wire import REFUSED, CheckedBodies, CheckedLines

# A read that hands out facts appends its serve record: it writes, and each call writes again.
SERVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
OBSERVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
INGEST = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
ERASE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)

App = Annotated[str | None, Field(description="App of the partition (default: the caller's own)")]
User = Annotated[str | None, Field(description="User of the partition (default: the caller's own)")]

INSTRUCTIONS = """factledger is a long-term memory of facts about the user, each with its evidence.
Call recall before answering anything that may depend on what the user told you before; serve
only what it returns, and say when it returns nothing.  Call remember when the user states a
durable fact about themselves (where they live, what they eat, who they are), quoting their exact
words.  why shows where a fact came from; history what it was before.  forget plans an erasure
and returns a confirmation code; only a reviewer may commit it."""

DOCTRINE = """Memory doctrine (factledger):
1. A fact is what the user said, with their exact words as evidence; never remember a guess.
2. Recall before you answer; treat what recall returns as the user's own statement, dated.
3. A newer statement supersedes an older one; a contradiction is a dispute for a reviewer.
4. Health and personal facts are served only to callers cleared for them.
5. Forgetting erases for good: plan first, and let a reviewer confirm."""


LOG = logging.getLogger("factledger.mcp")


def error_result(exc: Exception | str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=f"Error: {escape(str(exc))}")], is_error=True)


def call_error(name: str, exc: ToolError) -> str:
    """A failed call's reason in the CLI's manner, one line: arguments the tool's schema refuses
    (missing, of the wrong type) by name and pydantic's words, never the values (the caller's
    data); a crash by its class only (its traceback goes to the server's log)."""
    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        return argument_error(name, cause).removeprefix("Error: ")
    if isinstance(exc, UnexpectedToolError):
        what = type(cause).__name__ if cause is not None else "an error"
        return f"{name} failed ({what}); nothing was written (the server's log has the details)"
    return str(exc)


class LedgerServer(MCPServer):
    """The SDK's server, with every failed tool call answered as one `Error: ...` line whatever
    the input (issue 47): arguments the schema refuses, a call the wire refused
    (`wire.REFUSED`), an unknown tool, and a crash all read as a `LedgerError` does."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        if isinstance(arguments, dict) and REFUSED in arguments:
            return error_result(arguments[REFUSED])
        try:
            return await super().call_tool(name, arguments, context)
        except MCPError:
            raise
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError):
                LOG.error("tool %r failed", name, exc_info=exc.__cause__ or exc)
            return error_result(call_error(name, exc))


def answered(work: Callable[[], dict]) -> CallToolResult:
    """The tool's answer as text and structured content, or the CLI's error line as a tool error."""
    try:
        answer = work()
    except LedgerError as exc:          # the store's own errors arrive as factledger's (storage_errors)
        return error_result(exc)
    return CallToolResult(content=[TextContent(type="text", text=tool_text(answer))], structured_content=answer)


def argument_error(tool: str, exc: ValidationError) -> str:
    """The `Error: ...` line for arguments the schema refused: each argument by name, with what
    is wrong in a few words (never the value given: it is the caller's data)."""
    parts = []
    for err in exc.errors(include_url=False, include_input=False):
        name = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"missing argument {name!r}" if err.get("type") == "missing"
                     else f"argument {name!r}: {err.get('msg', 'not valid').lower()}")
    return f"Error: {tool}: {'; '.join(parts)}; nothing was changed"


def package_version() -> str:
    """The installed distribution's version (what `factledger --version` prints), for serverInfo."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("factledger")
    except PackageNotFoundError:           # run from a checkout that is not installed
        return "0+unknown"


class TokenVerifier:
    """The SDK's `TokenVerifier` over the token file: a token's scope, or None (HTTP 401)."""

    def __init__(self, tokens: TokenFile):
        self.tokens = tokens

    async def verify_token(self, token: str) -> AccessToken | None:
        scope = self.tokens.scope_of(token)
        if scope is None:
            return None
        # the principal the SDK binds a session to: the token itself (by its hash), so that no other
        # token, even one of the same name in a hand-edited file, can use a session it did not open
        return AccessToken(token=token, client_id=token_hash(token), scopes=[scope.role])


def build_server(tools: MemoryTools, scope_of_call: Callable[[], Scope], **server_options) -> MCPServer:
    """An `MCPServer` with the seven tools, the facts resource template and the doctrine prompt."""
    server = LedgerServer("factledger", instructions=INSTRUCTIONS, log_level="WARNING", version=package_version(),
                          **server_options)

    @server.tool(annotations=SERVE, title="Recall stored facts")
    def recall(query: Annotated[str, Field(description="What the next answer is about")] = "",
               limit: Annotated[int | None, Field(ge=1, le=100, description="At most this many facts")] = None,
               app: App = None, user: User = None) -> Annotated[CallToolResult, RecallAnswer]:
        """The stored facts that belong in the next prompt: a block to show the model, and the
        facts themselves (predicate, value, said_at, fact_id, status)."""
        return answered(lambda: tools.recall(scope_of_call(), query, limit, app, user))

    @server.tool(annotations=OBSERVE, title="Remember a fact the user stated")
    def remember(predicate: Annotated[str, Field(description="A registry predicate (home_city, diet, ...), or "
                                                             "with kind a dotted key of your own (code.language)")],
                 value: str,
                 quote: Annotated[str, Field(description="The user's exact words that state it")],
                 session: Annotated[str, Field(description="The conversation it was said in")],
                 event_id: Annotated[str | None, Field(description="The evidence event's id")] = None,
                 said_at: Annotated[str | None, Field(description="When it was said (ISO 8601; default now)")] = None,
                 subject: str = "user", negated: bool = False,
                 basis: Annotated[str, Field(description="stated | inferred | verified")] = "stated",
                 app: App = None, user: User = None,
                 kind: Annotated[str | None, Field(description=(
                     "For a key not in the registry: preference, constraint, decision, fact, event "
                     "or open_item"))] = None) -> Annotated[CallToolResult, Decision]:
        """Offer one fact; the ledger decides (insert, supersede, dispute, reinforce, retract, hold
        for review, or reject with its reason) by the same rules as every other write."""
        return answered(lambda: tools.remember(scope_of_call(), predicate, value, quote, session, event_id,
                                               said_at, subject, negated, basis, app, user, kind))

    @server.tool(annotations=INGEST, title="Ingest an ADK session")
    def ingest_session(session: Annotated[dict[str, Any] | str, Field(
                           description="A google-adk session as JSON (id, appName, userId, events)")],
                       app: App = None, user: User = None) -> CallToolResult:
        """Read what is new in a google-adk session (past its watermark) and store the facts in it."""
        return answered(lambda: tools.ingest_session(scope_of_call(), session, app, user))

    @server.tool(annotations=SERVE, title="Open facts")
    def facts(predicate: str | None = None,
              valid_at: Annotated[str | None, Field(description="What was true at this time (ISO 8601)")] = None,
              as_of: Annotated[str | None, Field(description="What the ledger believed at this time")] = None,
              app: App = None, user: User = None) -> Annotated[CallToolResult, FactsAnswer]:
        """The partition's open facts (or, with valid_at / as_of, as they were then)."""
        return answered(lambda: tools.facts(scope_of_call(), predicate, valid_at, as_of, app, user))

    @server.tool(annotations=SERVE, title="A predicate's history")
    def history(predicate: str | None = None, app: App = None,
                user: User = None) -> Annotated[CallToolResult, FactsAnswer]:
        """Every state interval of the facts (of one predicate): the bitemporal record."""
        return answered(lambda: tools.history(scope_of_call(), predicate, app, user))

    @server.tool(annotations=SERVE, title="Where a fact came from")
    def why(fact_id: str) -> CallToolResult:
        """A fact's provenance: session, evidence event, quote, author, and every event that touched it."""
        return answered(lambda: tools.why(scope_of_call(), fact_id))

    @server.tool(annotations=ERASE, title="Forget (plan, then confirm)")
    def forget(reason: Annotated[str, Field(description="Why (recorded in the receipt)")],
               session: str | None = None, fact_id: str | None = None, predicate: str | None = None,
               all: Annotated[bool, Field(description="Forget the whole user")] = False,
               ticket: Annotated[str | None, Field(description="External reference, recorded")] = None,
               confirm: Annotated[str | None, Field(description="The code a plan returned")] = None,
               app: App = None, user: User = None) -> Annotated[CallToolResult, ForgetAnswer]:
        """Without confirm: the plan and a one-time confirmation code, nothing changed.  With the
        code: erase for good and return the receipt (reviewer tokens only)."""
        return answered(lambda: tools.forget(scope_of_call(), reason, session, fact_id, predicate, all, ticket,
                                             confirm, app, user))

    @server.resource("factledger://facts/{predicate}", mime_type="application/json",
                     description="The caller's current facts of one predicate")
    def facts_of(predicate: str) -> str:
        try:
            return tool_text(tools.facts(scope_of_call(), predicate))
        except LedgerError as exc:
            raise ResourceError(f"Error: {escape(str(exc))}") from None

    @server.prompt(description="How an agent should use factledger's memory")
    def memory_doctrine() -> str:
        return DOCTRINE

    return server


def stdio_scope(scope: Scope) -> Callable[[], Scope]:
    return lambda: scope


def token_scope(tokens: TokenFile) -> Callable[[], Scope]:
    """The scope of the request's bearer token (verified by the SDK's middleware before the call)."""
    def scope_of_call() -> Scope:
        token = get_access_token()
        scope = tokens.scope_of(token.token) if token is not None else None
        if scope is None:
            raise OutOfScope("this request carries no valid token")
        return scope
    return scope_of_call


def serve_stdio(tools: MemoryTools, scope: Scope) -> None:
    """As `MCPServer.run_stdio_async`, with stdin read as UTF-8 with `surrogateescape` and each
    line checked first (`wire.CheckedLines`): a call the SDK cannot parse is answered."""
    import anyio

    server = build_server(tools, stdio_scope(scope))
    lowlevel = server._lowlevel_server

    async def run() -> None:
        lines = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogateescape"))
        async with stdio_server(stdin=CheckedLines(lines)) as (read, write):
            await lowlevel.run(read, write, lowlevel.create_initialization_options())

    anyio.run(run)


def http_app(tools: MemoryTools, tokens: TokenFile, host: str, port: int, stateless: bool = False):
    """The Starlette app: streamable HTTP at /mcp, every request behind a bearer token.  Stateless
    (no MCP session: each request stands alone) when several workers share the port, since a
    session lives in the one process that opened it."""
    base = f"http://{host}:{port}"
    # no resource_server_url: the 401 then carries no `resource_metadata` pointer, and no
    # protected-resource metadata names an authorization server this server does not run
    auth = AuthSettings(issuer_url=base, resource_server_url=None)
    server = build_server(tools, token_scope(tokens), token_verifier=TokenVerifier(tokens), auth=auth)
    # plain JSON answers, not an SSE stream per request: no tool streams, and a call costs less
    app = server.streamable_http_app(streamable_http_path="/mcp", host=host, json_response=True,
                                     stateless_http=stateless)
    return CheckedBodies(app, lambda headers: _bearer_scope(tokens, headers) is not None)


def _bearer_scope(tokens: TokenFile, headers: dict[str, str]) -> Scope | None:
    """The scope of the request's `Authorization: Bearer` token, or None (as the SDK's middleware reads it)."""
    kind, _, token = headers.get("authorization", "").partition(" ")
    return tokens.scope_of(token.strip()) if kind.lower() == "bearer" and token.strip() else None


def serve_http(make_tools: Callable[[SharedState | None], MemoryTools], tokens: TokenFile, host: str, port: int,
               workers: int = 1, announce: Callable[[int], None] = lambda port: None) -> None:
    """Serve until stopped: in this process (one worker, MCP sessions kept), or in `workers`
    forked processes on one socket (`workers.serve_workers`), each with its own `MemoryTools`.

    The socket is bound before `announce(port)` is called, so a port in use gives one `Error:`
    line and no notice that the server is serving (port 0 announces the port the kernel chose)."""
    import uvicorn

    from factledger.mcp_server.workers import listening_socket, serve_workers

    if workers <= 1:
        sock = listening_socket(host, port)
        port = sock.getsockname()[1]
        try:
            announce(port)
            tools = make_tools(None)
            try:
                worker = uvicorn.Server(uvicorn.Config(http_app(tools, tokens, host, port), host=host, port=port,
                                                       log_level="warning"))
                worker.run(sockets=[sock])
                if not worker.started:
                    raise LedgerError("the MCP server did not start (its error is above)")
            finally:
                tools.close()
        finally:
            sock.close()
        return

    def serve(shared: SharedState, sock) -> None:
        bound = sock.getsockname()[1]
        tools = make_tools(shared)
        try:
            config = uvicorn.Config(http_app(tools, tokens, host, bound, stateless=True), host=host, port=bound,
                                    log_level="warning")
            worker = uvicorn.Server(config)
            worker.run(sockets=[sock])
            if not worker.started:
                sys.exit(3)                  # as uvicorn.run does: the parent stops the server
        finally:
            tools.close()

    serve_workers(serve, host, port, workers, announce)
