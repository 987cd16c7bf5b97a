"""The erasure report (`ledger.erasure_report`) as Markdown, JSON and one self-contained HTML page.

Shared by the CLI (`factledger report erasure SEQ`) and the web UI.  The HTML page has no script,
no external stylesheet or font: it prints and archives as it is.  Every value is escaped (HTML
escaping for the page, control characters for the text forms), since reason and requester are
free text typed by people.
"""

from __future__ import annotations

import html

import orjson

from factledger.ledger.vocabulary.terminal import escape

TITLE = "factledger erasure report"


def fields(report: dict) -> list[tuple[str, str]]:
    r = report["receipt"]
    verify = report["verify"]
    verdict = (f"ok: {verify['events']} events verified ({verify['redacted']} redacted), head {verify['head']}"
               if verify["ok"] else f"BROKEN at seq {verify['first_bad_seq']}: {verify['problem']}")
    plain = {k: v for k, v in r["counts"].items() if not k.startswith("rows:")}
    rows = {k.removeprefix("rows:"): v for k, v in r["counts"].items() if k.startswith("rows:")}
    counts = ", ".join(f"{v} {COUNT_WORDS.get(k, k)}" for k, v in sorted(plain.items())) or "none"
    tables = ", ".join(f"{v} in {k}" for k, v in sorted(rows.items())) or "none"
    return [
        ("Ledger", report.get("ledger") or "-"),
        ("Redaction", f"seq {r['redaction_seq']}, event {r['event_id']}"),
        ("Recorded at", _second(r["recorded_at"])),
        ("App", r["app"]),
        ("Scope", f"{r['scope_kind']} {r['scope_hash']}"),
        ("Reason", r["reason"]),
        ("Requested by", r["requester"]),
        ("Ticket", r["ticket"] or "-"),
        ("Counts", counts),
        ("Derived rows removed", tables),
        ("Events scrubbed", str(report["events_scrubbed_now"])),
        ("Sessions forgotten whole", str(r["sessions_forgotten"])),
        ("Facts forgotten", str(r["counts"].get("facts", r["facts_forgotten"]))),
        ("Partitions", str(r["partitions"])),
        ("Compensating events", str(report["compensating_events"])),
        ("Head before", report["head_before"]),
        ("Head at redaction", report["head_at_redaction"]),
        ("Head now", report["head_now"]),
        ("Verify (now)", verdict),
        ("Generated at", _second(report["generated_at"])),
    ]


# The receipt's count keys in words (the JSON form keeps the keys as the receipt has them).
COUNT_WORDS = {"events": "events scrubbed", "facts": "facts forgotten", "sessions": "sessions forgotten",
               "keys": "keys decided again", "restated": "statements recorded again",
               "partitions": "partitions"}


def _second(timestamp: str) -> str:
    """A stored time to the second, as a person reads it (the JSON form keeps the microseconds)."""
    if len(timestamp) > 20 and timestamp.endswith("Z") and "." in timestamp:
        return timestamp.split(".", 1)[0] + "Z"
    return timestamp


def to_json(report: dict) -> str:
    return orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()


def to_markdown(report: dict) -> str:
    r = report["receipt"]
    rows = "\n".join(f"| {name} | {escape(value).replace('|', chr(92) + '|')} |"
                     for name, value in fields(report))
    return (f"# Erasure report: seq {r['redaction_seq']}\n\n"
            "The receipt names no one: the scope hash is recomputable from the ids by whoever "
            "knows them (`factledger erasures --app A --user U`).\n\n"
            f"| field | value |\n| --- | --- |\n{rows}\n")


def to_html(report: dict) -> str:
    r = report["receipt"]
    rows = "\n".join(f"<tr><th>{html.escape(name)}</th><td>{html.escape(value)}</td></tr>"
                     for name, value in fields(report))
    ok = report["verify"]["ok"]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{TITLE}: seq {r['redaction_seq']}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #111; }}
table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #999; padding: 4px 10px; text-align: left; vertical-align: top; }}
th {{ background: #eee; white-space: nowrap; }}
td {{ font-family: ui-monospace, monospace; word-break: break-all; }}
.verdict {{ font-weight: bold; color: {'#060' if ok else '#a00'}; }}
</style></head>
<body>
<h1>Erasure report: seq {r['redaction_seq']}</h1>
<p class="verdict">chain {'verified' if ok else 'BROKEN'}</p>
<table>
{rows}
</table>
<p>The receipt names no one: the scope hash is recomputable from the ids by whoever knows them.</p>
</body></html>
"""


RENDERERS = {"markdown": to_markdown, "json": to_json, "html": to_html}
