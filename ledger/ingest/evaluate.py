"""The evaluation harness: how well an extractor turns the bundled sessions into served facts.

A probe names session files, a question and an expected answer (or a value that must not be
served).  Each set of sessions is ingested once into a fresh ledger whose clock stands just after
them, so age does not blur what is measured.  Figures: recall, wrong values served,
false-memory rate (stored facts their quote does not support) and entries per session; "served"
is `Ledger.recall`'s selection, and an answer counts when it is the value or a run of whole words
of it (`answers`; docs/ingestion.md, "Evaluation").
"""

from __future__ import annotations

import re
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from factledger.ledger.domain.candidate import value_key
from factledger.ledger.domain.events import EVENT
from factledger.ledger.errors import LedgerError
from factledger.ledger.ingest.batch import ingest_loaded
from factledger.ledger.ingest.jsonl import json_lines, read_text
from factledger.ledger.ingest.sources import load
from factledger.ledger.recall.serve import RecallOptions, recall
from factledger.ledger.store import reads as logread
from factledger.ledger.unit import UnitOfWork
from factledger.ledger.vocabulary.clock import fixed_clock, parse_time


def load_probes(path: str) -> list[dict]:
    text = read_text(path)
    base = Path(path).parent
    probes = []
    for number, where, probe in json_lines(text, path):
        if not isinstance(probe, dict):
            raise LedgerError(f"{where}: a probe must be a JSON object")
        missing = [k for k in ("app", "user", "sessions", "question") if not probe.get(k)]
        if missing:
            raise LedgerError(f"{where}: missing {', '.join(missing)}")
        if ("expect" in probe) == ("expect_absent" in probe):
            raise LedgerError(f"{where}: give exactly one of expect, expect_absent")
        if not isinstance(probe["sessions"], list):
            raise LedgerError(f"{where}: sessions must be a list of files")
        probe["sessions"] = [str(base / s) for s in probe["sessions"]]
        probe.setdefault("id", f"line-{number}")
        probes.append(probe)
    if not probes:
        raise LedgerError(f"{path}: no probes")
    return probes


def supported(value: str, quote: str, predicate: str) -> bool:
    """Does the quote support the value?  The value's words occur in it (spacing ignored); a
    yes/no value is supported when the quote names what the predicate is about."""
    squash = lambda s: "".join(value_key(s).split())  # noqa: E731
    if squash(value) in squash(quote):
        return True
    if value_key(value) in ("true", "false", "yes", "no"):
        words = [w for w in predicate.replace(".", "_").split("_") if len(w) >= 4]
        return any(w in value_key(quote) for w in words)
    return False


_DIGIT_LETTER = re.compile(r"(\d)(?=[^\W\d])")


def _words(value: str) -> list[str]:
    """`value_key`, split into words, with a number and its unit kept apart ("25mg" -> 25, mg)."""
    return _DIGIT_LETTER.sub(r"\1 ", value_key(value)).split()


def answers(expected: str, served: str) -> bool:
    """Is `expected` the served value, or a run of whole words of it?  Never a substring of a
    word: "25 mg" does not answer "125 mg"."""
    if value_key(expected) == value_key(served):
        return True
    want, have = _words(expected), _words(served)
    n = len(want)
    return n > 0 and any(have[i:i + n] == want for i in range(len(have) - n + 1))


def _served(ledger, probe: dict) -> list[str]:
    options = dict(probe.get("options", {}))
    options.setdefault("clearance", "all")
    result = recall(ledger.conn, probe["app"], probe["user"], probe["question"], now=ledger.clock(),
                    options=RecallOptions.build(**options), registry=ledger.registry)
    return [f["value"] for f in result.selected]


