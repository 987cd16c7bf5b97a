"""`factledger demo`: the bundled examples, end to end, on a fresh ledger file, no API key needed.

Each step is a real `factledger` command run in-process and printed as a shell line after one line
saying what to notice, so the demo doubles as a tour of the CLI.  The clock is pinned to the
examples' own calendar (June to November 2026), so every as-of, valid-at and timeline view has a
story to tell.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from importlib.util import find_spec
from pathlib import Path

import click
import orjson
from click.testing import CliRunner

from factledger.ledger.service import EVENT, display_location, is_fresh_server_location, is_server_location

MEAL = ["--app", "mealkit", "--user", "priya"]
CLINIC = ["--app", "clinic", "--user", "arun"]
DEPLOY = ["--app", "deploybot", "--user", "team-atlas"]
# The demo's public view: anonymous visitors read personal values too, so priya's city is seen
# moving (Pune -> Bengaluru -> erased -> Pune); the clinic's health values stay withheld (docs/ui.md).
PUBLIC_VIEW = "serve --public --public-clearance personal"
# The examples ship as package data (`factledger.examples`): found where the package is installed,
# a wheel's site-packages or a source checkout, without importing anything.
EXAMPLES = Path(find_spec("factledger.examples").origin).parent / "sessions"


# The demo's calendar: each session is ingested a few minutes after it ended, so the ledger's
# transaction times tell the same story as the sessions' own (as-of, valid-at and the web
# timeline all have months to show); the forget comes weeks after the last session.
CALENDAR = (("deployment/a-regions.jsonl", "2026-06-01T09:05:00Z"),
            ("deployment/b-runbook.jsonl", "2026-06-15T14:05:00Z"),
            ("deployment/c-moved.jsonl", "2026-07-01T10:05:00Z"),
            ("clinical/1-discharge-order.json", "2026-07-03T10:05:00Z"),
            ("clinical/2-dose-change.json", "2026-07-10T08:40:00Z"),
            ("clinical/3-second-reading.json", "2026-07-17T08:35:00Z"),
            ("meal-kit/1-vegetarian-in-pune.json", "2026-08-30T09:05:00Z"),
            ("meal-kit/2-moved-to-bengaluru.json", "2026-09-30T18:10:00Z"),
            ("meal-kit/3-pescatarian.json", "2026-10-28T12:05:00Z"))
INSPECTED_AT = "2026-11-02T09:00:00Z"      # an auditor looks the ledger over
FORGOTTEN_AT = "2026-11-20T10:00:00Z"      # priya asks to be forgotten the move
BEFORE_THE_MOVE = "2026-09-15"


class Tour:
    """The demo's steps: each a real `factledger` command run in-process at a pinned time
    (FACTLEDGER_NOW), printed as a shell line after one line saying what to notice."""

    def __init__(self, db: str):
        self.db = db
        self.now = CALENDAR[0][1]

    def at(self, when: str) -> Tour:
        self.now = when
        return self

    def run(self, args: list[str], notice: str | None = None, quiet: bool = False) -> str:
        """Run one command, echoing it as a shell line (and `notice` above it); returns its stdout.
        The command group is the one the demo runs under (the click context's root), so this
        module needs nothing from `cli.main`, which registers it."""
        root = click.get_current_context().find_root().command
        if not quiet:
            if notice:
                click.secho(f"\n# {self.now[:10]}: {notice}", fg="yellow")
            click.secho("$ factledger " + shlex.join(args), fg="cyan", bold=True)
        result = CliRunner().invoke(root, ["--db", self.db, *args], catch_exceptions=False,
                                    env={"FACTLEDGER_NOW": self.now})
        if not quiet:
            click.echo(result.stdout.rstrip())
        if result.exit_code:
            click.echo(result.stderr.rstrip(), err=True)
            raise click.ClickException(f"demo step failed: factledger {shlex.join(args)}")
        return result.stdout


def runnable() -> str:
    """How to run `factledger` again from here: the command this process was started as, relative
    to the working directory when it lies below it (`.venv/bin/factledger` after `make demo`),
    else `factledger` (on the PATH)."""
    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if started is None or started.name != "factledger" or not started.exists():
        return "factledger"
    try:
        return str(started.resolve().relative_to(Path.cwd().resolve())) if started.is_absolute() else str(started)
    except ValueError:
        return str(started)


def _fresh_file(out: str, replace: bool) -> None:
    """A file ledger for the demo: a new path, or an old demo ledger the caller said to replace."""
    path = Path(out)
    if path.exists() and not replace:
        raise click.ClickException(
            f"{out} exists; the demo wants a fresh ledger: run it again with --replace to start {out} "
            "afresh, or name another file with --out NEW.db")
    if path.exists():
        for stale in (path, Path(out + "-wal"), Path(out + "-shm"), Path(out + ".key"), Path(out + ".key.pub"),
                      Path(out + ".ckpt")):
            stale.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)


@click.command()
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Keep the demo ledger at this path or postgresql:// URL (default: the global --db when "
                   "given, else a temporary file)")
@click.option("--replace", is_flag=True, help="Start an existing demo ledger file afresh")
def demo(out: str | None, replace: bool) -> None:
    """Run the bundled examples end to end on a fresh ledger, at the examples' own dates."""
    workdir = None
    root = click.get_current_context().find_root()
    named = root.get_parameter_source("db") not in (None, click.core.ParameterSource.DEFAULT)
    given = root.params.get("db") if named else None     # --db typed or FACTLEDGER_DB, not the default
    if out is None and given:
        out = given
    if out is not None and is_server_location(out):
        if not is_fresh_server_location(out):
            raise click.ClickException(f"{display_location(out)} already holds a ledger; the demo wants a fresh one "
                                       "(name a new ?schema=)")
    elif out is None:
        workdir = tempfile.TemporaryDirectory(prefix="factledger-demo-")
        out = str(Path(workdir.name) / "demo.db")
    else:
        _fresh_file(out, replace)
    if not EXAMPLES.is_dir():
        raise click.ClickException(f"the bundled examples are not at {EXAMPLES} "
                                   "(the installation is incomplete: reinstall factledger)")
    tour = Tour(out)
    run = tour.run
    run(["init"], "a new ledger: the log, its projections and the registry's hash")
    for name, ingested_at in CALENDAR:
        tour.at(ingested_at)
        run(["ingest", str(EXAMPLES / name), "--extractor", "patterns", "-t"],
            f"session {Path(name).stem}, read offline by the registry's patterns (no API key)")
    run(["ingest", str(EXAMPLES / "meal-kit"), "--extractor", "patterns", "-t"],
        "the same sessions again: watermarks make re-ingestion append nothing")
    tour.at(INSPECTED_AT)
    run(["sessions", *MEAL, "-t"], "three sessions of priya's, each with its watermark and digest")
    run(["facts", *MEAL, "-t"], "what is current now: she moved to Bengaluru and eats fish")
    run(["facts", *MEAL, "--as-of", BEFORE_THE_MOVE, "-t"],
        f"what the ledger believed on {BEFORE_THE_MOVE}: Pune, vegetarian (transaction time)")
    run(["history", *MEAL, "--predicate", "home_city", "-t"], "the city's history: Pune, then Bengaluru")
    pune = [r for r in orjson.loads(run(["history", *MEAL, "--predicate", "home_city", "--json"], quiet=True))
            if r["value"] == "Pune"][0]
    run(["why", pune["fact_id"], "-t"], "why Pune is no longer current: who said what, when")
    run(["recall", "where do I live and what do I eat?", *MEAL, "--clearance", "personal"],
        "the block an agent gets before answering: data, dated, never instructions")
    run(["recall", "where do I live and what do I eat?", *MEAL, "--explain"],
        "and why each fact was served or left out")
    run(["facts", *DEPLOY, "-t"], "a team's deploy region: a runbook's 'all teams must use' is not their preference")
    run(["log", *DEPLOY, "--type", EVENT.CandidateRejected, "--nl"], "the rejected runbook line, and the rule")
    run(["facts", *CLINIC, "--clearance", "health", "-t"], "health facts: shown only at health clearance")
    run(["facts", *CLINIC, "--clearance", "health", "--valid-at", "2026-07-05", "-t"],
        "what was true on 2026-07-05 by today's knowledge: the discharge dose")
    run(["history", *CLINIC, "--predicate", "medication_dose", "-t"], "the dose change a week later")
    run(["stats", "-t"], "the whole ledger in numbers")
    run(["verify", "-t"], "every hash link, every commitment, every projection row checks out")
    # Right-to-forget: forget the session that said "We moved to Bengaluru"; Pune is current
    # again, the receipt names no one, and the chain and projections still check out.
    tour.at(FORGOTTEN_AT)
    run(["forget", *MEAL, "--session", "meal-2", "--reason", "demo: user request", "--requested-by", "dpo",
         "--yes", "-t"], "priya asks to forget the session about her move: redaction plus replay")
    run(["facts", *MEAL, "--predicate", "home_city", "-t"], "Pune is current again; Bengaluru is gone, not hidden")
    receipts = orjson.loads(run(["erasures", "--json"], quiet=True))
    run(["erasures", "-t"], "the receipt: counts and a scope hash, no personal data")
    run(["report", "erasure", str(receipts[-1]["redaction_seq"])], "the erasure report for the compliance file")
    run(["partitions", "-t"], "every partition, with its counts")
    run(["verify", "-t"], "the chain still verifies: scrubbed bodies, hashes unchanged")
    run(["replay", "--check", "-t"], "a rebuild from the log equals the live tables")
    # Proofs an auditor can check (docs/audit.md): a signed checkpoint of the log's Merkle tree,
    # the inclusion proof of an event the forget just scrubbed (leaves are chain hashes, so it
    # holds), and verify against the checkpoint.  Kept beside a kept ledger, to check again.
    with tempfile.TemporaryDirectory(prefix="factledger-demo-keys-") as keys:
        kept = workdir is None and not is_server_location(out)
        key = out + ".key" if kept else str(Path(keys) / "demo.key")
        ckpt = out + ".ckpt" if kept else str(Path(keys) / "demo.ckpt")
        run(["keygen", "--out", key], "a signing key for the log's checkpoints")
        run(["checkpoint", "--key", key, "--out", ckpt], "a signed checkpoint of the log's Merkle tree")
        scrubbed = next(e["seq"] for e in orjson.loads(run(["log", "--json"], quiet=True))
                        if e["redacted_by"] is not None)
        run(["prove", str(scrubbed)], "an inclusion proof of an event the forget scrubbed: it still holds")
        run(["verify", "--checkpoint", ckpt, "--pubkey", key + ".pub", "-t"], "the log against the checkpoint")
    me = runnable()
    if is_server_location(out):
        click.echo(f"\ndemo ledger kept at {display_location(out)}; explore it, e.g.\n"
                   f"  {me} --db {shlex.quote(out)} facts --app mealkit --user priya -t")
    elif workdir is not None:
        workdir.cleanup()
        click.echo("\nTo keep the demo ledger and look at it in a browser (the ui extra: pip install "
                   "'factledger[ui]'):\n"
                   f"  {me} demo --out demo.db && {me} --db demo.db {PUBLIC_VIEW}")
    else:
        db = shlex.quote(out)
        click.echo(f"\ndemo ledger kept at {out}; explore it, e.g.\n"
                   f"  {me} --db {db} facts --app mealkit --user priya --as-of {BEFORE_THE_MOVE} -t\n"
                   f"  {me} --db {db} history --app mealkit --user priya --predicate home_city -t\n"
                   f"  {me} --db {db} log --app clinic --user arun -t\n"
                   f"  {me} --db {db} verify --checkpoint {shlex.quote(out + '.ckpt')} "
                   f"--pubkey {shlex.quote(out + '.key.pub')}\n"
                   "or look at it in a browser (pip install 'factledger[ui]'):\n"
                   f"  {me} --db {db} {PUBLIC_VIEW}")


COMMANDS = (demo,)
