"""Forgetting commands: forget, erasures, retain, export, import.  Parsing and printing only."""

from __future__ import annotations

import os
import sys
import tempfile

import click

from factledger.ledger import LedgerError
from factledger.ledger.forget import check_words

from .context import partition_options, pass_state
from .output import dumps, emit, emit_one, output_options

ERASURE_COLUMNS = ("redaction_seq", "recorded_at", "scope_kind", "scope_hash", "events", "reason",
                   "requester", "event_id")


def interactive() -> bool:
    """Whether a person is at the keyboard (then forget asks before scrubbing)."""
    return sys.stdin.isatty()


def render_receipt(r: dict) -> str:
    if r.get("dry_run"):
        lines = [f"dry run: nothing was changed ({r['scope_kind']} {r['scope_hash']})"]
        for p in r.get("plan", []):
            by_type = ", ".join(f"{k} {v}" for k, v in p["events_by_type"].items()) or "none"
            lines += [f"  events to scrub: {p['events']} ({by_type})",
                      f"  seqs: {', '.join(map(str, p['target_seqs'])) or '-'}",
                      f"  facts forgotten: {len(p['facts'])}" +
                      (f" ({', '.join(p['facts'])})" if p["facts"] else ""),
                      f"  keys re-decided: {', '.join(p['keys']) or '-'}",
                      f"  sessions forgotten whole: {p['sessions']}"]
            if p.get("pseudonymised"):
                lines.append(f"  events pseudonymised: {p['pseudonymised']}")
        if not r.get("plan"):
            lines.append("  nothing to forget")
        lines.append(f"  compensating events: {len(r['compensating_seqs'])}")
        return "\n".join(lines)
    if r["noop"]:
        return (f"nothing to forget ({r['scope_kind']} {r['scope_hash']}): no event changed; "
                "0 events, 0 facts")
    counts = ", ".join(f"{k} {v}" for k, v in r["counts"].items())
    purge = r.get("purge") or {}
    return "\n".join([
        f"forgotten: {r['scope_kind']} {r['scope_hash']}",
        f"redaction: seq {r['redaction_seq']}, event {r['event_id']}, at {r['recorded_at']}",
        f"counts: {counts}",
        f"compensating events: {', '.join(map(str, r['compensating_seqs'])) or 'none'}",
        f"wal: {purge.get('checkpoint', '-')}" + (", file vacuumed" if purge.get("vacuumed") else ""),
    ])


@click.command()
@partition_options
@click.option("--session", help="Forget one session of the user")
@click.option("--fact", "fact", help="Forget one fact (by fact id)")
@click.option("--predicate", help="Forget every fact of this predicate for the user")
@click.option("--sensitivity", help="Forget every fact of this sensitivity class (e.g. health)")
@click.option("--reason", help="Why (required): recorded in the Redacted event and the receipt")
@click.option("--requested-by", "requested_by", help="Who asked (recorded; no personal data please)")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation")
@click.option("--vacuum", is_flag=True, help="Also VACUUM the file afterwards")
@output_options
@pass_state
def forget(state, app, user, session, fact, predicate, sensitivity, reason, requested_by, dry_run,
           yes, vacuum, fmt) -> None:
    """Erase a user, or one session, fact, predicate or sensitivity class of it; prints the receipt."""
    check_words(reason, requested_by)          # bad input before the ledger is even opened
    ledger = state.ledger()
    options = dict(session=session, fact=fact, predicate=predicate, sensitivity=sensitivity,
                   reason=reason, requested_by=requested_by)
    if not dry_run and not yes and interactive():
        preview = ledger.forget(app, user, dry_run=True, **options)
        click.echo(render_receipt(preview), err=True)
        if not preview.get("plan"):
            dry_run = False                    # a no-op needs no confirmation
        elif not click.confirm("Scrub these events? This cannot be undone", err=True):
            raise LedgerError("not confirmed; nothing was changed")
    receipt = ledger.forget(app, user, dry_run=dry_run, vacuum=vacuum, **options)
    emit_one(receipt, fmt, render=render_receipt)


