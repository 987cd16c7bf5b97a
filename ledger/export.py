"""Export and import of the log, and the data-subject export of one user.

The log export is JSONL: a header, then each event's whole envelope, its body as the canonical
JSON text (byte for byte, as the commitment covers it) and its salt in hex; a redacted event
travels as its envelope.  Salts travel so an import can prove it holds the same log, which makes
an export as sensitive as the ledger, and beyond a later forget's reach (docs/forgetting.md).
`import` accepts a complete export into an empty ledger only: rows verbatim, every projection
rebuilt, `verify` run; on any problem nothing is kept.
"""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path
from typing import IO

import orjson
from pydantic import ValidationError

from factledger.ledger.audit import served
from factledger.ledger.audit.cleartext import ClearanceMask
from factledger.ledger.audit.projcheck import check_partitions
from factledger.ledger.audit.verify import verify
from factledger.ledger.domain.candidate import reserved_user
from factledger.ledger.domain.eventrow import body_of
from factledger.ledger.domain.events import EVENT, parse_body
from factledger.ledger.errors import ConstraintViolation, LedgerError, ProjectionMismatch
from factledger.ledger.forget.scope import CHECKPOINTS_USER, ERASURES_USER
from factledger.ledger.registry.predicates import KINDS
from factledger.ledger.store import chain
from factledger.ledger.store.errors import storage_errors
from factledger.ledger.store.eventlog import head, snapshot
from factledger.ledger.store.rowcheck import TEXT_COLUMNS, column_problem
from factledger.ledger.unit import UnitOfWork
from factledger.ledger.vocabulary.bounds import MAX_SEQ
from factledger.ledger.vocabulary.clock import iso
from factledger.ledger.vocabulary.files import open_regular
from factledger.ledger.vocabulary.progress import SILENT, STEP, Progress
from factledger.projections import queries
from factledger.projections.sessions import list_sessions

LOG_FORMAT = "factledger-log/1"
SUBJECT_FORMAT = "factledger-subject/1"
COLUMNS = ("seq", "event_id", "type", "app", "user", "recorded_at", "body", "salt", "commitment",
           "prev_hash", "hash", "redacted_by")

MAX_LINE = 16 * 1024 * 1024      # characters; an event body is far smaller


def export_log(conn: sqlite3.Connection, out: IO[str], app: str | None = None,
               user: str | None = None, progress: Progress = SILENT) -> int:
    """Write the log (or one partition's events, for inspection only) as JSONL; returns the count.
    `progress` hears of each `STEP` events written."""
    if (app is None) != (user is None):
        raise LedgerError("export a partition with both --app and --user, or the whole log with neither")
    sql = f"SELECT {', '.join(COLUMNS)} FROM events"
    args: tuple = ()
    if app is not None:
        sql += " WHERE app = ? AND user = ?"
        args = (app, user)
    seq, digest = head(conn)
    header = {"format": LOG_FORMAT, "complete": app is None, "head": f"{seq}:{digest}"}
    if app is not None:
        header.update(app=app, user=user)
    out.write(orjson.dumps(header).decode() + "\n")
    count = 0
    progress.stage("exporting", seq if app is None else
                   conn.execute("SELECT count(*) FROM events WHERE app = ? AND user = ?", args).fetchone()[0])
    for row in conn.execute(sql + " ORDER BY seq", args):
        item = dict(zip(COLUMNS, row))
        problem = column_problem(item)
        if problem is not None:               # a damaged row is not exported as if it were sound
            raise LedgerError(f"cannot export: the row at seq {item['seq']} is damaged ({problem}); "
                              "run factledger verify")
        if item["salt"] is not None:
            item["salt"] = item["salt"].hex()
        out.write(orjson.dumps(item).decode() + "\n")
        count += 1
        if not count % STEP:
            progress.update(STEP)
    progress.update(count % STEP)
    return count


