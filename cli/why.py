"""`factledger why FACT`: where a fact came from, and what happened to it since, in one block."""

from __future__ import annotations

import click

from factledger.cli.context import pass_state
from factledger.cli.notices import clearance_option, cleared
from factledger.cli.output import cell, emit_one, output_options
from factledger.ledger import LedgerError
from factledger.ledger.domain.recall_options import AUDIT_CLEARANCE
from factledger.ledger.vocabulary.terminal import escape


@click.command()
@click.argument("fact_id")
@clearance_option(AUDIT_CLEARANCE)
@output_options
@pass_state
def why(state, fact_id, clearance, include_sensitive, fmt) -> None:
    """A fact's provenance: session, evidence event, quote, author; every event that touched it; and
    what replaced, disputed or retracted it, with who resolved it and why."""
    ledger = state.ledger(read_only=True)
    try:
        report = ledger.why(fact_id)
    except LedgerError:
        erased = ledger.erased.fact_erasure(fact_id.strip())
        if erased is None:
            raise
        emit_one(erased, fmt, render=render_erased)      # one shape, whatever route erased it
        return
    report["related"] = ledger.lookup.fact_relations(report["fact"]["fact_id"], report["events"])
    emit_one(ledger.lookup.cleared_why(report, cleared(clearance, include_sensitive, AUDIT_CLEARANCE)), fmt,
             render=render_why)


def render_erased(e: dict) -> str:
    """An erased fact: what, when, under which receipt; the value is gone, so none is shown."""
    ticket = f", ticket {_text(e['ticket'])}" if e.get("ticket") else ""
    return "\n".join([
        f"fact {_text(e['fact_id'])}: erased",
        f"erased {cell(e['erased_at'])} by the receipt at seq {e['receipt_seq']} ({_text(e['scope_kind'])} "
        f"scope, reason: {_text(e['reason'])}{ticket})",
        "the ledger keeps no value, quote or session of it; the receipt: "
        f"factledger report erasure {e['receipt_seq']}",
    ])


def _text(value) -> str:
    return "" if value is None else escape(str(value))


def render_why(report: dict) -> str:
    """For people; every stored string is escaped, so a quote cannot fake a provenance line."""
    f = {k: v if isinstance(v, (int, float)) and not isinstance(v, bool) else _text(v)
         for k, v in report["fact"].items()}
    lines = [
        f"{f['subject']} {f['predicate']} = {escape(repr(report['fact']['value']))}  [{f['status']}, "
        f"{f['basis']}, confidence {report['fact']['confidence']:.2f}]",
        f"fact {f['fact_id']}  (app {f['app']}, user {f['user']})",
        f"said {f['said_at']} by {f['author']} in session {f['session']}, event {f['evidence_event']}:",
        f"  \"{f['quote']}\"",
        f"valid {f['valid_from']} .. {report['fact']['valid_to'] or 'now'}; last confirmed "
        f"{f['confirmed_at']} by session {f['confirmed_by']}",
    ]
    if report.get("related"):
        lines.append("what happened:")
        for r in report["related"]:
            line = f"  seq {r['seq']:>6}  {_text(r['relation'])}"
            if r.get("value") is not None:
                line += f" {escape(repr(r['value']))}"
            if r.get("session"):
                line += f" (session {_text(r['session'])}, said {_text(r['said_at'])} by {_text(r['author'])})"
            if r.get("resolved_by"):
                line += f" by {_text(r['resolved_by'])}"
            if r.get("reason"):
                line += f": {_text(r['reason'])}"
            if r.get("receipt_seq"):
                line += f" (receipt seq {r['receipt_seq']})"
            lines.append(line)
            if r.get("quote"):
                lines.append(f"            \"{_text(r['quote'])}\"")
    lines.append("events:")
    for e in report["events"]:
        body = e["body"] or {}
        detail = escape(body.get("rule") or body.get("reason") or "")
        session = f" session {escape(body['session'])}" if body.get("session") else ""
        role = ", ".join(e.get("roles") or [e["role"]])
        lines.append(f"  seq {e['seq']:>6}  {escape(e['type']):<16} {escape(role):<11} {detail}{session}"
                     + ("  (redacted)" if e["body"] is None else ""))
    return "\n".join(lines)


COMMANDS = (why,)
