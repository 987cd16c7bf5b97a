"""One printable record of one erasure, for the compliance file.

Everything a reviewer files about a redaction, gathered from the log itself: the receipt (scope
kind and hash, reason, requester, ticket, counts), the chain head just before the `Redacted`
event and at it, the events it caused after it, and a fresh `verify` of the whole chain with the
head now.  No personal data: the receipt never held any, and nothing is read from the scrubbed
events but their count.  Renderers (Markdown, JSON, HTML) live in `ledger.erasure_render`.
"""

from __future__ import annotations

from factledger.ledger.domain.eventrow import body_of
from factledger.ledger.domain.events import EVENT
from factledger.ledger.errors import LedgerError
from factledger.ledger.store.reads import caused_by, event_at, scrubbed_by

FORMAT = "factledger-erasure-report/1"


def erasure_report(conn, seq: int, *, verify, head, clock) -> dict:
    """The report for the `Redacted` event at `seq` (a `LedgerError` if there is none).

    `verify()`, `head()` and `clock()` are the facade's (`Ledger.erasure_report` passes its own),
    so the fresh check in the record is the one `factledger verify --log-only` runs."""
    row = event_at(conn, seq)
    if row is None or row[2] != EVENT.Redacted:
        raise LedgerError(f"no erasure receipt at seq {seq} (`factledger erasures` lists them)")
    _, event_id, _, app, recorded_at, body, prev_hash, digest = row
    if body is None:
        raise LedgerError(f"the receipt at seq {seq} has itself been scrubbed")
    receipt = body_of(body)
    caused = caused_by(conn, seq)
    scrubbed = scrubbed_by(conn, seq)
    checked = verify()
    now_seq, now_hash = head()
    return {
        "format": FORMAT,
        "receipt": {
            "redaction_seq": seq, "event_id": event_id, "recorded_at": recorded_at, "app": app,
            "scope_kind": receipt["scope_kind"], "scope_hash": receipt["scope_hash"],
            "reason": receipt["reason"], "requester": receipt["requester"],
            "ticket": receipt.get("ticket"), "counts": receipt.get("counts", {}),
            "target_events": len(receipt.get("target_seqs", [])),
            "partitions": receipt.get("partitions", 1),
            "sessions_forgotten": len(receipt.get("session_hashes", [])),
            "facts_forgotten": len(receipt.get("fact_hashes", [])),
        },
        "events_scrubbed_now": scrubbed,
        "compensating_events": len(caused),
        "head_before": f"{seq - 1}:{prev_hash}",
        "head_at_redaction": f"{seq}:{digest}",
        "head_now": f"{now_seq}:{now_hash}",
        "verify": {"ok": checked["ok"], "events": checked["events"], "redacted": checked["redacted"],
                   "head": checked["head"], "first_bad_seq": checked["first_bad_seq"],
                   "problem": checked["problem"]},
        "generated_at": clock().isoformat().replace("+00:00", "Z"),
    }
