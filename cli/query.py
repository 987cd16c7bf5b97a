"""`factledger query SQL`: read-only SQL over the ledger's tables, printed like any other rows."""

from __future__ import annotations

import click

from factledger.cli.context import pass_state, require_file
from factledger.cli.output import emit, output_options
from factledger.ledger.service import query as run_query


@click.command()
@click.argument("sql")
@click.option("-p", "--param", "params", nargs=2, multiple=True, metavar="NAME VALUE",
              help="A named parameter (:NAME in the SQL); repeat for more")
@output_options
@pass_state
def query(state, sql, params, fmt) -> None:
    """Run one read-only SQL statement; anything that would write is refused (exit 1).

    The ledger file is opened read-only: nothing here can change it, and the statement sees the
    tables as they are (the log in `events`, the projections' tables beside it).
    """
    require_file(state, "query")
    emit(run_query(state.db, sql, dict(params)), fmt)


COMMANDS = (query,)
