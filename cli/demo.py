"""`factledger demo`: the bundled examples, end to end, on a fresh ledger file, no API key needed.

Each step is a real `factledger` command run in-process and printed as a shell line, so the demo
doubles as a tour of the CLI.
"""

from __future__ import annotations

import shlex
import tempfile
from importlib.util import find_spec
from pathlib import Path

import click
import orjson
from click.testing import CliRunner

from factledger.ledger.service import display_location, is_fresh_server_location, is_server_location

MEAL = ["--app", "mealkit", "--user", "priya"]
CLINIC = ["--app", "clinic", "--user", "arun"]
DEPLOY = ["--app", "deploybot", "--user", "team-atlas"]
# The demo's public view: anonymous visitors read personal values too, so priya's city is seen
# moving (Pune -> Bengaluru -> erased -> Pune); the clinic's health values stay withheld (docs/ui.md).
PUBLIC_VIEW = "serve --public --public-clearance personal"
# The examples ship as package data (`factledger.examples`): found where the package is installed,
# a wheel's site-packages or a source checkout, without importing anything.
EXAMPLES = Path(find_spec("factledger.examples").origin).parent / "sessions"


def run(db: str, args: list[str], quiet: bool = False) -> str:
    """Run one factledger command in-process, echoing it as a shell line; returns its stdout.

    The command group is the one the demo itself runs under (the click context's root), so this
    module needs nothing from `cli.main`, which registers it."""
    root = click.get_current_context().find_root().command
    if not quiet:
        click.secho("\n$ factledger " + shlex.join(args), fg="cyan", bold=True)
    result = CliRunner().invoke(root, ["--db", db, *args], catch_exceptions=False)
    if not quiet:
        click.echo(result.stdout.rstrip())
    if result.exit_code:
        click.echo(result.stderr.rstrip(), err=True)
        raise click.ClickException(f"demo step failed: factledger {shlex.join(args)}")
    return result.stdout


@click.command()
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Keep the demo ledger at this path or postgresql:// URL (default: a temporary file, "
                   "or the global --db when that is a postgresql:// URL)")
def demo(out: str | None) -> None:
    """Run the bundled examples end to end on a fresh ledger."""
    workdir = None
    given = click.get_current_context().find_root().params.get("db")
    if out is None and given and is_server_location(given):
        out = given
    if out is not None and is_server_location(out):
        if not is_fresh_server_location(out):
            raise click.ClickException(f"{display_location(out)} already holds a ledger; the demo wants a fresh one "
                                       "(name a new ?schema=)")
    elif out is None:
        workdir = tempfile.TemporaryDirectory(prefix="factledger-demo-")
        out = str(Path(workdir.name) / "demo.db")
    elif Path(out).exists():
        raise click.ClickException(f"{out} exists; the demo wants a fresh ledger")
    else:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
    if not EXAMPLES.is_dir():
        raise click.ClickException(f"the bundled examples are not at {EXAMPLES} "
                                   "(the installation is incomplete: reinstall factledger)")

    run(out, ["init"])
    # Nine sessions (ADK JSON and JSONL), offline: the patterns extractor, no API key.
    run(out, ["ingest", str(EXAMPLES), "--extractor", "patterns", "-t"])
    run(out, ["ingest", str(EXAMPLES / "meal-kit"), "--extractor", "patterns", "-t"])   # again: nothing new
    run(out, ["sessions", *MEAL, "-t"])
    run(out, ["facts", *MEAL, "-t"])
    run(out, ["history", *MEAL, "--predicate", "home_city", "-t"])
    pune = [r for r in orjson.loads(run(out, ["history", *MEAL, "--predicate", "home_city", "--json"],
                                         quiet=True))
            if r["value"] == "Pune"][0]
    run(out, ["why", pune["fact_id"], "-t"])                  # a superseded value, and why
    run(out, ["recall", "where do I live and what do I eat?", *MEAL, "--clearance", "personal"])
    run(out, ["recall", "where do I live and what do I eat?", *MEAL, "--explain"])  # and why
    run(out, ["facts", *DEPLOY, "-t"])
    run(out, ["log", *DEPLOY, "--type", "CandidateRejected", "--nl"])   # the runbook, and why not
    run(out, ["facts", *CLINIC, "--clearance", "health", "-t"])
    run(out, ["facts", *CLINIC, "--clearance", "health", "--valid-at", "2026-07-05", "-t"])
    run(out, ["history", *CLINIC, "--predicate", "medication_dose", "-t"])
    run(out, ["stats", "-t"])
    run(out, ["verify", "-t"])
    # Right-to-forget: forget the session that said "We moved to Bengaluru"; Pune is
    # current again, the receipt names no one, and the chain and projections still check out.
    run(out, ["forget", *MEAL, "--session", "meal-2", "--reason", "demo: user request",
              "--requested-by", "dpo", "--yes", "-t"])
    run(out, ["facts", *MEAL, "--predicate", "home_city", "-t"])
    receipts = orjson.loads(run(out, ["erasures", "--json"], quiet=True))
    run(out, ["erasures", "-t"])
    run(out, ["report", "erasure", str(receipts[-1]["redaction_seq"])])   # for the compliance file
    run(out, ["partitions", "-t"])
    run(out, ["verify", "-t"])
    run(out, ["replay", "--check", "-t"])
    # Proofs an auditor can check (docs/audit.md): a signed checkpoint of the log's Merkle tree,
    # the inclusion proof of an event the forget just scrubbed (leaves are chain hashes, so it
    # holds), and verify against the checkpoint.
    with tempfile.TemporaryDirectory(prefix="factledger-demo-keys-") as keys:
        key, ckpt = str(Path(keys) / "demo.key"), str(Path(keys) / "demo.ckpt")
        run(out, ["keygen", "--out", key])
        run(out, ["checkpoint", "--key", key, "--out", ckpt])
        scrubbed = next(e["seq"] for e in orjson.loads(run(out, ["log", "--json"], quiet=True))
                        if e["redacted_by"] is not None)
        run(out, ["prove", str(scrubbed)])
        run(out, ["verify", "--checkpoint", ckpt, "--pubkey", key + ".pub", "-t"])
    if is_server_location(out):
        click.echo(f"\ndemo ledger kept at {display_location(out)}; explore it, e.g.\n"
                   f"  factledger --db {shlex.quote(out)} facts --app mealkit --user priya -t")
    elif workdir is not None:
        workdir.cleanup()
        click.echo("\nTo look at the demo ledger in a browser (the ui extra: pip install 'factledger[ui]'):\n"
                   f"  factledger demo --out demo.db && factledger --db demo.db {PUBLIC_VIEW}")
    else:
        click.echo(f"\ndemo ledger kept at {out}; explore it, e.g.\n"
                   f"  factledger --db {shlex.quote(out)} facts --app mealkit --user priya -t\n"
                   f"  factledger --db {shlex.quote(out)} log --app clinic --user arun -t\n"
                   "or look at it in a browser (pip install 'factledger[ui]'):\n"
                   f"  factledger --db {shlex.quote(out)} {PUBLIC_VIEW}")


COMMANDS = (demo,)
