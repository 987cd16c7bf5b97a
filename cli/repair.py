"""`factledger repair`: put the ledger's schema back as this version writes it, and say what changed.

Read commands open the ledger so that they cannot write, and only report a guard trigger or an
index that is missing or altered; a write command restores what is missing on open; this command
is the explicit repair: it also puts back what is altered, records each restored trigger (so
`verify` keeps naming the window in which the log was unprotected) and prints each change.
"""

from __future__ import annotations

import click

from factledger.cli.context import pass_state
from factledger.cli.output import emit_one, output_options


@click.command()
@output_options
@pass_state
def repair(state, fmt) -> None:
    """Restore missing or altered triggers, indexes, tables; drop what the ledger did not make; print each."""
    restored = state.ledger(repair=True).schema_report
    emit_one({"restored": restored}, fmt, render=lambda r: "\n".join(
        f"restored: {line}" for line in r["restored"]) or "nothing to repair: the schema is as this version writes it")


COMMANDS = (repair,)
