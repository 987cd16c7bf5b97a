"""Forgetting commands: forget, erasures, retain, export, import.  Parsing and printing only."""

from __future__ import annotations

import sys

import click

from factledger.cli.context import pass_state
from factledger.cli.files import private_file, refuse_evidence
from factledger.cli.notices import check_partition, note
from factledger.cli.output import dumps, emit, emit_one, output_options
from factledger.cli.partition import all_option, check_whole_ledger, partition_options
from factledger.cli.progress import Bars
from factledger.ledger import LedgerError
from factledger.ledger.forget.erase import check_words
from factledger.ledger.vocabulary.terminal import escape

# The receipt's table (--json adds its event id: redaction_seq names it here)
ERASURE_COLUMNS = ("redaction_seq", "recorded_at", "scope_kind", "scope_hash", "events", "reason", "ticket",
                   "requester")


def interactive() -> bool:
    """Whether a person is at the keyboard (then forget asks before scrubbing)."""
    return sys.stdin.isatty()


# The words a plan and its receipt both count in (a receipt's `counts` keys, worded)
COUNTS = {"events": "events scrubbed", "facts": "facts forgotten", "sessions": "sessions forgotten whole",
          "keys": "keys decided again", "restated": "events recorded again"}


def render_plan(r: dict) -> str:
    """The plan shown before the question: headed as a plan, since nothing has happened yet."""
    return render_receipt(r, heading="plan: what will be scrubbed if you confirm (nothing changed yet)")


def render_receipt(r: dict, heading: str | None = None) -> str:
    if r.get("dry_run"):
        lines = [f"{heading or 'dry run: nothing was changed'} ({r['scope_kind']} {r['scope_hash']})"]
        for p in r.get("plan", []):
            by_type = ", ".join(f"{k} {v}" for k, v in p["events_by_type"].items()) or "none"
            lines += [f"  events to scrub: {p['events']} ({by_type})",
                      f"  seqs: {', '.join(map(str, p['target_seqs'])) or '-'}",
                      f"  {COUNTS['facts']}: {len(p['facts'])}" +
                      (f" ({', '.join(p['facts'])})" if p["facts"] else ""),
                      f"  {COUNTS['keys']}: {len(p['keys'])}" + (f" ({', '.join(p['keys'])})" if p["keys"] else ""),
                      f"  {COUNTS['sessions']}: {p['sessions']}"]
            if p.get("pseudonymised"):
                lines.append(f"  events pseudonymised: {p['pseudonymised']}")
        if not r.get("plan"):
            lines.append("  nothing to forget")
        lines.append(f"  compensating events: {r.get('compensating_events', len(r['compensating_seqs']))}")
        return "\n".join(lines)
    if r["noop"] and r.get("already_erased_at") is not None:
        return (f"already erased at seq {r['already_erased_at']} ({r['scope_kind']} {r['scope_hash']}): "
                "nothing left to forget; no event changed")
    if r["noop"]:
        return (f"nothing to forget ({r['scope_kind']} {r['scope_hash']}): no event changed; "
                "0 events, 0 facts")
    counts = ", ".join(f"{COUNTS.get(k, k)} {v}" for k, v in r["counts"].items())
    purge = r.get("purge") or {}
    return "\n".join([
        f"forgotten: {r['scope_kind']} {r['scope_hash']}",
        f"redaction: seq {r['redaction_seq']}, event {r['event_id']}, at {r['recorded_at']}"
        + (f", ticket {escape(r['ticket'])}" if r.get("ticket") else ""),
        f"counts: {counts}",
        f"compensating events: {len(r['compensating_seqs'])}"
        + (f" (seqs {', '.join(map(str, r['compensating_seqs']))})" if r["compensating_seqs"] else ""),
        (f"tables vacuumed ({'VACUUM FULL' if purge['full'] else 'VACUUM'}, {purge['tables']} tables)"
         + (f"; {purge['held_back']} old row versions held back by an open transaction"
            if purge.get("held_back") else "")
         + (f"; the forgotten bytes {purge['bytes']}" if purge.get("bytes") else "")
         if "tables" in purge else
         f"wal: {purge.get('checkpoint', '-')}" + (", file vacuumed" if purge.get("vacuumed") else "")),
    ])


@click.command()
@partition_options
@click.option("--session", help="Forget one session of the user")
@click.option("--fact", "fact", help="Forget one fact (by fact id)")
@click.option("--predicate", help="Forget every fact of this predicate for the user")
@click.option("--sensitivity", help="Forget every fact of this sensitivity class (e.g. health)")
@click.option("--reason", help="Why (required): recorded in the Redacted event and the receipt")
@click.option("--requested-by", "requested_by", help="Who asked (recorded; no personal data please)")
@click.option("--ticket", help="External reference (case number), recorded in the receipt; no personal data")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation")
@click.option("--vacuum/--no-vacuum", default=None,
              help="SQLite: --vacuum also compacts the file.  PostgreSQL: VACUUM FULL of the touched tables is "
                   "the default; --no-vacuum defers it (the bytes stay in freed page space until the next VACUUM FULL)")
