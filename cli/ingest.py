"""The ingestion commands: ingest, sessions, review (list / accept / reject), eval.

Parsing and formatting only; every rule lives in `ledger.ingest`.
"""

from __future__ import annotations

import sys

import click
import orjson

from factledger.cli.context import create_option, pass_state
from factledger.cli.notices import check_partition, note
from factledger.cli.output import emit, emit_one, output_options, resolve_format
from factledger.cli.partition import partition_options
from factledger.ledger import LedgerError
from factledger.ledger.service import EVENT, evaluate_probes, probe_report
from factledger.ledger.vocabulary.terminal import escape

SESSION_COLUMNS = ("session", "watermark", "watermark_at", "ingestions", "events_read",
                   "candidates", "applied", "rejected", "held", "extractor", "digest")
# Review tables show what a reviewer decides on and the id to decide with (fit 120 columns; who
# said it and when are in --json)
REVIEW_COLUMNS = ("kind", "item", "reason", "predicate", "value", "quote", "session", "suggestions")
CONTRADICTION_COLUMNS = ("app", "user", "predicate", "value", "other_predicate", "other_value", "declared",
                         "semantic_hint")
REJECTED_COLUMNS = ("seq", "reason", "subject", "predicate", "value", "negated", "quote", "session",
                    "evidence_event")
EXPLAIN_COLUMNS = ("session", "evidence_event", "predicate", "value", "negated", "pattern", "outcome",
                   "quote")
EXTRACTOR = click.Choice(["patterns", "anthropic", "candidates"])


def _progress(label: str):
    """A progress bar on stderr when it is a terminal; silent otherwise."""
    state: dict = {}

    def on_total(total: int) -> None:
        state["bar"] = click.progressbar(length=total, label=label, file=sys.stderr,
                                         hidden=not sys.stderr.isatty() or total < 2)
        state["bar"].__enter__()

    def step(n: int) -> None:
        if "bar" in state:
            state["bar"].update(n)

    def close() -> None:
        if "bar" in state:
            state["bar"].__exit__(None, None, None)

    return on_total, step, close


def render_summary(s: dict) -> str:
    def by(counts: dict) -> str:
        return ", ".join(f"{escape(k)} {v}" for k, v in counts.items()) or "none"

    lines = [
        # the same total as the "N of M sessions or files failed" error: a file that could not be
        # read as a session is one of them, and the parts add up to it
        f"sessions or files: {s['sources']} ({s['ingested']} ingested, {s['unchanged']} unchanged, "
        + (f"{s['skipped_erased']} skipped (erased), " if s.get("skipped_erased") else "")
        + f"{s['failed']} failed)",
        f"events read: {s['events_read']}",
        f"candidates: {s['candidates']}",
        f"applied: {sum(s['applied'].values())} ({by(s['applied'])})",
        f"rejected: {sum(s['rejected'].values())} ({by(s['rejected'])})",
        f"held: {sum(s['held'].values())} ({by(s['held'])})",
    ]
    checks = s.get("meaning_checks")
    if checks and (checks["checked"] or checks["owed"]):
        lines.append(f"meaning checks run again: {checks['checked']} ({checks['merged']} merged into another"
                     f" wording), still owed: {checks['owed']}")
    if s["unmatched_candidates"]:
        lines.append(f"candidates not matching any session: {s['unmatched_candidates']}")
    for skipped in s.get("skipped", ()):
        lines.append(f"skipped {escape(skipped['path'])}: {escape(skipped['reason'])}")
    for a in s.get("ambiguous_candidates", ()):
        lines.append(f"REFUSED {escape(a['candidate'])}: {ambiguity(a)}")
    for f in s["failures"]:
        lines.append(f"FAILED {escape(f['source'])}"
                     + (f" (session {escape(f['session'])})" if f["session"] else "")
                     + f": {escape(f['error'])}")
    return "\n".join(lines)


def ambiguity(a: dict) -> str:
    cited = f"session {a['session']}" if a.get("session") else f"event {a['evidence_event']}"
    return escape(f"{cited} matches {len(a['matches'])} sessions ({'; '.join(a['matches'])}); "
                  "nothing was ingested for it: give it a session field")


@click.command()
@click.argument("paths", nargs=-1)
@partition_options(required=False, help_app="App for sessions that do not name one (env FACTLEDGER_APP)",
                   help_user="User for sessions that do not name one (env FACTLEDGER_USER)")
@click.option("--extractor", type=EXTRACTOR, default=None,
              help="Default: FACTLEDGER_EXTRACTOR, else patterns (offline); only anthropic sends "
                   "transcripts off the machine, and only when chosen")
