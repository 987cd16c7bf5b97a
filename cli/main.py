"""`factledger`: the command-line shell over `ledger.Ledger`.

The group names its commands in a table and imports a command's module only when that command
runs (or is asked for its own help): `factledger --version` and `factledger --help` import no
store, model, extractor or web view, and `factledger facts` none of the other commands' code
(docs/performance.md, "Imports that cost nothing").  The top-level `--help` lists each command by
the short help kept in the table; tests/project/test_import_cost.py checks it equals the command's own.
"""

from __future__ import annotations

from gettext import gettext
from importlib import import_module

import click

from factledger.cli.context import LedgerGroup, State

# command name -> ("module:attribute" under factledger.cli, the command's short help as
# `factledger --help` shows it before shortening to the terminal's width)
COMMANDS: dict[str, tuple[str, str]] = {
    "checkpoint": ("proofs:checkpoint",
                   "Issue a C2SP checkpoint of the log's Merkle tree, record it, print it for publication."),
    "cosign": ("proofs:cosign",
               "As a witness, add a cosignature to a checkpoint (no ledger needed): the log's signature and, "
               "given the previous checkpoint and a proof, consistency with it are checked first."),
    "demo": ("demo:demo", "Run the bundled examples end to end on a fresh ledger, at the examples' own dates."),
    "erasures": ("forget:erasures", "List erasure receipts (one per redaction), newest last."),
    "eval": ("ingest:evaluate",
             "Score an extractor on a probe set: recall, false-memory rate, entries per session."),
    "export": ("forget:export", "The log as JSONL (hashes, commitments, salts; redacted events as envelopes)."),
    "facts": ("core:facts", "Open facts of a partition (or, with --as-of / --valid-at, as they were)."),
    "forget": ("forget:forget",
               "Erase a user, or one session, fact, predicate or sensitivity class of it; prints the receipt."),
    "head": ("core:head",
             "Print the latest SEQ:HASH, for pinning outside the ledger (plain unless a format is asked)."),
    "history": ("core:history", "Every state interval of every fact: the bitemporal record."),
    "import": ("forget:import_",
               "Load a whole-log export into an empty ledger; rebuilds projections and verifies."),
    "ingest": ("ingest:ingest", "Ingest agent sessions: ADK JSON or JSONL files, directories, or - for stdin."),
    "init": ("core:init", "Create an empty ledger (safe to run twice)."),
    "keygen": ("proofs:keygen", "Make an Ed25519 key pair in Go's sumdb/note text format."),
    "log": ("core:log", "The event log itself, envelopes and bodies, streamed in seq order."),
    "mcp": ("mcp_command:mcp",
            "Serve the ledger as an MCP server: stdio for one partition, or streamable HTTP with tokens."),
    "observe": ("core:observe", "Offer one candidate fact; prints the decision the ledger took."),
    "partitions": ("reports:partitions",
                   "Apps and users in the ledger, with counts of events, open facts and held candidates."),
    "predicates": ("reports:predicates",
                   "The predicate registry: name, cardinality, sensitivity, kind, aliases, retention."),
    "prove": ("proofs:prove",
              "Inclusion proof of event SEQ, or (--from OLD --to NEW) a consistency proof, as JSON."),
    "query": ("query:query", "Run one read-only SQL statement; anything that would write is refused (exit 1)."),
    "recall": ("recall:recall", "Serve the current facts that belong in the next prompt, rendered for a model."),
    "repair": ("repair:repair",
               "Restore missing or altered triggers, indexes, tables; drop what the ledger did not make; print each."),
    "replay": ("core:replay",
               "Rebuild every projection from the log (or, with --check, prove a rebuild matches)."),
    "report": ("reports:report", "Printable records for the compliance file."),
    "residue": ("residue:residue",
                "List the places a forget cannot reach (WAL archive, replicas, slots, backups, dumps, copies)."),
    "resolve": ("core:resolve", "A reviewer settles a dispute (DisputeResolved)."),
    "retain": ("forget:retain",
               "Forget facts past retention: each predicate's retention_days, or --older-than for a class; "
               "serve records past the registry's [serves] retention_days, or --serves-older-than."),
    "review": ("ingest:review", "The review queue: held candidates (unknown predicate ...) and open disputes."),
    "served": ("served:served",
               "What was served, to whom, when: the recorded serves of a partition (no value, no query)."),
    "serve": ("serve:serve",
              "Serve the reviewer's web view of the ledger on Datasette (read-only; writes go through the ledger)."),
    "sessions": ("ingest:sessions", "A user's ingested sessions: watermark, counts and digest."),
    "stats": ("core:stats", "Counts: events, facts, open facts, held candidates, events per fact."),
    "verify": ("core:verify",
               "Recompute the hash chain and commitments, then check every projection a read serves from against "
               "the log (--log-only: the chain alone); exit 1 naming the first bad seq or row."),
    "why": ("why:why",
            "A fact's provenance: session, evidence event, quote, author; every event that touched it; and "
            "what replaced, disputed or retracted it, with who resolved it and why."),
}