def import_log(work: UnitOfWork, source: str | Path | IO[str], progress: Progress = SILENT) -> dict:
    """Load a complete log export into this (empty) ledger, rebuild, verify; all or nothing.
    `progress` hears of three stages: the rows loaded, the chain verified, the rebuild."""
    conn = work.conn
    if conn.execute("SELECT 1 FROM events LIMIT 1").fetchone():
        raise LedgerError("import needs an empty ledger (this one already has events)")
    lines = _lines(source)
    try:
        header = orjson.loads(next(lines))
    except StopIteration:
        raise LedgerError("the export is empty") from None
    except (orjson.JSONDecodeError, UnicodeDecodeError):
        raise LedgerError("line 1 of the export is not JSON") from None
    if not isinstance(header, dict) or header.get("format") != LOG_FORMAT:
        raise LedgerError(f"not a factledger log export (first line must name format {LOG_FORMAT})")
    if not header.get("complete"):
        raise LedgerError("this export holds one partition only; import needs a whole-log export")
    count = 0
    # the kinds this ledger's registry knows (its own [kinds.NAME] tables too, where it has them)
    kinds = frozenset(getattr(work.registry, "kinds", None) or KINDS)
    total = _header_seq(header)
    progress.stage("loading", total)
    with work.transaction():
        for number, line in enumerate(lines, start=2):
            row = _row(line, number, kinds)
            try:
                with storage_errors():
                    conn.execute(f"INSERT INTO events ({', '.join(COLUMNS)}) "
                                 f"VALUES ({', '.join('?' for _ in COLUMNS)})", row)
            except ConstraintViolation as exc:
                raise LedgerError(f"line {number}: {exc.detail}") from None
            count += 1
            if not count % STEP:
                progress.update(STEP)
        progress.update(count % STEP)
        progress.stage("verifying the chain", count)
        result = verify(conn, header.get("head") if count else None, progress)
        if not result["ok"]:
            raise LedgerError(f"the imported log does not verify (seq {result['first_bad_seq']}: "
                              f"{result['problem']}); nothing was imported")
        progress.stage("rebuilding the projections", count)
        work.projector.rebuild(conn, progress=progress.update)
    return {"imported": count, "head": result["head"], "redacted": result["redacted"]}


def _header_seq(header: dict) -> int:
    """The head seq the export's header names (a progress bar's length only: the head itself is
    checked by `verify`), 0 when it names none readable."""
    seq = str(header.get("head") or "").partition(":")[0]
    return int(seq) if seq.isascii() and seq.isdigit() and len(seq) <= len(str(MAX_SEQ)) else 0