@click.command()
@click.option("--app", help="Only redactions of this app")
@output_options
@pass_state
def erasures(state, app, fmt) -> None:
    """List erasure receipts (one per redaction), newest last."""
    emit(state.ledger().erasures(app), fmt, ERASURE_COLUMNS)


@click.command()
@click.option("--apply", "apply_", is_flag=True, help="Really forget (default: a dry run)")
@click.option("--older-than", "older_than", type=int, help="Days, for the class given")
@click.option("--predicate", help="Class: one predicate")
@click.option("--sensitivity", help="Class: a sensitivity (normal, personal, health)")
@click.option("--app", help="Only this app")
@click.option("--user", help="Only this user (with --app)")
@click.option("--reason", help="Recorded in the receipt (default: retention policy)")
@click.option("--requested-by", "requested_by")
@click.option("--vacuum", is_flag=True, help="Also VACUUM the file afterwards")
@output_options
@pass_state
def retain(state, apply_, older_than, predicate, sensitivity, app, user, reason, requested_by,
           vacuum, fmt) -> None:
    """Forget facts past retention: each predicate's retention_days, or --older-than for a class."""
    if user is not None and app is None:
        raise LedgerError("--user needs --app")
    receipt = state.ledger().retain(apply=apply_, older_than=older_than, predicate=predicate,
                                    sensitivity=sensitivity, app=app, user=user, reason=reason,
                                    requester=requested_by, vacuum=vacuum)
    emit_one(receipt, fmt, render=render_receipt)


@click.command(name="export")
@partition_options
@click.option("--data-subject", "data_subject", is_flag=True,
              help="Export one user's facts, history and events as one JSON object (needs --app/--user)")
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write here instead of stdout")
@pass_state
def export(state, app, user, data_subject, out) -> None:
    """The log as JSONL (hashes, commitments, salts; redacted events as envelopes).

    With --app/--user: only that partition's events (for inspection; not importable).
    With --data-subject: what the ledger holds about one user, as JSON.
    """
    if data_subject and (not app or not user):
        raise LedgerError("--data-subject needs --app and --user")
    if (app is None) != (user is None):
        raise LedgerError("export a partition with both --app and --user, or the whole log with neither")
    ledger = state.ledger()
    if not out:
        if data_subject:
            sys.stdout.write(dumps(ledger.export_subject(app, user)) + "\n")
        else:
            ledger.export_log(sys.stdout, app, user)
        return
    # Into a temporary file beside FILE, renamed over it only when complete: a failed export
    # never truncates an earlier one.
    folder = os.path.dirname(os.path.abspath(out))
    temp = None
    try:
        fd, temp = tempfile.mkstemp(prefix=".factledger-export-", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            if data_subject:
                handle.write(dumps(ledger.export_subject(app, user)) + "\n")
                count = None
            else:
                count = ledger.export_log(handle, app, user)
        os.replace(temp, out)
        temp = None
    except OSError as exc:
        raise LedgerError(f"cannot write {out}: {exc.strerror or exc}") from None
    finally:
        if temp is not None and os.path.exists(temp):
            os.remove(temp)
    if count is not None:
        click.echo(f"exported {count} events to {out}", err=True)


@click.command(name="import")
@click.argument("file", type=click.Path(dir_okay=False))
@output_options
@pass_state
def import_(state, file, fmt) -> None:
    """Load a whole-log export into an empty ledger; rebuilds projections and verifies."""
    created = not os.path.exists(state.db)
    try:
        result = state.ledger(create=True).import_log(file)
    except LedgerError:
        if created:                            # a failed import leaves no (empty) ledger behind
            state.close()
            for suffix in ("", "-wal", "-shm", "-journal"):
                if os.path.exists(state.db + suffix):
                    os.remove(state.db + suffix)
        raise
    emit_one(result, fmt, render=lambda r: (
        f"imported {r['imported']} events ({r['redacted']} redacted); verified, head {r['head']}"))


COMMANDS = (forget, erasures, retain, export, import_)
