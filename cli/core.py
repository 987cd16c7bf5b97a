"""The core commands: init, observe, facts, history, why, log, head, replay, verify, resolve, stats."""

from __future__ import annotations

import sys
from itertools import chain

import click

from factledger.cli.context import create_option, pass_state
from factledger.cli.notices import (
    check_partition,
    check_predicate,
    check_session,
    check_type,
    clearance_option,
    cleared,
    note,
    withhold,
)
from factledger.cli.output import cell, dumps, emit, emit_one, emit_stream, output_options, resolve_format
from factledger.cli.partition import partition_options
from factledger.cli.progress import Bars
from factledger.ledger import LedgerError, make_candidate
from factledger.ledger.domain.recall_options import AUDIT_CLEARANCE, DEFAULT_CLEARANCE
from factledger.ledger.vocabulary.bounds import check_jobs, check_log_window
from factledger.ledger.vocabulary.clock import normalise_time
from factledger.ledger.vocabulary.words import SENSITIVITIES

# What a table shows, chosen to fit 120 columns (--json carries every field): the facts table
# leaves out basis and the raw confidence, the log's the event id (seq names an event), and the
# history prints each fact once as a heading over its intervals.
FACT_COLUMNS = ("subject", "predicate", "value", "status", "effective_confidence", "said_at", "session",
                "fact_id")
HISTORY_COLUMNS = ("belief", "valid_from", "valid_to", "recorded_from", "recorded_to", "reason")
LOG_COLUMNS = ("seq", "type", "app", "user", "predicate", "value", "recorded_at", "redacted_by")