def run_probes(path: str, extractor: str = "patterns", model: str | None = None,
               candidates: str | None = None, registry=None) -> dict:
    probes = load_probes(path)
    groups: dict[tuple, list[dict]] = {}
    for probe in probes:
        groups.setdefault((probe["app"], probe["user"], tuple(probe["sessions"])), []).append(probe)
    rows, stored, sessions_seen = [], {}, set()
    with tempfile.TemporaryDirectory(prefix="factledger-eval-") as tmp:
        for number, ((app, user, files), members) in enumerate(groups.items()):
            sessions, errors = load(files)              # each file read once
            if errors:
                raise LedgerError("eval: " + "; ".join(e.error for e in errors))
            latest = _latest_event(sessions)
            ledger = UnitOfWork(Path(tmp) / f"eval-{number}.db", registry=registry,
                                clock=fixed_clock(latest + timedelta(days=1)), create=True)
            try:
                summary = ingest_loaded(ledger, sessions, [], app, user, extractor, model, candidates)
                if summary.failed:
                    raise LedgerError("eval: " + "; ".join(r.error or "" for r in summary.failed))
                for r in summary.results:
                    sessions_seen.add((app, user, r.session))
                for event in logread.log(ledger.conn, app=app, user=user, type=EVENT.FactObserved):
                    b = event["body"]
                    stored[(app, user, b["session"], b["evidence_event"], b["subject"],
                            b["predicate"], value_key(b["value"]))] = b
                for probe in members:
                    served = _served(ledger, probe)
                    if "expect" in probe:
                        ok = any(answers(str(probe["expect"]), v) for v in served)
                    else:
                        ok = not any(answers(str(probe["expect_absent"]), v) for v in served)
                    rows.append({"id": probe["id"], "question": probe["question"],
                                 "kind": "expect" if "expect" in probe else "expect_absent",
                                 "answer": probe.get("expect", probe.get("expect_absent")),
                                 "ok": ok, "served": served})
            finally:
                ledger.close()
    positive = [r for r in rows if r["kind"] == "expect"]
    negative = [r for r in rows if r["kind"] == "expect_absent"]
    unsupported = [b for b in stored.values() if not supported(b["value"], b["quote"], b["predicate"])]
    return {
        "extractor": extractor,
        "probes": len(rows),
        "recall": round(sum(r["ok"] for r in positive) / len(positive), 3) if positive else None,
        "wrong_served": round(sum(not r["ok"] for r in negative) / len(negative), 3) if negative else None,
        "false_memory_rate": round(len(unsupported) / len(stored), 3) if stored else 0.0,
        "stored_facts": len(stored),
        "sessions": len(sessions_seen),
        "entries_per_session": round(len(stored) / len(sessions_seen), 3) if sessions_seen else 0.0,
        "served_by": "recall",
        "unsupported": [{"predicate": b["predicate"], "value": b["value"], "quote": b["quote"]}
                        for b in unsupported],
        "rows": rows,
    }


def _latest_event(sessions) -> datetime:
    latest = None
    for session in sessions:
        for event in session.events:
            moment = parse_time(event.said_at)
            latest = moment if latest is None or moment > latest else latest
    if latest is None:
        raise LedgerError("eval: the probe's sessions hold no events")
    return latest


def render_report(report: dict) -> str:
    lines = [f"{'probe':<28} {'ok':<4} answer", "-" * 60]
    for r in report["rows"]:
        mark = "ok" if r["ok"] else "MISS" if r["kind"] == "expect" else "LEAK"
        prefix = "" if r["kind"] == "expect" else "not "
        lines.append(f"{r['id'][:28]:<28} {mark:<4} {prefix}{r['answer']}")
    lines += [
        "",
        f"extractor           {report['extractor']} (served by {report['served_by']})",
        f"probes              {report['probes']}",
        f"recall              {report['recall']}",
        f"wrong served        {report['wrong_served']}",
        f"false-memory rate   {report['false_memory_rate']} "
        f"({len(report['unsupported'])} of {report['stored_facts']} stored facts)",
        f"entries per session {report['entries_per_session']} ({report['sessions']} sessions)",
    ]
    return "\n".join(lines)
