"""The access ledger: every serve recorded as a `FactsServed` event, shown again, and accounted for.

A serve is an event of the main log (docs/decisions.md, "Serves are events of the log"), so the
chain, the checkpoints, `verify`, export and the forget machinery cover it with no second chain.
`record` appends one in a short write transaction after the read and before the caller gets
the text, so an acknowledged serve is on disk (`synchronous=FULL`) when the text leaves;
`record_many` appends the serves of concurrent reads in one (a group commit, one fsync).
`show` re-renders a recall's block from the log as it stood at the serve and compares hashes;
`accounting` is the accounting of disclosures for one data subject (`report access`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets

from factledger.ledger.domain.eventrow import body_of
from factledger.ledger.domain.events import EVENT, FactsServed
from factledger.ledger.errors import LedgerError
from factledger.ledger.recall import render
from factledger.ledger.store.reads import event_at
from factledger.ledger.vocabulary.clock import iso, parse_time
from factledger.ledger.vocabulary.ids import normalise_id
from factledger.ledger.vocabulary.words import DOMAIN_USER, SENSITIVITIES
from factledger.projections import queries
from factledger.projections.serves import establishing_seqs, fact_classes, serve_rows

QUERY_KEY = "serve_query_key"             # ledger_meta: the per-ledger key of the query hashes
KEEP_QUERIES = "FACTLEDGER_KEEP_QUERIES"  # "1": keep the query in clear (the deployment opts in)
ANONYMOUS = "anonymous"
MAX_CALLER = 200


def caller_name(caller: str | None) -> str:
    """Who a serve was for, checked like an id; `anonymous` when the library was told no one."""
    if caller is None:
        return ANONYMOUS
    return normalise_id(caller, "the caller a serve is recorded for")[:MAX_CALLER]


def clearance_name(clearance) -> str:
    """A clearance as one word: recall holds it as the classes it admits, least first."""
    if isinstance(clearance, str):
        return clearance
    admitted = [c for c in SENSITIVITIES if c in clearance]
    return admitted[-1] if admitted else ",".join(clearance)


def _query_key(conn) -> bytes:
    """The ledger's key for query hashes, made on the first serve (inside its write transaction):
    the same query hashes the same in one ledger and differently in another, and the hash cannot
    be reversed by hashing guesses without the key."""
    row = conn.execute("SELECT value FROM ledger_meta WHERE key = ?", (QUERY_KEY,)).fetchone()
    if row is None:
        conn.execute("INSERT INTO ledger_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
                     (QUERY_KEY, secrets.token_hex(32)))
        row = conn.execute("SELECT value FROM ledger_meta WHERE key = ?", (QUERY_KEY,)).fetchone()
    return bytes.fromhex(row[0])


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def record(work, *, app: str, user: str, users: list[str], caller: str | None, surface: str,
           clearance, facts: list[dict], text: str, head_seq: int, tool: str = "recall",
           withheld: dict[str, int] | None = None, limit: int | None = None,
           query: str | None = None, held: list[str] | None = None) -> int:
    """Append one `FactsServed` in its own transaction; returns its seq.  `facts` are the served
    fact dicts (fact_id, user, and for a recall unconfirmed_since / ask_to_confirm)."""
    return record_many(work, [dict(app=app, user=user, users=users, caller=caller, surface=surface,
                                   clearance=clearance, facts=facts, text=text, head_seq=head_seq, tool=tool,
                                   withheld=withheld, limit=limit, query=query, held=held)])[0]


def record_many(work, serves: list[dict]) -> list[int]:
    """Append a `FactsServed` for each of `serves` (each the keyword arguments of `record`) in one
    transaction, in order; their seqs.  One commit (one fsync) for all: the group commit of
    serves from concurrent reads (`ledger.serves.record_recalls`).  All or none is recorded."""
    if work.read_only:
        raise LedgerError("this ledger is open read-only (a standby or a read open): a serve cannot "
                          "be recorded here; record it on the primary, or do not say whom it is for")
    if not serves:
        return []
    with work.transaction():
        before = work.store.head()
        seqs = [_append(work, **serve).seq for serve in serves]
    work.recall_kept.advance(work.conn, before, len(seqs))     # serves change nothing recall reads
    return seqs


def _append(work, *, app: str, user: str, users: list[str], caller: str | None, surface: str,
            clearance, facts: list[dict], text: str, head_seq: int, tool: str = "recall",
            withheld: dict[str, int] | None = None, limit: int | None = None,
            query: str | None = None, held: list[str] | None = None):
    conn = work.conn
    key = _query_key(conn) if query else b""
    seqs = establishing_seqs(conn, [f["fact_id"] for f in facts], head_seq)
    served = [{"fact_id": f["fact_id"], "seqs": seqs.get(f["fact_id"], []),
               **({"user": f["user"]} if f.get("user") not in (None, user) else {}),
               **({"unconfirmed": True} if f.get("unconfirmed_since") else {}),
               **({"ask": True} if f.get("ask_to_confirm") else {})} for f in facts]
    body = FactsServed(
        app=app, user=user, users=users, caller=caller_name(caller), surface=surface, tool=tool,
        clearance=clearance_name(clearance), facts=served, held=sorted(set(held)) if held else None,
        withheld=dict(withheld or {}), limit=limit,
        text_sha256=text_hash(text), head_seq=head_seq, served_at=iso(work.clock()),
        query_sha256=hmac.new(key, query.encode("utf-8"), hashlib.sha256).hexdigest() if query else None,
        query=query if query and os.environ.get(KEEP_QUERIES) == "1" else None)
    return work.append(body)


def serve_body(conn, seq: int) -> tuple[dict, str]:
    """The body of serve record `seq` and its recorded_at; a `LedgerError` naming what it is not."""
    row = event_at(conn, seq)                 # (seq, event_id, type, app, recorded_at, body, ...)
    if row is None:
        raise LedgerError(f"no event with seq {seq}")
    if row[2] != EVENT.FactsServed:
        raise LedgerError(f"event {seq} is a {row[2]}, not a serve record (FactsServed)")
    if row[5] is None:
        raise LedgerError(f"serve record {seq} was erased (its masked copy says what was served)")
    return body_of(row[5]), row[4]


def show(conn, seq: int) -> dict:
    """Serve `seq` re-rendered from the log as it stood at the serve, and compared with the hash
    it recorded: `identical`, or `difference` naming what differs."""
    body, recorded_at = serve_body(conn, seq)
    out = {"seq": seq, "served_at": body.get("served_at", recorded_at), "caller": body["caller"],
           "surface": body["surface"],
           "tool": body.get("tool", "recall"), "head_seq": body["head_seq"], "recorded_sha256": body.get("text_sha256"),
           "fact_ids": [f["fact_id"] for f in body.get("facts", ())], "held": body.get("held") or []}
    if body.get("text_sha256") is None:
        out.update(identical=False, text=None, difference="its text hash was erased with a fact it served "
                   f"(forget, event {body.get('cause')}): there is nothing to compare")
        return out
    if body.get("tool", "recall") != "recall":
        out.update(identical=None, text=None,
                   difference=f"a {body.get('tool')} serve: only a recall's block is re-rendered")
        return out
    at_row = event_at(conn, body["head_seq"])
    at = at_row[4] if at_row else recorded_at
    by_user: dict[str, dict[str, dict]] = {}
    facts, missing = [], []
    for served in body.get("facts", ()):
        part = served.get("user") or body["user"]
        if part not in by_user:
            rows = queries.facts(conn, body["app"], part, now=parse_time(at), as_of=at, include_sensitive=True)
            by_user[part] = {r["fact_id"]: r for r in rows}
        fact = by_user[part].get(served["fact_id"])
        if fact is None:
            missing.append(served["fact_id"])
            continue
        fact = dict(fact, user=part, unconfirmed_since=served.get("unconfirmed") or None,
                    ask_to_confirm=served.get("ask", False))
        facts.append(fact)
    text = render.render(facts, body.get("withheld") or {}, body.get("limit"))
    out["text"] = text
    out["rendered_sha256"] = text_hash(text)
    out["identical"] = not missing and out["rendered_sha256"] == body["text_sha256"]
    if missing:
        out["difference"] = f"fact {missing[0]} was not open in the log at seq {body['head_seq']}"
    elif not out["identical"]:
        out["difference"] = (f"the block re-rendered from the log at seq {body['head_seq']} hashes to "
                             f"{out['rendered_sha256']}, the serve recorded {body['text_sha256']}")
    return out


def accounting(conn, app: str, user: str) -> dict:
    """The accounting of disclosures for one data subject: per class (health first), per caller,
    what was disclosed when: fact ids, keys where the fact still exists, never a value."""
    rows = serve_rows(conn, app, user)
    domain = serve_rows(conn, app, DOMAIN_USER) if user != DOMAIN_USER else []
    classes = fact_classes(conn, app, [f for r in rows for f in r["fact_ids"]])
    order = {name: i for i, name in enumerate(reversed(SENSITIVITIES))}     # health first
    groups: dict[tuple[str, str], dict] = {}
    for row in rows:
        for fact_id in row["fact_ids"]:
            sensitivity, subject, predicate = classes.get(fact_id, ("erased", None, None))
            group = groups.setdefault((sensitivity, row["caller"]), {
                "class": sensitivity, "caller": row["caller"], "serves": set(), "disclosures": []})
            group["serves"].add(row["seq"])
            group["disclosures"].append({"at": row["served_at"], "seq": row["seq"], "fact_id": fact_id,
                                         "key": f"{subject} / {predicate}" if subject else "(a fact since erased)",
                                         "surface": row["surface"], "clearance": row["clearance"]})
    callers = sorted(groups.values(), key=lambda g: (order.get(g["class"], len(order)), g["class"], g["caller"]))
    for group in callers:
        group["serves"] = len(group["serves"])
    return {"app": app, "user": user, "serves": len(rows), "domain_serves": len(domain),
            "callers": sorted({r["caller"] for r in rows}), "classes": callers}


def render_markdown(report: dict) -> str:
    """The accounting as text for the compliance file: health first, one line per disclosure."""
    lines = [f"# Accounting of disclosures: app {report['app']!r}, user {report['user']!r}", "",
             f"{report['serves']} serves recorded; callers: {', '.join(report['callers']) or 'none'}.", ""]
    for group in report["classes"]:
        lines.append(f"## {group['class']}: {group['caller']} ({group['serves']} serves)")
        lines += [f"- {d['at']} seq {d['seq']}: {d['key']} (fact {d['fact_id']}, {d['surface']}, "
                  f"clearance {d['clearance']})" for d in group["disclosures"]]
        lines.append("")
    return "\n".join(lines)


def render_html(report: dict) -> str:
    """One self-contained page: no script, no external resource."""
    from html import escape

    rows = []
    for group in report["classes"]:
        for d in group["disclosures"]:
            rows.append("<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in (
                group["class"], group["caller"], d["at"], d["seq"], d["key"], d["fact_id"], d["surface"],
                d["clearance"])) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("class", "caller", "when", "seq", "key", "fact", "surface",
                                             "clearance"))
    return ("<!doctype html><html><head><meta charset=\"utf-8\"><title>Accounting of disclosures</title>"
            "<style>body{font-family:sans-serif}td,th{border:1px solid #999;padding:2px 6px}"
            "table{border-collapse:collapse}</style></head><body>"
            f"<h1>Accounting of disclosures</h1><p>app {escape(report['app'])}, user {escape(report['user'])}: "
            f"{report['serves']} serves recorded, health first.</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></body></html>\n")