def _lines(source):
    if hasattr(source, "read"):
        for line in source:
            if line.strip():
                yield line
        return
    try:
        # a regular file only (a FIFO or /dev/zero is refused), and no line without end
        with io.TextIOWrapper(open_regular(source), encoding="utf-8") as handle:
            while line := handle.readline(MAX_LINE + 1):
                if len(line) > MAX_LINE:
                    raise LedgerError(f"{source}: a line is longer than {MAX_LINE} characters")
                if line.strip():
                    yield line
    except OSError as exc:
        raise LedgerError(f"cannot read {source}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise LedgerError(f"{source} is not UTF-8 text (a factledger log export is JSONL)") from None


def _row(line: str, number: int, kinds: frozenset[str] = frozenset(KINDS)) -> tuple:
    try:
        item = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise LedgerError(f"line {number} of the export is not JSON") from None
    if not isinstance(item, dict) or set(item) != set(COLUMNS):
        raise LedgerError(f"line {number}: an event needs exactly the fields {', '.join(COLUMNS)}")
    for name in TEXT_COLUMNS:
        if not isinstance(item[name], str):
            raise LedgerError(f"line {number}: {name} must be text")
    for name in ("seq", "redacted_by"):
        value = item[name]
        if (value is not None or name == "seq") and (isinstance(value, bool) or not isinstance(value, int)
                                                      or not 0 < value <= MAX_SEQ):
            raise LedgerError(f"line {number}: {name} must be a seq (a whole number from 1)")
    try:
        salt = bytes.fromhex(item["salt"]) if item["salt"] is not None else None
    except (TypeError, ValueError):
        raise LedgerError(f"line {number}: salt is not hex") from None
    if item["body"] is not None and not isinstance(item["body"], str):
        raise LedgerError(f"line {number}: body must be the canonical JSON text")
    data = _check_body(item["body"], item["type"], number, kinds) if item["body"] is not None else None
    _check_partition(item, data, number)
    return tuple(salt if c == "salt" else item[c] for c in COLUMNS)


# The one event type each of the ledger's own partitions holds (a pseudonymised user's holds
# only scrubbed events).
_OWN_TYPES = {ERASURES_USER: EVENT.Redacted, CHECKPOINTS_USER: EVENT.CheckpointIssued}


def _check_partition(item: dict, body: dict | None, number: int) -> None:
    """Nothing is filed under a reserved user id but what the ledger itself keeps there: a
    re-chained export cannot put a person's statements into the receipts' or the checkpoints'
    partition (where a forget cannot reach them), nor a body under a forgotten user's pseudonym."""
    for user in {item["user"], *((body or {}).get("user"),)} - {None}:
        if not isinstance(user, str) or not reserved_user(user):
            continue
        own = _OWN_TYPES.get(user)
        if own is not None and item["type"] != own:
            raise LedgerError(f"line {number}: a {item['type']} event under the reserved user id {user!r} "
                              f"(it holds {own} events only)")
        if own is None and body is not None:
            raise LedgerError(f"line {number}: an event with a body under the reserved user id {user!r} "
                              "(a forgotten user's events are scrubbed)")


def _check_body(text: str, type_, number: int, kinds: frozenset[str] = frozenset(KINDS)) -> dict:
    """A body must be an event of the catalogue, of the row's type, and an observation's kind
    one the registry knows: the fold trusts bodies.  Returns the body as the JSON it holds."""
    try:
        data = orjson.loads(text)
        body = parse_body(data)
    except orjson.JSONDecodeError:
        raise LedgerError(f"line {number}: body is not JSON") from None
    except ValidationError as exc:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(x) for x in first.get("loc", ())) or "body"
        raise LedgerError(f"line {number}: not a valid event body ({where}: "
                          f"{first.get('msg', 'invalid')})") from None
    if body.type != type_:
        raise LedgerError(f"line {number}: body is a {body.type} event, the row says {type_!r}")
    kind = data.get("kind") if body.type == EVENT.FactObserved else None
    if kind is not None and kind not in kinds:
        raise LedgerError(f"line {number}: not a valid event body (kind {kind!r} is not a kind of "
                          f"this ledger's registry: {', '.join(sorted(kinds))})")
    return data


# The subject a user's facts about themself carry (a candidate's default); any other subject
# ("user.partner", "user.child") names another person the user spoke about.
SELF_SUBJECT = "user"