@click.command()
@pass_state
def init(state) -> None:
    """Create an empty ledger (safe to run twice)."""
    ledger = state.ledger(create=True)
    click.echo(f"ledger ready at {ledger.shown_location()} ({len(ledger.registry)} predicates, "
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
@click.option("--kind", default=None, metavar="KIND",
              help="A key of its own (a dotted --predicate) under this kind's rules: preference, constraint, "
                   "decision, fact, event, open_item (`factledger predicates --kinds`)")
@click.option("--sensitivity", default=None, type=click.Choice(SENSITIVITIES),
              help="Raise an open key's class above its kind's default "
                   "(never lowers; a registry predicate keeps its own)")
@create_option
@output_options
@pass_state
def observe(state, app, user, subject, predicate, value, quote, session, event_id, said_at, basis,
            author, negated, confidence, effective_date, kind, sensitivity, create, fmt) -> None:
    """Offer one candidate fact; prints the decision the ledger took.

    A value its quote does not support is held for review (decision `hold`, reason
    `unsupported_by_quote`): never served, listed by `factledger review`."""
    candidate = make_candidate(
        app=app, user=user, subject=subject, predicate=predicate, value=value, quote=quote,
        session=session, evidence_event=event_id, said_at=said_at, basis=basis, author=author,
        negated=negated, confidence=confidence, effective_date=effective_date, kind=kind,
        sensitivity=sensitivity)
    with state.ledger_undone_on_error(create) as ledger:   # a refused candidate leaves no new ledger
        outcome = ledger.observe(candidate).as_dict()
    emit_one(outcome, fmt, render=lambda o: (
        f"{o['decision']} {o['fact_id'] or ''} ({o['reason']}; rule {o['rule']}; "
        f"seqs {', '.join(map(str, o['seqs']))})"))


TIME_FORMATS = "ISO 8601: 2026-09-01 (midnight UTC), 2026-09-01T18:00:00Z or with an offset; no zone means UTC"
# recorded_from: when the ledger learnt the row (a value learnt late shows it after valid_to)
# (as-of and valid-at tables: the times carry the story; basis, confidence and ids are in --json)
TIME_COLUMNS = ("subject", "predicate", "value", "state", "valid_from", "valid_to", "recorded_from", "session")
VALID_AT_COLUMNS = tuple(c for name in TIME_COLUMNS if name != "session"
                         for c in (("state_then", "state_now") if name == "state" else (name,)))
STATUSES = ("current", "disputed", "superseded", "retracted")


def _time_options(func):
    func = click.option("--valid-at", "valid_at", metavar="TIME",
                        help=f"What was true at TIME, by today's knowledge. {TIME_FORMATS}")(func)
    func = click.option("--as-of", "as_of", metavar="TIME",
                        help=f"What the ledger believed at TIME (transaction time). {TIME_FORMATS}")(func)
    return func


def check_as_of(ledger, as_of: str | None) -> None:
    """An as-of before the first event answers nothing: say that nothing was recorded yet."""
    if as_of is None:
        return
    first = ledger.notices.first_recorded_at()
    at = normalise_time(as_of)
    if first is None or at < first:
        note(f"nothing had been recorded yet at {at}" +
             (f" (the first event was recorded at {first})" if first else " (the ledger is empty)"))


@click.command()
@partition_options
@click.option("--subject")
@click.option("--predicate")
@_time_options
@click.option("--status", type=click.Choice(STATUSES), multiple=True,
              help="Only facts in this state today (repeatable); --valid-at can show superseded and retracted")
@click.option("--kind", "kinds", multiple=True, metavar="KIND", help="Only facts of this kind (repeatable)")
@clearance_option(DEFAULT_CLEARANCE)
@click.option("--served", "with_served", is_flag=True,
              help="Add `served`: how many recorded serves handed out each fact (factledger served)")
@output_options
@pass_state
def facts(state, app, user, subject, predicate, as_of, valid_at, status, kinds, clearance, include_sensitive,
          with_served, fmt) -> None:
    """Open facts of a partition (or, with --as-of / --valid-at, as they were).

    Health facts are withheld unless cleared (--clearance health, which shows normal and personal
    facts too); the count withheld goes to stderr.
    """
    allowed = cleared(clearance, include_sensitive, DEFAULT_CLEARANCE)
    ledger = state.ledger(read_only=True)
    rows = ledger.facts(app, user, subject=subject, predicate=predicate, as_of=as_of,
                        valid_at=valid_at, include_sensitive=True, kinds=kinds or None)
    if not rows:
        check_partition(ledger, app, user)
        check_predicate(ledger, predicate, app, user)
        check_as_of(ledger, as_of)
    if status:
        rows = [r for r in rows if r["status"] in status]
        closed = sorted(set(status) & {"superseded", "retracted"})
        if closed and not rows and not (as_of or valid_at):
            note(f"{' and '.join(closed)} facts are not open now: add --valid-at TIME (what was true then) "
                 "or --as-of TIME, or see `factledger history`")
    rows = ledger.lookup.clearance_mask(app, user, allowed).rows(withhold(rows, allowed))
    if with_served:
        counts = ledger.serves.served_counts(app, user)
        rows = [{**r, "served": counts.get(r["fact_id"], 0)} for r in rows]
    if valid_at:
        emit([label_then(r) for r in rows], fmt, VALID_AT_COLUMNS)
        return
    columns = TIME_COLUMNS if as_of else FACT_COLUMNS
    if with_served:             # the count takes the place of the confidence in the table
        columns = tuple(c for c in columns if c != "effective_confidence") + ("served",)
    emit(rows, fmt, columns)


def label_then(row: dict) -> dict:
    """A row true at --valid-at T, labelled by its state then beside today's: a value superseded
    (or retracted) since was the current one inside its valid interval, so it reads "current" then,
    not "superseded" as if it had been wrong at T.  `state` (and --status) stay today's."""
    then = "current" if row["state"] in ("superseded", "retracted") else row["state"]
    return {**row, "state_then": then, "state_now": row["state"]}


@click.command()
@partition_options
@click.option("--subject")
@click.option("--predicate")
@clearance_option(AUDIT_CLEARANCE)
@output_options
@pass_state
def history(state, app, user, subject, predicate, clearance, include_sensitive, fmt) -> None:
    """Every state interval of every fact: the bitemporal record.

    An auditor's view: every level unless --clearance says less; text carrying a value above the
    clearance is masked."""
    allowed = cleared(clearance, include_sensitive, AUDIT_CLEARANCE)
    ledger = state.ledger(read_only=True)
    rows = ledger.history(app, user, subject=subject, predicate=predicate)
    if not rows:
        check_partition(ledger, app, user)
        check_predicate(ledger, predicate, app, user)
    rows = ledger.lookup.clearance_mask(app, user, allowed).rows(withhold(rows, allowed))
    emit([{**r, "belief": belief(r)} for r in rows], fmt, HISTORY_COLUMNS, heading=fact_heading,
         view=lambda r: {**r, "belief": r["state"] if r["recorded_to"] is None else f"was {r['state']}"})


def fact_heading(row: dict) -> str:
    """The history table's line over a fact's intervals: the fact, its id, and where it was said."""
    said = f', {row["author"]} said: "{row["quote"]}"' if row.get("quote") else ""
    return (f'{row["subject"]} {row["predicate"]} = {cell(row["value"])}   fact {row["fact_id"]}'
            f'   session {row["session"]}{said}')


def belief(row: dict) -> str:
    """The state an interval was believed in, worded so that only today's belief reads "current":
    an interval closed in transaction time (recorded_to set: a later event replaced the belief)
    reads "was current until T", so two intervals of one key never read as two current values."""
    if row["recorded_to"] is None:
        return row["state"]
    return f"was {row['state']} until {row['recorded_to'][:19]}Z"


@click.command()
@partition_options(required=False, help_app="Only events of this app (env FACTLEDGER_APP)",
                   help_user="Only events of this user (env FACTLEDGER_USER)")
@click.option("--type", "type_", help="Only events of this type")
@click.option("--predicate", help="Only events about this predicate (or an alias of it)")
@click.option("--session", help="Only events that name this session")
@click.option("--fact", "fact", help="Only events that touched this fact")
@click.option("--since", metavar="TIME", help=f"Only events recorded at or after TIME. {TIME_FORMATS}")
@click.option("--until", metavar="TIME", help=f"Only events recorded before TIME. {TIME_FORMATS}")
@click.option("--after", type=int, default=0, help="Only events after this seq")
@click.option("--limit", type=int, default=None, help="At most this many events")
@output_options
@pass_state
def log(state, app, user, type_, predicate, session, fact, since, until, after, limit, fmt) -> None:
    """The event log itself, envelopes and bodies, streamed in seq order."""
    check_log_window(after, limit)              # before the first byte of output
    check_type(type_)                           # no event of an unknown type can match
    ledger = state.ledger(read_only=True)
    spec = ledger.registry.resolve(predicate) if predicate else None
    rows = iter(ledger.stream_log(app=app, user=user, type=type_, after=after, limit=limit,
                                  predicate=spec.name if spec else predicate, session=session, fact=fact,
                                  since=since, until=until))
    first = next(rows, None)
    if first is None:                           # why nothing matched, before the empty answer
        if app is not None and user is not None:
            check_partition(ledger, app, user)
        check_predicate(ledger, predicate, app, user)
        check_session(ledger, app, user, session)
        emit_stream(iter(()), fmt, LOG_COLUMNS)
        return
    emit_stream(chain((first,), rows), fmt, LOG_COLUMNS)


@click.command()
@output_options
@pass_state
def head(state, fmt) -> None:
    """Print the latest SEQ:HASH, for pinning outside the ledger (plain unless a format is asked)."""
    seq, digest = state.ledger(read_only=True).head()
    if fmt is None:
        click.echo(f"{seq}:{digest}")
        return
    emit_one({"seq": seq, "hash": digest, "head": f"{seq}:{digest}"}, fmt,
             render=lambda r: r["head"])


@click.command()
@click.option("--check", is_flag=True, help="Compare a rebuild with the live tables; exit 1 on any difference")
@click.option("--jobs", default="1", show_default=True, metavar="N",
              help="Worker processes that fold the partitions (the rebuild still commits once)")
@output_options
@pass_state
def replay(state, check, jobs, fmt) -> None:
    """Rebuild every projection from the log (or, with --check, prove a rebuild matches)."""
    jobs = check_jobs(jobs)                    # refused before the ledger is opened
    ledger = state.ledger(read_only=check)
    if check:
        with Bars() as bars:
            problems = ledger.replay_differences(jobs=jobs, progress=bars)
        meaning = ledger.notices.meaning_index() if not problems else {}
        for text in meaning.pop("notices", ()):
            note(text)
        emit_one({"ok": not problems, "differences": problems, **({"meaning": meaning} if meaning else {})}, fmt,
                 render=lambda r: "projections match a rebuild from the log" if r["ok"]
                 else "\n".join(r["differences"]))
        if problems:
            raise LedgerError("projections differ from a rebuild: " + "; ".join(problems))
        return
    total = ledger.event_count()
    with click.progressbar(length=total, label="replaying", file=sys.stderr,
                           hidden=not sys.stderr.isatty()) as bar:
        count = ledger.replay(progress=bar.update, jobs=jobs)
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
@click.option("--log-only", "log_only", is_flag=True,
              help="Check the chain, commitments and triggers only, not the projections reads serve from")
@click.option("--vectors", is_flag=True,
              help="Also recompute every open fact's meaning vector (an embedding each: slow on a large ledger)")
@click.option("--full", is_flag=True,
              help="Refold the whole log, even where the record of the last full check lets verify refold only"
                   " what changed since")
@output_options
@pass_state
def verify(state, expect_head, checkpoint_file, pubkey, witnesses, quorum, older, log_only, vectors, full,
           fmt) -> None:
    """Recompute the hash chain and commitments, then check every projection a read serves from
    against the log (--log-only: the chain alone); exit 1 naming the first bad seq or row."""
    # here, not at the top: the proofs (and their signatures) are only for `verify`, and every other
    # command of this module need not import them (docs/performance.md)
    from factledger.cli.proofs import checkpoint_report, render_checkpoint

    if (pubkey or witnesses or older or quorum is not None) and not checkpoint_file:
        raise click.UsageError("--pubkey, --witness, --quorum and --older check a --checkpoint")
    if vectors and log_only:
        raise click.UsageError("--vectors checks a projection; --log-only checks none")
    if full and log_only:
        raise click.UsageError("--full refolds the projections; --log-only checks none")
    ledger = state.ledger(read_only=True)
    with Bars() as bars:
        result = ledger.verify(expect_head, log_only=log_only, vectors=vectors, progress=bars,
                               record=None if log_only else ledger.verify_record(), full=full)
    for text in result.get("notices", ()):
        note(text)
    if result["ok"]:
        if checkpoint_file:
            result["checkpoint"] = checkpoint_report(state.ledger(read_only=True), checkpoint_file, pubkey, witnesses,
                                                     quorum, older)
        emit_one(result, fmt, render=lambda r: (
            f"ok: {r['events']} events verified ({r['redacted']} redacted), head {r['head']}"
            + f"\nchecked: {_checked(r)}"
            + (render_checkpoint(r["checkpoint"]) if "checkpoint" in r else "")))
        return
    if resolve_format(fmt) in ("json", "nl"):
        click.echo(dumps(result, pretty=fmt == "json"))
    if result.get("integrity"):
        raise LedgerError(f"the file holding the log is damaged, so no event can be vouched for: {result['problem']}")
    if result.get("pin"):
        raise LedgerError(result["problem"])
    if result.get("projection"):
        raise LedgerError(f"the ledger is damaged: the log verifies ({result['events']} events), but what reads"
                          f" serve does not: {result['problem']}")
    if result.get("triggers"):
        raise LedgerError(f"the chain holds, but the log is not protected as written: {result['problem']}")
    if result.get("schema"):
        raise LedgerError(f"the chain holds, but the ledger's schema is not as written: {result['problem']} "
                          "(`factledger repair` restores it)")
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
    emit_one(outcome, fmt, render=lambda o: o["summary"])


@click.command()
@output_options
@pass_state
def stats(state, fmt) -> None:
    """Counts: events, facts, open facts, held candidates, events per fact.

    Read from a hot standby (--read-db), also how far it has replayed (`standby`)."""
    ledger = state.ledger(read_only=True)
    counts = ledger.stats()
    replica = ledger.standby()
    emit_one(counts if replica is None else {**counts, "standby": replica}, fmt)


def _checked(result: dict) -> str:
    """Which parts a verify checked, in words."""
    parts = ["the chain and commitments", "the append-only triggers and the indexes"]
    if "projections" in result["checked"]:
        state = (result.get("meaning") or {}).get("state")
        quick = result.get("incremental")
        parts.append(f"what reads serve ({', '.join(result['projections'])}) against a rebuild from the log"
                     + (f" (the {quick['partitions_refolded']} partitions that may have changed since the full check"
                        f" at seq {quick['since_seq']} refolded, the rest read as its record has them; --full"
                        " refolds all)" if quick else "")
                     + ("" if "vectors" in result["checked"] else ", vectors as stored (--vectors recomputes them)")
                     + (f"; meaning index {state}" if state and state != "current" else ""))
    else:
        parts.append("not the projections (--log-only)")
    return "; ".join(parts)


COMMANDS = (init, observe, facts, history, log, head, replay, verify, resolve, stats)
