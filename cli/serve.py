"""`factledger serve`: the reviewer's web view (a Datasette plugin, the optional `ui` extra)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from factledger.cli.context import pass_state
from factledger.cli.files import refuse_evidence
from factledger.cli.notices import warn_exposure
from factledger.ledger import LedgerError
from factledger.ledger.domain.recall_options import PUBLIC_CLEARANCE
from factledger.ledger.registry.predicates import load_registry
from factledger.ledger.vocabulary.clock import clock_from_env
from factledger.ledger.vocabulary.words import SENSITIVITIES

INSTALL_HINT = "factledger serve needs the ui extra: pip install 'factledger[ui]'"


def read_password() -> str:
    """At a terminal: asked twice, hidden.  Piped (`echo "$PW" | factledger serve --hash-password`):
    the first line of stdin, once; there is nobody to confirm it, so a second prompt would only
    abort on the end of input.  An empty password is refused."""
    if sys.stdin.isatty():
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise LedgerError("an empty password: give one (prompted at a terminal, or the first line of stdin)")
    return password


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (keep 127.0.0.1 and put a TLS reverse proxy in front)")
@click.option("--port", default=8001, show_default=True, type=click.IntRange(0, 65535))
@click.option("--actors", "actors_file", envvar="FACTLEDGER_UI_ACTORS_FILE", type=click.Path(dir_okay=False),
              help="TOML file of actors: password hash, clearance, role (env FACTLEDGER_UI_ACTORS_FILE; "
                   "or the file's text in FACTLEDGER_UI_ACTORS)")
@click.option("--public", is_flag=True,
              help="Let anyone look without signing in (normal clearance, no actions): for demos")
@click.option("--public-clearance", "public_clearance", type=click.Choice(SENSITIVITIES),
              default=PUBLIC_CLEARANCE, show_default=True,
              help="What anonymous visitors of --public may read (the demo's story: personal)")
@click.option("--hash-password", "hash_only", is_flag=True,
              help="Read a password (prompted, or from stdin) and print its hash for the actors file")
@pass_state
def serve(state, host: str, port: int, actors_file: str | None, public: bool, public_clearance: str,
          hash_only: bool) -> None:
    """Serve the reviewer's web view of the ledger on Datasette (read-only; writes go through the ledger)."""
    try:                                  # the optional extra: imported only by this command
        import uvicorn

        from factledger.web.actors import hash_password, load_actors
        from factledger.web.config import WebConfig
        from factledger.web.server import build
        from factledger.web.sessions import Sessions
    except ImportError:
        raise LedgerError(INSTALL_HINT) from None
    if public_clearance != PUBLIC_CLEARANCE and not public:
        raise LedgerError("--public-clearance is what anonymous visitors of --public may read: give --public too")
    if hash_only:
        click.echo(hash_password(read_password()))
        return
    from factledger.ledger.service import display_location, is_server_location

    on_server = is_server_location(state.db)
    if not on_server and not Path(state.db).exists():
        raise LedgerError(f"no ledger at {state.db} (run `factledger init` first)")
    # each opened once, read-only: a schema that differs is said, not repaired; the ledger the
    # actions write, and the replica the pages read (--read-db) if there is one
    if actors_file:                       # the sign-ins file beside it, and its lock, are written
        refuse_evidence(state, f"{actors_file}.sessions", f"{actors_file}.sessions.lock")
    state.ledger(read_only=True, primary=True)
    state.ledger(read_only=True)
    state.close()
    actors = load_actors(actors_file, os.environ.get("FACTLEDGER_UI_ACTORS"))
    if not actors and not public:
        raise LedgerError("nobody could sign in: give --actors FILE (or FACTLEDGER_UI_ACTORS), "
                          "or --public for a look-only demo")
    beside = Path(actors_file).resolve() if actors_file else None
    location = state.db if on_server else Path(state.db).resolve()
    config = WebConfig(location, load_registry(state.registry), actors, public, clock_from_env(),
                       state.busy_timeout, actors_path=beside,
                       sessions=Sessions(beside.with_name(beside.name + ".sessions") if beside else None),
                       public_clearance=public_clearance, read_location=state.read_db)
    datasette = build(config, secret=os.environ.get("FACTLEDGER_UI_SECRET"))
    who = f"{len(actors)} actor(s)" + (f", anonymous viewers too (--public, {public_clearance} clearance)"
                                       if public else "")
    shown = display_location(location) + (f" (pages read {display_location(state.read_db)})"
                                          if state.read_db else "")
    click.echo(f"factledger web view of {shown} on http://{host}:{port}/ ({who}); Ctrl-C to stop", err=True)
    warn_exposure(host, "the web view", public_clearance=public_clearance if public else None)
    uvicorn.run(datasette.app(), host=host, port=port, log_level="warning")


COMMANDS = (serve,)