# The demo makes its own ledger (--out): it takes no --db after its name.
_OWN_LEDGER = {"demo"}


class LazyGroup(LedgerGroup):
    """A group whose commands load on first use, from `COMMANDS`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in COMMANDS:
            command = load_command(cmd_name)
            if cmd_name not in _OWN_LEDGER:
                accept_db_after(command)
            self.add_command(command, cmd_name)
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]):
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            # click (8.4 on) suggests close names from the commands loaded so far: from all of them.
            no_such = getattr(click.exceptions, "NoSuchCommand", None)
            if no_such is None or not isinstance(exc, no_such):
                raise
            raise no_such(exc.command_name, possibilities=self.list_commands(ctx), ctx=ctx) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own listing, from the table's short help (shortened by click's own rule, through a
        # stand-in command) so that listing the commands imports none of them.
        rows = [(name, self.commands[name] if name not in COMMANDS else click.Command(name, help=COMMANDS[name][1]))
                for name in self.list_commands(ctx)]
        rows = [(name, command) for name, command in rows if not command.hidden]
        limit = formatter.width - 6 - max(len(name) for name, _ in rows)
        with formatter.section(gettext("Commands")):
            formatter.write_dl([(name, stand_in.get_short_help_str(limit)) for name, stand_in in rows])


def load_command(cmd_name: str) -> click.Command:
    """The click command `cmd_name` names in `COMMANDS`, its module imported now."""
    module, attribute = COMMANDS[cmd_name][0].split(":")
    return getattr(import_module(f"factledger.cli.{module}"), attribute)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", envvar="FACTLEDGER_DB", default="factledger.db", show_default=True,
              help="Ledger file, or a postgresql:// URL (?schema=NAME, default factledger) (env FACTLEDGER_DB)")
@click.option("--read-db", "read_db", envvar="FACTLEDGER_READ_DB", default=None, metavar="URL",
              help="Where read commands read: a replica of --db, e.g. a PostgreSQL hot standby's URL; "
                   "writes still go to --db (env FACTLEDGER_READ_DB)")
@click.option("--registry", envvar="FACTLEDGER_REGISTRY", default=None,
              help="Predicate registry TOML (env FACTLEDGER_REGISTRY; default: the packaged one)")
@click.option("--busy-timeout", "busy_timeout", envvar="FACTLEDGER_BUSY_TIMEOUT", default=5.0,
              show_default=True, type=click.FloatRange(min=0, max=3600),
              help="Seconds a writer waits for another to finish (env FACTLEDGER_BUSY_TIMEOUT)")
@click.option("--future-tolerance", "future_tolerance", envvar="FACTLEDGER_FUTURE_TOLERANCE",
              default="1d", show_default=True, metavar="DURATION",
              help="How far past the clock a said_at or session timestamp may be (6h, 1d, 0; "
                   "env FACTLEDGER_FUTURE_TOLERANCE)")
@click.version_option(package_name="factledger")     # the installed distribution's metadata
@click.pass_context
def cli(ctx: click.Context, db: str, read_db: str | None, registry: str | None, busy_timeout: float,
        future_tolerance: str) -> None:
    """An event-sourced, hash-chained ledger of facts about the users of AI agents."""
    state = State(db, registry, busy_timeout, future_tolerance, read_db)
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
