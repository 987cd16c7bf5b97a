"""`factledger residue`: where copies of forgotten bytes may still be, beyond the live tables."""

from __future__ import annotations

import click

from factledger.cli.context import pass_state
from factledger.cli.output import emit_one, output_options


@click.command()
@output_options
@pass_state
def residue(state, fmt) -> None:
    """List the places a forget cannot reach (WAL archive, replicas, slots, backups, dumps, copies)."""
    # the primary's: its archive, replicas and slots are the copies; a standby knows none of them
    report = state.ledger(read_only=True, primary=True).residue()
    emit_one(report, fmt, render=_render)


def _render(report: dict) -> str:
    since = (f"last erasure: seq {report['last_erasure_seq']} at {report['last_erasure_at']}"
             if report["last_erasure_seq"] else "no erasure recorded yet")
    lines = [f"{report['backend']} ledger; {since}", "places that may still hold bytes a forget scrubbed:"]
    for place in report["places"]:
        lines.append(f"- {place['place']}: {place['where']}")
        lines.append(f"    {place['note']}")
    return "\n".join(lines)


COMMANDS = (residue,)