@click.option("--model", default=None, help="Model for the anthropic extractor")
@click.option("--candidates", "candidates", type=click.Path(dir_okay=False), multiple=True,
              help="JSONL file of candidates (the candidates extractor); repeatable")
@click.option("--retry-failed", "retry", is_flag=True,
              help="Retry the sessions whose extraction failed (the retry queue)")
@click.option("--explain", is_flag=True,
              help="Also list each candidate with the registry rule or pattern that proposed it "
                   "and its outcome (JSON: under each result's `explained`)")
@create_option
@output_options
@pass_state
def ingest(state, paths, app, user, extractor, model, candidates, retry, explain, create, fmt) -> None:
    """Ingest agent sessions: ADK JSON or JSONL files, directories, or - for stdin.

    Each session is one transaction; re-ingesting appends nothing and a grown session ingests
    only its new tail.  Exits 1 if any file or session failed (after ingesting the others).
    """
    if candidates and not extractor:
        extractor = "candidates"
    ledger = state.ledger(create=create)
    on_total, step, close = _progress("ingesting")
    try:
        if retry:
            if paths:
                raise LedgerError("--retry-failed takes no paths: it re-reads the queued sources")
            summary = ledger.retry_failed(app, user, extractor, model, progress=step, on_total=on_total)
        else:
            if not paths:
                raise LedgerError("name at least one session file, directory, or - for stdin")
            summary = ledger.ingest_paths(paths, app, user, extractor, model, list(candidates) or None,
                                           progress=step, on_total=on_total)
    finally:
        close()
    report = summary.as_dict()
    if report["extractor"] and any(r.status in ("ingested", "failed") for r in summary.results):
        note(f"extractor: {report['extractor']}")       # it ran: say which (only anthropic leaves the machine)
    if explain:
        for row, result in zip(report["results"], summary.results):
            row["explained"] = result.explained
    if resolve_format(fmt) not in ("json", "nl"):
        report.pop("results")
    emit_one(report, fmt, render=render_summary)
    if explain and resolve_format(fmt) not in ("json", "nl"):
        click.echo("")
        emit([row for r in summary.results for row in r.explained], fmt, EXPLAIN_COLUMNS)
    refused = [f"{a['candidate']}: {ambiguity(a)}" for a in report["ambiguous_candidates"]]
    if refused and not summary.failed:
        raise LedgerError(f"{len(refused)} candidate(s) refused as ambiguous: " + "; ".join(refused))
    if summary.failed:
        errors = [f["error"] if f["source"] in (f["error"] or "") else f"{f['source']}: {f['error']}"
                  for f in report["failures"]] + refused
        if len(errors) == 1 and len(summary.results) == 1:
            raise LedgerError(errors[0])
        raise LedgerError(f"{len(summary.failed)} of {len(summary.results)} sessions or files "
                          f"failed: " + "; ".join(errors))


@click.command()
@partition_options
@output_options
@pass_state
def sessions(state, app, user, fmt) -> None:
    """A user's ingested sessions: watermark, counts and digest."""
    ledger = state.ledger(read_only=True)
    rows = ledger.sessions(app, user)
    if not rows:
        check_partition(ledger, app, user)
    emit(rows, fmt, SESSION_COLUMNS)


def rejected_rows(ledger, app: str | None, user: str | None) -> list[dict]:
    """Every rejected candidate, newest last: why, by which rule, and what it claimed."""
    rows = []
    for e in ledger.log(app=app, user=user, type=EVENT.CandidateRejected):
        body = e["body"] or {}
        candidate = body.get("candidate") or {}
        rows.append({"seq": e["seq"], "reason": body.get("reason"), "rule": body.get("rule"),
                     **{k: candidate.get(k) for k in ("subject", "predicate", "value", "negated",
                                                      "quote", "session", "evidence_event")},
                     "app": e["app"], "user": e["user"], "recorded_at": e["recorded_at"]})
    return rows


def fact_ids(stored) -> list[str]:
    """A dispute's `disputes` as the list it is: the projection keeps it as JSON text, and JSON
    output never nests encoded JSON (a string a reader must decode twice)."""
    return orjson.loads(stored) if isinstance(stored, (str, bytes)) else list(stored or ())


@click.group(invoke_without_command=True)
@partition_options(required=False, help_app="Only this app (env FACTLEDGER_APP)",
                   help_user="Only this user (env FACTLEDGER_USER)")
@click.option("--all", "show_all", is_flag=True, help="Include closed items")
@click.option("--rejected", is_flag=True,
              help="List rejected candidates instead (the validator's and reviewers' reasons)")
@click.option("--contradictions", "contradicting", is_flag=True,
              help="List open facts of contradicting predicates (declared in the registry, or inferred"
                   " by meaning) with equal values")
