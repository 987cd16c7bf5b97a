"""`factledger serve`: the reviewer's web view (a Datasette plugin, the optional `ui` extra)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from factledger.cli.context import pass_state, require_file
from factledger.ledger import LedgerError
from factledger.ledger.registry.predicates import load_registry
from factledger.ledger.vocabulary.clock import clock_from_env

INSTALL_HINT = "factledger serve needs the ui extra: pip install 'factledger[ui]'"


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (keep 127.0.0.1 and put a TLS reverse proxy in front)")
@click.option("--port", default=8001, show_default=True, type=click.IntRange(0, 65535))
@click.option("--actors", "actors_file", envvar="FACTLEDGER_UI_ACTORS_FILE", type=click.Path(dir_okay=False),
              help="TOML file of actors: password hash, clearance, role (env FACTLEDGER_UI_ACTORS_FILE; "
                   "or the file's text in FACTLEDGER_UI_ACTORS)")
@click.option("--public", is_flag=True,
              help="Let anyone look without signing in (normal clearance, no actions): for demos")
@click.option("--hash-password", "hash_only", is_flag=True,
              help="Read a password (prompted, or from stdin) and print its hash for the actors file")
@pass_state
def serve(state, host: str, port: int, actors_file: str | None, public: bool, hash_only: bool) -> None:
    """Serve the reviewer's web view of the ledger on Datasette (read-only; writes go through the ledger)."""
    try:                                  # the optional extra: imported only by this command
        import uvicorn

        from factledger.web.actors import hash_password, load_actors
        from factledger.web.config import WebConfig
        from factledger.web.server import build
        from factledger.web.sessions import Sessions
    except ImportError:
        raise LedgerError(INSTALL_HINT) from None
    if hash_only:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
        click.echo(hash_password(password))
        return
    require_file(state, "serve")
    path = Path(state.db)
    if not path.exists():
        raise LedgerError(f"no ledger at {state.db} (run `factledger init` first)")
    state.ledger(read_only=True).close()        # opens once, read-only: a schema that differs is said, not repaired
    actors = load_actors(actors_file, os.environ.get("FACTLEDGER_UI_ACTORS"))
    if not actors and not public:
        raise LedgerError("nobody could sign in: give --actors FILE (or FACTLEDGER_UI_ACTORS), "
                          "or --public for a look-only demo")
    beside = Path(actors_file).resolve() if actors_file else None
    config = WebConfig(path.resolve(), load_registry(state.registry), actors, public, clock_from_env(),
                       state.busy_timeout, actors_path=beside,
                       sessions=Sessions(beside.with_name(beside.name + ".sessions") if beside else None))
    datasette = build(config, secret=os.environ.get("FACTLEDGER_UI_SECRET"))
    who = f"{len(actors)} actor(s)" + (", anonymous viewers too (--public)" if public else "")
    click.echo(f"factledger web view of {path} on http://{host}:{port}/ ({who}); Ctrl-C to stop", err=True)
    uvicorn.run(datasette.app(), host=host, port=port, log_level="warning")


COMMANDS = (serve,)
