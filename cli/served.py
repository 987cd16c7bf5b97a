"""`factledger served`: the serves recorded for a partition, one shown again, and `report access`.

Reads only: each command opens the ledger read-only (docs/audit.md, "What the agent was shown").
"""

from __future__ import annotations

import click

from factledger.cli.context import State, pass_state
from factledger.cli.core import TIME_FORMATS
from factledger.cli.files import write_private
from factledger.cli.output import dumps, emit, output_options
from factledger.cli.partition import partition_options
from factledger.ledger import LedgerError
from factledger.ledger.audit.access import render_html, render_markdown

# (the table leaves out text_sha256, in --json: the fact ids say what was handed out)
SERVED_COLUMNS = ("seq", "served_at", "caller", "surface", "tool", "clearance", "facts", "withheld", "fact_ids")
SURFACES = ("library", "adk", "mcp", "web", "cli")


@click.group(invoke_without_command=True)
@partition_options(required=False)
@click.option("--since", metavar="TIME", help=f"Serves made at or after TIME. {TIME_FORMATS}")
@click.option("--until", metavar="TIME", help="Serves made at or before TIME")
@click.option("--by", "caller", metavar="CALLER", help="Only serves to this caller")
@click.option("--fact", metavar="FACT_ID", help="Only serves that handed out this fact")
@click.option("--surface", type=click.Choice(SURFACES), help="Only serves through this surface")
@output_options
@click.pass_context
def served(ctx, app, user, since, until, caller, fact, surface, fmt) -> None:
    """What was served, to whom, when: the recorded serves of a partition (no value, no query)."""
    if ctx.invoked_subcommand is not None:
        return
    if app is None or user is None:
        raise LedgerError("served needs --app and --user (or FACTLEDGER_APP / FACTLEDGER_USER)")
    ledger = ctx.find_object(State).ledger(read_only=True)
    rows = ledger.served(app, user, since=since, until=until, by=caller, fact=fact, surface=surface)
    for row in rows:
        if row["text_sha256"] is None:
            row["text_sha256"] = "(erased)"
    emit(rows, fmt, SERVED_COLUMNS)


@served.command("show")
@click.argument("seq", type=click.IntRange(min=1))
@click.option("--text", "with_text", is_flag=True, help="Print the re-rendered text first")
@click.option("--json", "as_json", is_flag=True, help="The comparison as JSON")
@pass_state
def show(state, seq, with_text, as_json) -> None:
    """Re-render serve SEQ from the log at its position and compare with its recorded hash."""
    shown = state.ledger(read_only=True).serves.served_show(seq)
    if as_json:
        click.echo(dumps(shown))
    else:
        if with_text and shown.get("text") is not None:
            click.echo(shown["text"])
        verdict = {True: "identical", False: "different", None: "not checked"}[shown["identical"]]
        click.echo(f"serve {seq} to {shown['caller']} ({shown['surface']}, {len(shown['fact_ids'])} facts) "
                   f"at {shown['served_at']}: {verdict}")
    if shown["identical"] is False:
        raise LedgerError(f"serve {seq}: {shown['difference']}")
    if shown["identical"] is None:
        click.echo(f"Note: {shown['difference']}", err=True)


@click.command("access")
@partition_options
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write here (created 0600): .html for one page, .json, else Markdown")
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout")
@pass_state
def report_access(state, app, user, out, as_json) -> None:
    """The accounting of disclosures for one user: per class (health first) and caller, what was served when."""
    report = state.ledger(read_only=True).access_report(app, user)
    suffix = out.rsplit(".", 1)[-1].lower() if out and "." in out else ""
    if as_json or suffix == "json":
        text = dumps(report)
    elif suffix in ("html", "htm"):
        text = render_html(report)
    else:
        text = render_markdown(report)
    if out:
        write_private(out, text if text.endswith("\n") else text + "\n")
        click.echo(f"wrote the accounting of disclosures for {app}/{user} to {out}", err=True)
    else:
        click.echo(text)


COMMANDS = (served,)