@output_options
@click.pass_context
def review(ctx, app, user, show_all, rejected, contradicting, fmt) -> None:
    """The review queue: held candidates (unknown predicate ...) and open disputes.

    Held candidates: `review accept HOLD --as P` / `review reject HOLD`.  Disputes (kind
    `dispute`, item = the fact id): `resolve FACT --accept|--reject --by WHO --reason WHY`.
    """
    if ctx.invoked_subcommand is not None:
        return
    ledger = ctx.obj.ledger(read_only=True)
    if contradicting:
        emit(ledger.contradictions(app, user), fmt, CONTRADICTION_COLUMNS)
        return
    if rejected:
        emit(rejected_rows(ledger, app, user), fmt, REJECTED_COLUMNS)
        return
    rows = []
    for row in ledger.held(app, user, status=None if show_all else "open"):
        row.pop("candidate")
        row["suggestions"] = ", ".join(row.get("suggestions") or ())
        rows.append({"kind": "held", "item": row["hold_id"], **row})
    rows += [{"kind": "dispute", "item": d["fact_id"], "hold_id": None, "reason": d["reason"],
              "subject": d["subject"], "predicate": d["predicate"], "value": d["value"],
              "quote": d["quote"], "session": d["session"], "author": d["author"],
              "held_at": d["said_at"], "app": d["app"], "user": d["user"],
              "status": "open", "disputes": fact_ids(d["disputes"])}
             for d in ledger.lookup.open_disputes(app, user)]
    emit(rows, fmt, REVIEW_COLUMNS + (("status",) if show_all else ()))
    if resolve_format(fmt) == "table":
        found = len(ledger.contradictions(app, user))
        if found:
            click.echo(f"{found} contradicting pair(s) of open facts: factledger review --contradictions")


@review.command("accept")
@click.argument("hold_id")
@click.option("--as", "predicate", default=None,
              help="Predicate to apply it under  [default: the candidate's own, e.g. after unsupported_by_quote]")
@click.option("--kind", default=None, metavar="KIND",
              help="Apply it as an open key of this kind (a dotted --as that the registry does not know)")
@click.option("--confirm-sensitivity", "confirm_sensitivity", metavar="LEVEL",
              help="Confirm the predicate's sensitivity when it differs from the candidate's "
                   "(accepting an unknown predicate as home_city: --confirm-sensitivity personal)")
@click.option("--by", "by", help="Who decides (recorded in the events; shown by why)")
@click.option("--reason", help="Why (recorded in the events; shown by why)")
@output_options
@pass_state
def review_accept(state, hold_id, predicate, kind, confirm_sensitivity, by, reason, fmt) -> None:
    """Apply a held candidate under a predicate (through the normal decision path).

    The predicate's normaliser and closed vocabulary apply to the value; a predicate of another
    sensitivity than the candidate's is refused unless --confirm-sensitivity names it."""
    outcome = state.ledger().review_accept(hold_id, predicate, by=by, reason=reason, kind=kind,
                                           confirm_sensitivity=confirm_sensitivity).as_dict()
    emit_one(outcome, fmt, render=lambda o: o["summary"])


@review.command("reject")
@click.argument("hold_id")
@click.option("--reason", required=True, help="Why (recorded in CandidateRejected)")
@click.option("--by", "by", help="Who decides (recorded in CandidateRejected)")
@output_options
@pass_state
def review_reject(state, hold_id, reason, by, fmt) -> None:
    """Close a held candidate without applying it (CandidateRejected with the reason)."""
    outcome = state.ledger().review_reject(hold_id, reason, by=by).as_dict()
    emit_one(outcome, fmt, render=lambda o: o["summary"])


@click.command("eval")
@click.argument("probes", type=click.Path(dir_okay=False))
@click.option("--extractor", type=EXTRACTOR, default="patterns", show_default=True)
@click.option("--model", default=None)
@click.option("--candidates", "candidates", type=click.Path(dir_okay=False), multiple=True,
              help="JSONL file(s) of candidates for --extractor candidates")
@output_options
@pass_state
def evaluate(state, probes, extractor, model, candidates, fmt) -> None:
    """Score an extractor on a probe set: recall, false-memory rate, entries per session."""
    if candidates and extractor == "patterns":
        extractor = "candidates"
    report = evaluate_probes(probes, extractor=extractor, model=model, candidates=list(candidates) or None,
                        registry=state.registry)
    if resolve_format(fmt) in ("json", "nl"):
        emit_one(report, fmt)
    else:
        click.echo(probe_report(report))


COMMANDS = (ingest, sessions, review, evaluate)
