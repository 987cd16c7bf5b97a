"""`factledger recall QUERY`: what an agent would be served, and with --explain, why.

Plain output is the rendered block exactly as a model would see it; --json gives the selected
facts (and with --explain the whole explanation); -t/--csv/--nl give rows.  No rule lives here.
"""

from __future__ import annotations

from collections import Counter

import click

from factledger.cli.context import pass_state
from factledger.cli.core import TIME_FORMATS, check_as_of
from factledger.cli.notices import check_partition, note
from factledger.cli.output import dumps, emit, output_options, to_table
from factledger.cli.partition import partition_options
from factledger.ledger.recall.serve import DEFAULT_HALF_LIFE_DAYS, DEFAULT_LIMIT, DEFAULT_RECENCY_WEIGHT, explain_rows

# Tables fit 120 columns: the selection with its score, the explanation with the parts of it
# (--json carries every field, the fact ids of the explanation among them)
SELECTED_COLUMNS = ("subject", "predicate", "value", "status", "effective_confidence", "said_at", "score",
                    "fact_id")
EXPLAIN_COLUMNS = ("rank", "outcome", "predicate", "value", "sensitivity", "effective_confidence", "age_days",
                   "meaning", "lexical", "relevance", "recency", "score")


@click.command()
@click.argument("query", required=False, default="")
@partition_options
@click.option("--preload", is_flag=True,
              help="Serve the best facts even when nothing matches the query (before-model use)")
@click.option("--explain", is_flag=True,
              help="List every in-scope fact with its scores and why it was served or left out")
@click.option("--clearance", default=None, metavar="LEVEL",
              help="normal < personal < health: the level and every level below it (all = health)  "
                   "[default: personal]")
@click.option("--min-confidence", "min_confidence", default=None, metavar="C",
              help="Minimum effective confidence, 0..1  [default: 0.7]")
@click.option("--max-age", "max_age", default=None, metavar="DURATION",
              help="Leave out facts last confirmed longer ago than this: 90d, 12w, 6m, 1y")
@click.option("--recency-weight", "recency_weight", default=None, metavar="W",
              help=f"Weight of recency against relevance, 0..1  [default: {DEFAULT_RECENCY_WEIGHT}]")
@click.option("--half-life", "half_life", default=None, metavar="DURATION",
              help=f"Age at which recency is one half  [default: {DEFAULT_HALF_LIFE_DAYS:g}d]")
@click.option("--limit", default=None, metavar="N", help=f"At most N facts  [default: {DEFAULT_LIMIT}]")
@click.option("--budget", default=None, metavar="WORDS", help="At most this many words of fact lines")
@click.option("--mode", default=None, type=click.Choice(["lexical", "semantic", "hybrid"]),
              help="Match by words, by meaning, or both  [default: hybrid with the semantic extra, else lexical]")
@click.option("--no-domain", "no_domain", is_flag=True, help="Leave out the app's shared _domain facts")
@click.option("--kind", "kinds", multiple=True, metavar="KIND",
              help="Only facts of this kind: preference, constraint, decision, fact, event, ... (repeatable)")
@click.option("--as-of", "as_of", metavar="TIME",
              help=f"Serve what the ledger would have served at TIME (its open facts then, scored then). "
                   f"{TIME_FORMATS}")
@click.option("--as", "served_to", envvar="FACTLEDGER_AS", default=None, metavar="NAME",
              help="Whom this output is for: the serve is recorded (docs/audit.md) on the primary, "
                   "before it is printed. Without it, recall is an inspection that writes nothing")
@output_options(help={"json": "Selected facts as JSON (with --explain: everything)",
                      "nl": "Newline-delimited JSON rows", "csv": "CSV rows", "table": "A table of rows"})
@pass_state
def recall(state, query, app, user, preload, explain, clearance, min_confidence, max_age,
           recency_weight, half_life, limit, budget, mode, no_domain, kinds, as_of, served_to, fmt) -> None:
    """Serve the current facts that belong in the next prompt, rendered for a model."""
    if not (query or "").strip() and not preload and not explain:
        raise click.UsageError("say what to recall (a QUERY), or --preload to serve the best facts without one")
    if served_to is not None and as_of is not None:
        raise click.UsageError("--as records a serve of the present; --as-of is an inspection of the past")
    # --as: a serve, read and recorded on the primary (never a replica); else a read-only inspection
    ledger = state.ledger() if served_to is not None else state.ledger(read_only=True)
    options = dict(clearance=clearance, min_confidence=min_confidence, max_age=max_age,
                   recency_weight=recency_weight, half_life=half_life, limit=limit, budget=budget,
                   preload=preload, domain=not no_domain, mode=mode, as_of=as_of, kinds=kinds or None)
    result = ledger.recall(app, user, query, explain=explain, served_to=served_to, surface="cli",
                           record=served_to is not None, **options)
    explained = result if explain else ledger.recall(app, user, query, explain=True, record=False, **options)
    if not explained.candidates:
        check_partition(ledger, app, user)
        check_as_of(ledger, as_of)
    report_withheld(result, explained)
    for text in result.notices:
        note(text)
    if fmt is None:
        click.echo(result.text)
        if explain:
            click.echo("")
            click.echo(to_table(explain_rows(result), EXPLAIN_COLUMNS))
        return
    if fmt == "json" and explain:
        click.echo(dumps(result.as_dict()))
        return
    if explain:
        emit(explain_rows(result), fmt, EXPLAIN_COLUMNS)
    else:
        emit(result.selected, fmt, SELECTED_COLUMNS)


WHY_WITHHELD = {"sensitivity": "not cleared (--clearance)", "confidence": "below --min-confidence",
                "age": "older than --max-age", "limit": "past --limit", "budget": "past --budget"}


def report_withheld(result, explained) -> None:
    """Stderr: how many facts of the scope were kept from the caller, and why (the block says
    the same to the model, `result.withheld`), with the sensitivities of those not cleared."""
    if not result.withheld:
        return
    kinds = Counter(c["sensitivity"] for c in explained.candidates if c["outcome"] == "sensitivity")
    parts = []
    for reason, n in result.withheld.items():
        detail = WHY_WITHHELD[reason]
        if reason == "sensitivity":
            detail += f": {', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}"
        parts.append(f"{n} {detail}")
    note(f"{sum(result.withheld.values())} facts withheld from this caller: {'; '.join(parts)} "
         "(the block above says how many and why, without their values)")


COMMANDS = (recall,)
