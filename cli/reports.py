"""What exists and what was done: `partitions`, `predicates`, and `report erasure SEQ`."""

from __future__ import annotations

import click

from factledger.cli.context import pass_state
from factledger.cli.files import refuse_evidence, write_private
from factledger.cli.notices import check_partition
from factledger.cli.output import emit, output_options
from factledger.cli.partition import partition_options
from factledger.cli.served import report_access
from factledger.ledger import LedgerError
from factledger.ledger.audit.erasure_render import RENDERERS
from factledger.ledger.registry.predicates import load_registry
from factledger.ledger.service import display_location, registry_rows

PARTITION_COLUMNS = ("app", "user", "kind", "events", "open_facts", "held", "first_recorded",
                     "last_recorded")
PREDICATE_COLUMNS = ("name", "cardinality", "sensitivity", "kind", "aliases", "retention_days")
CHECK_COLUMNS = ("name", "status", "rules", "patterns", "values")
KIND_COLUMNS = ("name", "cardinality", "sensitivity", "retention_days", "min_confidence", "description")


@click.command()
@partition_options(required=False, help_app="Only this app (env FACTLEDGER_APP)",
                   help_user="Only this user, with --app (env FACTLEDGER_USER)")
@output_options
@pass_state
def partitions(state, app, user, fmt) -> None:
    """Apps and users in the ledger, with counts of events, open facts and held candidates."""
    ledger = state.ledger(read_only=True)
    rows = ledger.partitions(app)
    if user is not None:
        rows = [r for r in rows if r["user"] == user]
    if not rows and app is not None:
        check_partition(ledger, app, user or "")
    emit(rows, fmt, PARTITION_COLUMNS)


@click.command()
@click.option("--check", is_flag=True,
              help="Lint the registry: list each predicate's offline rules and patterns; exit 1 if "
                   "any predicate has none (no ledger needed)")
@click.option("--kinds", "show_kinds", is_flag=True,
              help="The kinds an open key may take (observe --kind), with the rules each gives")
@output_options
@pass_state
def predicates(state, check, show_kinds, fmt) -> None:
    """The predicate registry: name, cardinality, sensitivity, kind, aliases, retention."""
    if show_kinds:
        emit(registry_rows(load_registry(state.registry), "kinds"), fmt, KIND_COLUMNS)
        return
    if not check:
        emit(registry_rows(state.ledger(read_only=True).registry, "predicates"), fmt, PREDICATE_COLUMNS)
        return
    rows = registry_rows(load_registry(state.registry), "coverage")
    emit(rows, fmt, CHECK_COLUMNS)
    missing = [r["name"] for r in rows if r["status"] != "ok"]
    if missing:
        raise LedgerError(f"{len(missing)} predicate(s) have no patterns or rules, so the offline "
                          f"extractor never finds them: {', '.join(missing)}")


@click.group()
def report() -> None:
    """Printable records for the compliance file."""


@report.command("erasure")
@click.argument("seq", type=click.IntRange(min=1))
@click.option("--format", "form", type=click.Choice(sorted(RENDERERS)), default=None,
              help="markdown, json, or html (one self-contained page)  [default: from -o's extension "
                   "(.html, .md, .json), else markdown]")
@click.option("--json", "form", flag_value="json", help="Same as --format json")
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write here (created 0600) instead of stdout")
@pass_state
def report_erasure(state, seq, form, out) -> None:
    """One erasure receipt with its scope hash, counts, ticket, heads and a fresh verify."""
    form = report_format(form, out)
    refuse_evidence(state, out)
    report = state.ledger(read_only=True).erasure_report(seq)
    if state.read_db:                 # read on a replica: the ledger it names is the primary
        report["ledger"] = display_location(state.db)
    text = RENDERERS[form](report)
    if out:
        write_private(out, text if text.endswith("\n") else text + "\n")
        click.echo(f"wrote the erasure report for seq {seq} to {out}", err=True)
    else:
        click.echo(text, nl=not text.endswith("\n"))


# what a file's extension says it holds, for `report -o FILE` without a --format
FORMAT_OF_EXTENSION = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown",
                       ".json": "json"}


def report_format(form: str | None, out: str | None) -> str:
    """The format asked for, else the one -o's extension names, else markdown.  A format that
    contradicts the extension (markdown into x.html) is refused: the file would lie about itself."""
    suffix = out[out.rfind("."):].lower() if out and "." in out.rsplit("/", 1)[-1] else ""
    implied = FORMAT_OF_EXTENSION.get(suffix)
    if form is not None and implied is not None and form != implied:
        raise LedgerError(f"--format {form} does not match {out!r}, whose extension says {implied}: "
                          f"drop --format (the extension decides) or name the file for {form}")
    return form or implied or "markdown"


report.add_command(report_access, "access")      # the accounting of disclosures (cli/served.py)

COMMANDS = (partitions, predicates, report)