@output_options
@pass_state
def forget(state, app, user, session, fact, predicate, sensitivity, reason, requested_by, ticket,
           dry_run, yes, vacuum, fmt) -> None:
    """Erase a user, or one session, fact, predicate or sensitivity class of it; prints the receipt."""
    check_words(reason, requested_by)          # bad input before the ledger is even opened
    ledger = state.ledger(leave_schema=dry_run)  # a dry run changes nothing, not even the schema
    options = dict(session=session, fact=fact, predicate=predicate, sensitivity=sensitivity,
                   reason=reason, requested_by=requested_by, ticket=ticket)
    if not dry_run and not yes:
        preview = ledger.forget(app, user, dry_run=True, **options)
        confirm(preview, "forget")
    receipt = ledger.forget(app, user, dry_run=dry_run, vacuum=vacuum, **options)
    if receipt.get("noop"):
        earlier = ledger.erased.already_erased_at(app, user, session=session, fact=fact,
                                           scope=(receipt["scope_kind"], receipt["scope_hash"]))
        if earlier is not None:
            receipt["already_erased_at"] = earlier
            note(f"already erased at seq {earlier} (`factledger erasures` lists the receipt)")
        else:
            check_partition(ledger, app, user)
    warn_freed_pages(receipt)
    emit_one(receipt, fmt, render=render_receipt)


def warn_freed_pages(receipt: dict) -> None:
    """A plain VACUUM (PostgreSQL, `--no-vacuum`) removes the dead rows, but their bytes stay in
    freed page space until a VACUUM FULL (docs/forgetting.md): say so, whatever the format."""
    purge = receipt.get("purge") or {}
    if purge.get("held_back"):
        note(f"{purge['held_back']} old row versions of the scrubbed rows are still visible to an open "
             f"transaction (tables: {', '.join(purge['held_back_tables'])}): VACUUM cannot remove them until "
             "it ends; run VACUUM on those tables then (docs/forgetting.md)")
    if "tables" in purge and not purge.get("full"):
        indexes = (" and the indexes keep the old rows' indexed columns (app, user, subject, predicate, session) "
                   "until a VACUUM cleans them" if purge.get("index_entries") else "")
        why = (f"VACUUM FULL could not take the lock of {', '.join(purge['not_rewritten'])} (a long transaction)"
               if purge.get("not_rewritten") else "the rewrite was deferred (--no-vacuum)")
        note(f"{why}: the forgotten bytes remain in freed page space until the next VACUUM FULL{indexes}; "
             "`forget --vacuum` (or the operator's VACUUM FULL) rewrites the tables; `factledger residue` says "
             "so until then")


def confirm(preview: dict, command: str) -> None:
    """Show the plan on stderr, then ask the person at the terminal.

    With nobody at the keyboard (stdin is not a terminal) and no --yes, refuse: exit 1, nothing
    changed.  The plan was computed by a rolled-back dry run, so bad input has already been
    reported with its own message.  A plan with nothing in it needs no answer at a terminal.
    """
    click.echo(render_plan(preview), err=True)
    if not interactive():
        raise LedgerError(f"{command} erases for good and there is no terminal to confirm at: "
                          "pass --yes to go ahead (or --dry-run for the plan alone); nothing was changed")
    if preview.get("plan") and not click.confirm("Scrub these events? This cannot be undone", err=True):
        raise LedgerError("not confirmed; nothing was changed")


@click.command()
@partition_options(required=False, help_app="Only receipts of this app (env FACTLEDGER_APP)",
                   help_user="With --app: only receipts of this user, found by hashing the id as the "
                   "receipt does (env FACTLEDGER_USER)")
@click.option("--session", help="With --app/--user: only receipts that forgot this session")
@click.option("--ticket", help="Only receipts recorded with this external reference (`forget --ticket`)")
@output_options
@pass_state
def erasures(state, app, user, session, ticket, fmt) -> None:
    """List erasure receipts (one per redaction), newest last.

    With --app and --user (and --session) only the receipts of that data subject: found by hashing
    the ids the way the receipts do, so the receipts still name no one.  With --ticket only the
    receipts of that case (surrounding spaces and letter case forgiven).
    """
    if user is not None and app is None:
        raise LedgerError("--user needs --app")
    if session is not None and user is None:
        raise LedgerError("--session needs --app and --user")
    ledger = state.ledger(read_only=True)
    rows = ledger.erasures(app, ticket=ticket)
    if user is not None:
        seqs = ledger.erased.receipt_seqs(app, user, session)
        rows = [r for r in rows if r["redaction_seq"] in seqs]
        if not rows:
            note(f"no erasure receipt for this {'session' if session else 'user'} of app {app!r}"
                 " (ids are matched exactly, as hashed)")
    if ticket is not None and ticket.strip() and not rows:
        known = sorted({t for t in ledger.erased.receipt_tickets().values() if t})
        note(f"no erasure receipt with ticket {ticket.strip()!r}" + (
            f" (tickets recorded: {', '.join(known)})" if known else " (no receipt records a ticket)"))
    emit(rows, fmt, ERASURE_COLUMNS)


