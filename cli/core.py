"""The core commands: init, observe, facts, history, why, log, head, replay, verify, resolve, stats."""

from __future__ import annotations

import sys

import click

from factledger.ledger import LedgerError, make_candidate
from factledger.ledger.terminal import escape

from .context import partition_options, pass_state, require_partition
from .output import dumps, emit, emit_one, output_options, resolve_format
from .proofs import checkpoint_report, render_checkpoint

FACT_COLUMNS = ("subject", "predicate", "value", "status", "basis", "confidence",
                "effective_confidence", "said_at", "session", "fact_id")
HISTORY_COLUMNS = ("subject", "predicate", "value", "state", "valid_from", "valid_to",
                   "recorded_from", "recorded_to", "reason", "fact_id")
LOG_COLUMNS = ("seq", "type", "app", "user", "recorded_at", "redacted_by", "event_id")


@click.command()
@pass_state
def init(state) -> None:
    """Create an empty ledger (safe to run twice)."""
    ledger = state.ledger(create=True)
    click.echo(f"ledger ready at {ledger.path} ({len(ledger.registry)} predicates, "
               f"registry {ledger.registry.sha256[:12]})")


@click.command()
@partition_options
@click.option("--subject", default="user", show_default=True)
@click.option("--predicate", required=True)
@click.option("--value", required=True)
@click.option("--quote", required=True, help="The user's exact words")
@click.option("--session", required=True)
@click.option("--event-id", "event_id", required=True, help="Evidence event id")
@click.option("--said-at", "said_at", required=True, help="When it was said (ISO 8601)")
@click.option("--basis", default="stated", show_default=True, help="stated | inferred | verified")
@click.option("--author", default="user", show_default=True, help="user | agent | tool | document")
@click.option("--negated", is_flag=True, help="The statement retracts the value")
@click.option("--confidence", type=float, default=None)
@click.option("--effective-date", "effective_date", default=None, help="Date of a series reading")
@output_options
@pass_state
def observe(state, app, user, subject, predicate, value, quote, session, event_id, said_at, basis,
            author, negated, confidence, effective_date, fmt) -> None:
    """Offer one candidate fact; prints the decision the ledger took."""
    app, user = require_partition(app, user)
    candidate = make_candidate(
        app=app, user=user, subject=subject, predicate=predicate, value=value, quote=quote,
        session=session, evidence_event=event_id, said_at=said_at, basis=basis, author=author,
        negated=negated, confidence=confidence, effective_date=effective_date)
    outcome = state.ledger(create=True).observe(candidate).as_dict()
    emit_one(outcome, fmt, render=lambda o: (
        f"{o['decision']} {o['fact_id'] or ''} ({o['reason']}; rule {o['rule']}; "
        f"seqs {', '.join(map(str, o['seqs']))})"))


def _time_options(func):
    func = click.option("--valid-at", "valid_at", help="What was true at this time, by today's knowledge")(func)
    func = click.option("--as-of", "as_of", help="What the ledger believed at this time")(func)
    return func


@click.command()
@partition_options
@click.option("--subject")
@click.option("--predicate")
@_time_options
@click.option("--include-sensitive", is_flag=True, help="Include health-sensitive facts")
@output_options
@pass_state
def facts(state, app, user, subject, predicate, as_of, valid_at, include_sensitive, fmt) -> None:
    """Open facts of a partition (or, with --as-of / --valid-at, as they were)."""
    app, user = require_partition(app, user)
    rows = state.ledger().facts(app, user, subject=subject, predicate=predicate, as_of=as_of,
                                valid_at=valid_at, include_sensitive=include_sensitive)
    emit(rows, fmt, FACT_COLUMNS)


@click.command()
@partition_options
@click.option("--subject")
@click.option("--predicate")
@output_options
@pass_state
def history(state, app, user, subject, predicate, fmt) -> None:
    """Every state interval of every fact: the bitemporal record."""
    app, user = require_partition(app, user)
    emit(state.ledger().history(app, user, subject=subject, predicate=predicate), fmt,
         HISTORY_COLUMNS)


@click.command()
@click.argument("fact_id")
@output_options
@pass_state
def why(state, fact_id, fmt) -> None:
    """A fact's provenance: session, evidence event, quote, author, and every event that touched it."""
    emit_one(state.ledger().why(fact_id), fmt, render=render_why)


def render_why(report: dict) -> str:
    """For people; every stored string is escaped, so a quote cannot fake a provenance line."""
    f = {k: v if isinstance(v, (int, float)) and not isinstance(v, bool) else escape(str(v))
         for k, v in report["fact"].items()}
    lines = [
        f"{f['subject']} {f['predicate']} = {report['fact']['value']!r}  [{f['status']}, "
        f"{f['basis']}, confidence {report['fact']['confidence']:.2f}]",
        f"fact {f['fact_id']}  (app {f['app']}, user {f['user']})",
        f"said {f['said_at']} by {f['author']} in session {f['session']}, event {f['evidence_event']}:",
        f"  \"{f['quote']}\"",
        f"valid {f['valid_from']} .. {report['fact']['valid_to'] or 'now'}; last confirmed "
        f"{f['confirmed_at']} by session {f['confirmed_by']}",
        "events:",
    ]
    for e in report["events"]:
        body = e["body"] or {}
        detail = escape(body.get("rule") or body.get("reason") or "")
        session = f" session {escape(body['session'])}" if body.get("session") else ""
        lines.append(f"  seq {e['seq']:>6}  {escape(e['type']):<16} {escape(e['role']):<11} {detail}{session}"
                     + ("  (redacted)" if e["body"] is None else ""))
    return "\n".join(lines)


