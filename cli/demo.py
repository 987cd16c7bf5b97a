"""`factledger demo`: the bundled examples, end to end, on a fresh ledger file, no API key needed.

Each step is a real `factledger` command run in-process and printed as a shell line, so the demo
doubles as a tour of the CLI.
"""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path

import click

MEAL = ["--app", "mealkit", "--user", "priya"]
CLINIC = ["--app", "clinic", "--user", "arun"]

OBSERVATIONS = [
    # meal-kit support agent, session one: "I'm vegetarian, and we're in Pune"
    MEAL + ["--predicate", "diet", "--value", "vegetarian", "--quote", "I'm vegetarian",
            "--session", "meal-1", "--event-id", "m1-e1", "--said-at", "2026-08-30T09:00:00Z"],
    MEAL + ["--predicate", "city", "--value", "Pune", "--quote", "we're in Pune",
            "--session", "meal-1", "--event-id", "m1-e1", "--said-at", "2026-08-30T09:00:00Z"],
    # session two, a month later: a move, and an agent's guess
    MEAL + ["--predicate", "home_city", "--value", "Bengaluru", "--quote", "We moved to Bengaluru",
            "--session", "meal-2", "--event-id", "m2-e1", "--said-at", "2026-09-30T18:00:00Z"],
    MEAL + ["--predicate", "likes_spicy", "--value", "true", "--quote", "extra chilli on everything",
            "--session", "meal-2", "--event-id", "m2-e4", "--said-at", "2026-09-30T18:05:00Z",
            "--author", "agent", "--basis", "inferred"],
    # session three: a new diet
    MEAL + ["--predicate", "diet", "--value", "pescatarian",
            "--quote", "I eat fish now, so pescatarian options are fine",
            "--session", "meal-3", "--event-id", "m3-e1", "--said-at", "2026-10-28T12:00:00Z"],
    # a late re-ingest of session one: older news, rejected
    MEAL + ["--predicate", "home_city", "--value", "Pune", "--quote", "we're in Pune",
            "--session", "meal-1-replayed", "--event-id", "m1-e1", "--said-at", "2026-08-30T09:00:00Z"],
    # clinical follow-up: a verified order, a user's report, a verified change
    CLINIC + ["--predicate", "medication_dose", "--value", "metoprolol tartrate 25 mg",
              "--quote", "Start metoprolol tartrate 25 mg twice daily", "--session", "discharge",
              "--event-id", "d-e1", "--said-at", "2026-07-03T10:00:00Z", "--author", "document",
              "--basis", "verified"],
    CLINIC + ["--predicate", "medication_dose", "--value", "metoprolol tartrate 50 mg",
              "--quote", "my doctor said to take 50 mg now", "--session", "checkin-1",
              "--event-id", "c1-e2", "--said-at", "2026-07-10T08:30:00Z"],
    CLINIC + ["--predicate", "medication_dose", "--value", "metoprolol tartrate 50 mg",
              "--quote", "Increase metoprolol tartrate to 50 mg twice daily", "--session", "order-2",
              "--event-id", "o2-e1", "--said-at", "2026-07-12T16:00:00Z", "--author", "document",
              "--basis", "verified"],
    CLINIC + ["--predicate", "blood_pressure", "--value", "148/92 mmHg", "--quote",
              "my blood pressure was 148/92 mmHg", "--session", "checkin-1", "--event-id", "c1-e3",
              "--said-at", "2026-07-10T08:31:00Z"],
    CLINIC + ["--predicate", "blood_pressure", "--value", "148/92 mmHg", "--quote",
              "148/92 mmHg again this morning", "--session", "checkin-2", "--event-id", "c2-e1",
              "--said-at", "2026-07-17T08:00:00Z"],
]


def run(db: str, args: list[str]) -> str:
    """Run one factledger command in-process, echoing it as a shell line; returns its stdout."""
    from click.testing import CliRunner

    from .main import cli

    click.secho("\n$ factledger " + shlex.join(args), fg="cyan", bold=True)
    result = CliRunner().invoke(cli, ["--db", db, *args], catch_exceptions=False)
    click.echo(result.stdout.rstrip())
    if result.exit_code:
        click.echo(result.stderr.rstrip(), err=True)
        raise click.ClickException(f"demo step failed: factledger {shlex.join(args)}")
    return result.stdout


@click.command()
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Keep the demo ledger at this path (default: a temporary file)")
def demo(out: str | None) -> None:
    """Run the bundled examples end to end on a fresh ledger."""
    workdir = None
    if out is None:
        workdir = tempfile.TemporaryDirectory(prefix="factledger-demo-")
        out = str(Path(workdir.name) / "demo.db")
    elif Path(out).exists():
        raise click.ClickException(f"{out} exists; the demo wants a fresh ledger")
    run(out, ["init"])
    for args in OBSERVATIONS:
        run(out, ["observe", *args, "-t"])
    run(out, ["facts", *MEAL, "-t"])
    run(out, ["history", *MEAL, "--predicate", "home_city", "-t"])
    run(out, ["facts", *CLINIC, "--include-sensitive", "-t"])
    run(out, ["facts", *CLINIC, "--include-sensitive", "--valid-at", "2026-07-05", "-t"])
    run(out, ["history", *CLINIC, "--predicate", "medication_dose", "-t"])
    import orjson

    pune = [r for r in orjson.loads(run(out, ["history", *MEAL, "--predicate", "home_city", "--json"]))
            if r["value"] == "Pune"][0]
    run(out, ["why", pune["fact_id"], "-t"])
    run(out, ["stats", "-t"])
    run(out, ["verify", "-t"])
    if workdir is not None:
        workdir.cleanup()
    else:
        click.echo(f"\ndemo ledger kept at {out}")


COMMANDS = (demo,)
