"""`factledger mcp`: serve the ledger to MCP clients over stdio or streamable HTTP (docs/mcp.md).

Parsing only: the server is `mcp_server/`, imported (with the `mcp` SDK) when the
command runs.  On stdio nothing but the protocol reaches stdout: notices and logs go to stderr.
"""

from __future__ import annotations

import click

from factledger.cli.context import pass_state
from factledger.cli.files import refuse_evidence, write_private
from factledger.cli.notices import warn_exposure
from factledger.ledger import LedgerError


@click.command()
@click.option("--app", envvar="FACTLEDGER_APP", help="App served over stdio; with --new-token, the token's app")
@click.option("--user", envvar="FACTLEDGER_USER", help="User served over stdio; with --new-token, the token's user")
@click.option("--users", default=None, metavar="LIST",
              help="With --new-token: the users the token may name (comma-separated, or '*' for every user)")
@click.option("--clearance", default=None, metavar="LEVEL",
              help="The highest sensitivity served, on the one scale normal < personal < health "
                   "(all = health)  [default: personal]")
@click.option("--allow-forget", "allow_forget", is_flag=True,
              help="stdio: this host may commit a forget (a reviewer's right)")
@click.option("--http", is_flag=True, help="Serve streamable HTTP at /mcp (bearer tokens from --tokens)")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP: address to listen on")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="HTTP: port")
@click.option("--workers", default=None, type=click.IntRange(1, 256), metavar="N",
              help="HTTP: server processes sharing the port (stateless HTTP when more than one)  "
                   "[default: one per core]")
@click.option("--tokens", "tokens_path", default=None, metavar="FILE",
              help="The token file (TOML of hashed bearer tokens)")
@click.option("--new-token", "new_token", is_flag=True,
              help="Add a token to --tokens and print it once (only its hash is stored)")
@click.option("--role", default="agent", show_default=True, type=click.Choice(["agent", "reviewer"]),
              help="With --new-token: a reviewer may also commit forgets")
@click.option("--name", default=None, help="With --new-token: the token's label (recorded as a forget's requester)")
@pass_state
def mcp(state, app, user, users, clearance, allow_forget, http, host, port, workers, tokens_path, new_token, role,
        name) -> None:
    """Serve the ledger as an MCP server: stdio for one partition, or streamable HTTP with tokens."""
    if new_token:
        return add_token(state, tokens_path, app, user, users, clearance, role, name)
    try:
        from factledger.mcp_server import server
        from factledger.mcp_server.scope import Scope
        from factledger.mcp_server.tokens import TokenFile
        from factledger.mcp_server.tools import MemoryTools
    except ImportError as exc:
        raise LedgerError(f"factledger mcp needs the mcp extra: pip install 'factledger[mcp]' ({exc})") from None
    if http:
        if not tokens_path:
            raise LedgerError("--http needs --tokens FILE (make one with factledger mcp --new-token)")
        tokens = TokenFile(tokens_path)
        if not len(tokens):
            raise LedgerError(f"{tokens_path} holds no token: add one with factledger mcp --new-token")
        if workers is None:
            from factledger.mcp_server.workers import default_workers
            workers = default_workers()
        if workers > 1:
            open_ledger(state, False).close()        # a ledger that cannot open is refused here, once

        def announce(bound: int) -> None:          # once the port is bound: a port in use says only Error:
            click.echo(f"factledger: serving MCP on http://{host}:{bound}/mcp ({len(tokens)} tokens, "
                       f"{workers} worker{'s' if workers > 1 else ''})", err=True)
            warn_exposure(host, "the MCP server")

        server.serve_http(lambda shared: MemoryTools(lambda read_only: open_ledger(state, read_only), shared=shared),
                          tokens, host, port, workers, announce)
        return
    if not app or not user:
        raise LedgerError("stdio serves one partition: --app and --user (or FACTLEDGER_APP and FACTLEDGER_USER)")
    scope = Scope.build(app, [user], clearance, "reviewer" if allow_forget else "agent")
    tools = MemoryTools(lambda read_only: open_ledger(state, read_only))
    try:
        server.serve_stdio(tools, scope)
    finally:
        tools.close()


def open_ledger(state, read_only: bool):
    """A ledger of its own for each caller, as `state` opens one: the writer, and one per reader
    thread opened read-only (a read tool cannot change the file).  With `--read-db` the readers
    open the replica there, as the read commands do, and `remember`, `ingest_session` and
    `forget` write `--db` (a replica that lags shows a write once it has replayed it)."""
    from factledger.cli.context import State

    return State(state.db, state.registry, state.busy_timeout, state.future_tolerance,
                 state.read_db).ledger(read_only=read_only)


def add_token(state, path, app, user, users, clearance, role, name) -> None:
    from factledger.ledger.vocabulary.clock import clock_from_env, iso
    from factledger.mcp_server.tokens import new_token, users_of

    if not path:
        raise LedgerError("--new-token needs --tokens FILE")
    if not app:
        raise LedgerError("--new-token needs --app")
    if (user is None) == (users is None):
        raise LedgerError("--new-token needs one of --user U or --users LIST ('*' for every user)")
    refuse_evidence(state, path)
    token, text = new_token(path, app, users_of(user, users), clearance, role, iso(clock_from_env()()), name)
    write_private(path, text)
    click.echo(token)


COMMANDS = (mcp,)