@click.command()
@click.option("--apply", "apply_", is_flag=True, help="Really forget (default: a dry run)")
@click.option("--older-than", "older_than", type=int, help="Days, for the class given")
@click.option("--predicate", help="Class: one predicate")
@click.option("--sensitivity", help="Class: a sensitivity (normal, personal, health)")
@click.option("--serves-older-than", "serves_older_than", type=int,
              help="Days: expire serve records served longer ago (a run of its own; the registry's "
                   "[serves] retention_days is applied by a run of the whole policy)")
@partition_options(required=False, help_app="Only this app (env FACTLEDGER_APP)",
                   help_user="Only this user, with --app (env FACTLEDGER_USER)")
@all_option
@click.option("--reason", help="Recorded in the receipt (default: retention policy)")
@click.option("--requested-by", "requested_by")
@click.option("--yes", "-y", is_flag=True, help="With --apply: do not ask for confirmation")
@click.option("--vacuum/--no-vacuum", default=None,
              help="SQLite: --vacuum also compacts the file.  PostgreSQL: VACUUM FULL of the touched tables is "
                   "the default; --no-vacuum defers it (the bytes stay in freed page space until the next VACUUM FULL)")
@output_options
@click.pass_context
def retain(ctx, apply_, older_than, predicate, sensitivity, serves_older_than, app, user, all_, reason,
           requested_by, yes, vacuum, fmt) -> None:
    """Forget facts past retention: each predicate's retention_days, or --older-than for a class;
    serve records past the registry's [serves] retention_days, or --serves-older-than.

    Acts on every partition only with --all; --app (and --user) limit it to one.
    """
    check_whole_ledger(ctx, all_, app, user, "retain")
    if user is not None and app is None:
        raise LedgerError("--user needs --app")
    options = dict(older_than=older_than, predicate=predicate, sensitivity=sensitivity, app=app,
                   user=user, reason=reason, requester=requested_by, serves_older_than=serves_older_than)
    ledger = ctx.obj.ledger(leave_schema=not apply_)   # a plan changes nothing, not even the schema
    if apply_ and not yes:
        confirm(ledger.retain(apply=False, **options), "retain --apply")
    receipt = ledger.retain(apply=apply_, vacuum=vacuum, **options)
    warn_freed_pages(receipt)
    emit_one(receipt, fmt, render=render_receipt)


@click.command(name="export")
@partition_options(required=False)
@all_option
@click.option("--data-subject", "data_subject", is_flag=True,
              help="Export one user's facts, history and events as one JSON object (needs --app/--user)")
@click.option("--include-third-parties", "third_parties", is_flag=True,
              help="With --data-subject: also the facts the user stated about other people (withheld by "
                   "default: docs/forgetting.md)")
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write here (created 0600) instead of stdout")
@click.pass_context
def export(ctx, app, user, all_, data_subject, third_parties, out) -> None:
    """The log as JSONL (hashes, commitments, salts; redacted events as envelopes).

    With --all: the whole log (what `import` loads).  With --app/--user: only that partition's
    events (for inspection; not importable).  With --data-subject: what the ledger holds about one
    user, as JSON.
    """
    if data_subject and (not app or not user):
        raise LedgerError("--data-subject needs --app and --user")
    if third_parties and not data_subject:
        raise LedgerError("--include-third-parties is for a --data-subject export")
    check_whole_ledger(ctx, all_, app, user, "export")
    if (app is None) != (user is None):
        raise LedgerError("export a partition with both --app and --user, or the whole log with --all")
    state = ctx.obj
    refuse_evidence(state, out)                 # before the ledger is opened
    ledger = state.ledger(read_only=True)
    if app is not None and user is not None:
        check_partition(ledger, app, user)          # an empty export says why on stderr
    if not out:
        if data_subject:
            sys.stdout.write(dumps(ledger.export_subject(app, user, third_parties)) + "\n")
        else:
            with Bars() as bars:
                ledger.export_log(sys.stdout, app, user, progress=bars)
        return
    # Into a temporary file beside FILE, renamed over it only when complete: a failed export
    # never truncates an earlier one.
    with private_file(out, prefix=".factledger-export-") as handle:
        if data_subject:
            handle.write(dumps(ledger.export_subject(app, user, third_parties)) + "\n")
            count = None
        else:
            with Bars() as bars:
                count = ledger.export_log(handle, app, user, progress=bars)
    if count is not None:
        click.echo(f"exported {count} events to {out}", err=True)


@click.command(name="import")
@click.argument("file", type=click.Path(dir_okay=False))
@output_options
@pass_state
def import_(state, file, fmt) -> None:
    """Load a whole-log export into an empty ledger; rebuilds projections and verifies."""
    with state.ledger_undone_on_error(create=True) as ledger:   # a failed import leaves no ledger
        with Bars() as bars:
            result = ledger.import_log(file, progress=bars)
    emit_one(result, fmt, render=lambda r: (
        f"imported {r['imported']} events ({r['redacted']} redacted); verified, head {r['head']}"))


COMMANDS = (forget, erasures, retain, export, import_)