def export_subject(work: UnitOfWork, app: str, user: str, third_parties: bool = False) -> dict:
    """Everything the ledger holds about one user (a data-subject access export), as one JSON
    object, read in one snapshot (its facts, history, sessions and events agree).

    What it holds about other people (docs/forgetting.md, "What an access export contains"): facts
    whose subject is not the user themself (`user.partner allergy = peanuts`) are the user's words
    but another person's data, so by default their values, quotes and the bodies of the events
    that carry them are withheld, and `withheld_about_others` counts them by subject and predicate
    (the controller sees that something was held back, and what kind); `third_parties=True`, a
    controller's decision case by case (GDPR art. 15(4)), puts them in `about_others`.

    A legal document is printed only from what the log says: the facts and every history
    interval are checked as `facts` and `history` check them (`ledger.audit.served`), the sessions
    against a fold of the partition's events, and each event's body against its commitment; a
    forged row (a fact added, a subject moved to make a person's own fact "about another") makes
    the export refuse with `ProjectionMismatch`, never print a shorter or a different record."""
    conn = work.conn
    with snapshot(conn):
        now = work.clock()
        facts = queries.facts(conn, app, user, now=now, registry=work.registry, include_sensitive=True)
        history = queries.history(conn, app, user, registry=work.registry, now=now)
        served.check(conn, facts, table="facts_current")
        served.check_open(conn, app, user, {f["fact_id"] for f in facts}, include_sensitive=True)
        served.check(conn, history, table="fact_history", history=True)
        served.check_known(conn, app, user)
        check_partitions(conn, work.projector, [(app, user)], ("sessions",))
        others = {row["fact_id"]: row["subject"] for row in history if row["subject"] != SELF_SUBJECT}
        # another person's value said inside the user's own quote ("my partner is allergic to
        # peanuts" beside the user's diet) is masked in what is exported, a row's own value excepted
        mask = ClearanceMask() if third_parties else ClearanceMask(
            {row["value"] for row in history if row["subject"] != SELF_SUBJECT and isinstance(row["value"], str)})
        events = []
        for seq, event_id, type_, recorded_at, body, redacted_by, salt, commit in conn.execute(
                "SELECT seq, event_id, type, recorded_at, body, redacted_by, salt, commitment FROM events"
                " WHERE app = ? AND user = ? ORDER BY seq", (app, user)):
            if body is not None and (salt is None or chain.commitment(bytes(salt), body.encode()) != commit):
                raise ProjectionMismatch("events", None, seq, "the event's body does not match its commitment")
            if body is None and redacted_by is None:
                raise ProjectionMismatch("events", None, seq, "the event's body is missing and no redaction names it")
            event = {"seq": seq, "event_id": event_id, "type": type_, "recorded_at": recorded_at,
                     "body": body_of(body), "redacted_by": redacted_by}
            about = _about_others(event["body"], others)
            if about and not third_parties:
                event.update(body=None, withheld=f"about another person ({', '.join(sorted(about))})")
            elif mask and isinstance(event["body"], dict):
                event["body"] = mask.deep(event["body"], _own_value(event["body"]))
            events.append(event)
        export = {"format": SUBJECT_FORMAT, "app": app, "user": user, "exported_at": iso(now),
                  "third_parties": "included" if third_parties else "withheld",
                  "facts": mask.rows([f for f in facts if f["subject"] == SELF_SUBJECT]),
                  "history": mask.rows([h for h in history if h["subject"] == SELF_SUBJECT]),
                  "sessions": mask.deep(list_sessions(conn, app, user)),
                  "events": events}
        about_others = {"facts": [f for f in facts if f["subject"] != SELF_SUBJECT],
                        "history": [h for h in history if h["subject"] != SELF_SUBJECT]}
        if third_parties:
            export["about_others"] = about_others
        else:
            counted: dict[tuple[str, str], int] = {}
            for row in about_others["history"]:
                key = (row["subject"], row["predicate"])
                counted[key] = counted.get(key, 0) + 1
            export["withheld_about_others"] = [{"subject": s, "predicate": p, "history_rows": n}
                                               for (s, p), n in sorted(counted.items())]
        return export


def _own_value(body: dict) -> str:
    """The value an event body states for the user (its own, or its candidate's): never masked."""
    candidate = body.get("candidate") if isinstance(body.get("candidate"), dict) else {}
    value = body.get("value", candidate.get("value"))
    return value if isinstance(value, str) else ""


def _about_others(body, others: dict[str, str]) -> set[str]:
    """The other people (subjects) an event body is about: its own or its candidate's subject, or
    a fact id of theirs it names anywhere (a supersession, a dispute, a resolution)."""
    found: set[str] = set()

    def walk(value, key: str | None = None) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str):
            if key == "subject" and value != SELF_SUBJECT:
                found.add(value)
            elif value in others:
                found.add(others[value])

    walk(body)
    return found
