"""`factledger`: the command-line shell over `ledger.Ledger`."""

from __future__ import annotations

import click

from factledger.cli import core, demo, forget, ingest, proofs, query, recall, reports, residue, serve, why
from factledger.cli.context import LedgerGroup, State


@click.group(cls=LedgerGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", envvar="FACTLEDGER_DB", default="factledger.db", show_default=True,
              help="Ledger file, or a postgresql:// URL (?schema=NAME, default factledger) (env FACTLEDGER_DB)")
@click.option("--registry", envvar="FACTLEDGER_REGISTRY", default=None,
              help="Predicate registry TOML (env FACTLEDGER_REGISTRY; default: the packaged one)")
@click.option("--busy-timeout", "busy_timeout", envvar="FACTLEDGER_BUSY_TIMEOUT", default=5.0,
              show_default=True, type=click.FloatRange(min=0, max=3600),
              help="Seconds a writer waits for another to finish (env FACTLEDGER_BUSY_TIMEOUT)")
@click.option("--future-tolerance", "future_tolerance", envvar="FACTLEDGER_FUTURE_TOLERANCE",
              default="1d", show_default=True, metavar="DURATION",
              help="How far past the clock a said_at or session timestamp may be (6h, 1d, 0; "
                   "env FACTLEDGER_FUTURE_TOLERANCE)")
@click.version_option(package_name="factledger")
@click.pass_context
def cli(ctx: click.Context, db: str, registry: str | None, busy_timeout: float,
        future_tolerance: str) -> None:
    """An event-sourced, hash-chained ledger of facts about the users of AI agents."""
    state = State(db, registry, busy_timeout, future_tolerance)
    ctx.obj = state
    ctx.call_on_close(state.close)


def _late_db(ctx: click.Context, _param, value: str | None) -> None:
    """`--db` after the subcommand means the same as before it (the later one wins)."""
    if value is not None and isinstance(ctx.find_object(State), State):
        state = ctx.find_object(State)
        state.close()
        state.db = value


def accept_db_after(command: click.Command) -> None:
    """Give a subcommand (and its own subcommands) a `--db` that overrides the global one."""
    if not any("--db" in getattr(p, "opts", ()) for p in command.params):
        command.params.append(click.Option(["--db"], expose_value=False, is_eager=True,
                                           callback=_late_db, metavar="PATH",
                                           help="Ledger file (as the global --db)"))
    for sub in getattr(command, "commands", {}).values():
        accept_db_after(sub)


for module in (core, why, demo, recall, ingest, forget, residue, query, reports, serve, proofs):
    for command in module.COMMANDS:
        if module is not demo:                 # the demo makes its own ledger (--out)
            accept_db_after(command)
        cli.add_command(command)