@click.command()
@click.option("--app")
@click.option("--user")
@click.option("--type", "type_", help="Only events of this type")
@click.option("--after", type=int, default=0, help="Only events after this seq")
@click.option("--limit", type=int, default=None, help="At most this many events")
@output_options
@pass_state
def log(state, app, user, type_, after, limit, fmt) -> None:
    """The event log itself, envelopes and bodies."""
    rows = state.ledger().log(app=app, user=user, type=type_, after=after, limit=limit)
    emit(rows, fmt, LOG_COLUMNS)


@click.command()
@pass_state
def head(state) -> None:
    """Print the latest SEQ:HASH, for pinning outside the ledger."""
    seq, digest = state.ledger().head()
    click.echo(f"{seq}:{digest}")


@click.command()
@click.option("--check", is_flag=True, help="Compare a rebuild with the live tables; exit 1 on any difference")
@output_options
@pass_state
def replay(state, check, fmt) -> None:
    """Rebuild every projection from the log (or, with --check, prove a rebuild matches)."""
    ledger = state.ledger()
    if check:
        problems = ledger.replay_differences()
        emit_one({"ok": not problems, "differences": problems}, fmt,
                 render=lambda r: "projections match a rebuild from the log" if r["ok"]
                 else "\n".join(r["differences"]))
        if problems:
            raise LedgerError("projections differ from a rebuild: " + "; ".join(problems))
        return
    total = ledger.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    with click.progressbar(length=total, label="replaying", file=sys.stderr,
                           hidden=not sys.stderr.isatty()) as bar:
        count = ledger.replay(progress=bar.update)
    emit_one({"replayed": count}, fmt, render=lambda r: f"replayed {r['replayed']} events")


@click.command()
@click.option("--expect-head", "expect_head", help="SEQ:HASH the log must still extend")
@click.option("--checkpoint", "checkpoint_file", type=click.Path(dir_okay=False),
              help="Also check this checkpoint: origin, root of the log's tree at its size")
@click.option("--pubkey", type=click.Path(dir_okay=False), help="The log's public key: check the signature")
@click.option("--witness", "witnesses", multiple=True, type=click.Path(dir_okay=False),
              help="A witness's public key whose cosignature is required (repeatable)")
@click.option("--quorum", type=click.IntRange(min=0), default=None,
              help="How many of the --witness keys must have cosigned (default: all)")
@click.option("--older", type=click.Path(dir_okay=False),
              help="An older checkpoint the --checkpoint must be consistent with")
@output_options
@pass_state
def verify(state, expect_head, checkpoint_file, pubkey, witnesses, quorum, older, fmt) -> None:
    """Recompute the hash chain and commitments; exit 1 naming the first bad seq (or failed check)."""
    if (pubkey or witnesses or older or quorum is not None) and not checkpoint_file:
        raise click.UsageError("--pubkey, --witness, --quorum and --older check a --checkpoint")
    result = state.ledger().verify(expect_head)
    if result["ok"]:
        if checkpoint_file:
            result["checkpoint"] = checkpoint_report(state.ledger(), checkpoint_file, pubkey, witnesses,
                                                     quorum, older)
        emit_one(result, fmt, render=lambda r: (
            f"ok: {r['events']} events verified ({r['redacted']} redacted), head {r['head']}"
            + (render_checkpoint(r["checkpoint"]) if "checkpoint" in r else "")))
        return
    if resolve_format(fmt) in ("json", "nl"):
        click.echo(dumps(result, pretty=fmt == "json"))
    raise LedgerError(f"chain broken at seq {result['first_bad_seq']}: {result['problem']}")


@click.command()
@click.argument("fact_id")
@click.option("--accept", is_flag=True, help="The fact is right")
@click.option("--reject", is_flag=True, help="The fact is wrong")
@click.option("--by", "by", required=True, help="Who settles it")
@click.option("--reason", required=True)
@output_options
@pass_state
def resolve(state, fact_id, accept, reject, by, reason, fmt) -> None:
    """A reviewer settles a dispute (DisputeResolved)."""
    if accept == reject:
        raise click.UsageError("say exactly one of --accept or --reject")
    outcome = state.ledger().resolve(fact_id, accept, by, reason).as_dict()
    emit_one(outcome, fmt, render=lambda o: f"{o['reason']}ed {fact_id} (seq {o['seqs'][0]})")


@click.command()
@output_options
@pass_state
def stats(state, fmt) -> None:
    """Counts: events, facts, open facts, held candidates, events per fact."""
    emit_one(state.ledger().stats(), fmt)


COMMANDS = (init, observe, facts, history, why, log, head, replay, verify, resolve, stats)
