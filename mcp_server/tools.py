"""What each MCP tool does, on the `Ledger` facade, for one caller's `Scope`: no MCP types here.

`server` wraps these in the SDK; the bench calls them in-process as the baseline of a tool call
over HTTP.  Every write (remember, ingest_session, forget) goes through the one writer `Ledger`
under one lock, so many HTTP clients share it safely; every read runs on a `Ledger` of its own
worker thread, so on SQLite (WAL) a read never waits for a write; the serve records of concurrent
recalls, and concurrent remembers, are committed in groups (`GroupCommit`).  After a forget commits, each
reader opens its ledger again before its next read: no forgotten value stays in a reader's
kept folds.  Between calls the tools keep no fact text: a forget's confirmation code maps to the
request's parameters (ids and a reason), not to what it would erase.  Several server processes
(`workers.py`) share the codes and the forget count (`SharedState`); SQLite's lock orders their writers.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from typing_extensions import TypedDict  # pydantic reads a TypedDict's schema from this one before 3.12

from factledger.ledger import make_candidate
from factledger.ledger.errors import LedgerError
from factledger.ledger.service import Ledger
from factledger.ledger.vocabulary.clock import iso
from factledger.ledger.vocabulary.words import DOMAIN_USER
from factledger.mcp_server.scope import OutOfScope, Scope

CODE_SECONDS = 600                  # how long a forget's confirmation code stands
SERVED_FIELDS = ("subject", "predicate", "value", "said_at", "fact_id", "status")


class ServedFact(TypedDict):
    subject: str
    predicate: str
    value: str
    said_at: str
    fact_id: str
    status: str


class RecallAnswer(TypedDict):
    app: str
    user: str
    text: str                       # the stored-facts block, as the model should see it
    facts: list[ServedFact]
    withheld: int                   # facts of the scope kept back by this caller's clearance
    notices: list[str]              # how it ran, when the caller should know (no meaning vectors)


class Decision(TypedDict):
    decision: str                   # insert | supersede | dispute | reinforce | retract | reject | backfill
    fact_id: str | None
    reason: str
    rule: str
    seqs: list[int]


class FactsAnswer(TypedDict):
    app: str
    user: str
    facts: list[dict[str, Any]]
    withheld: int
    notice: str | None              # why nothing was found, when the partition is unknown or erased


class ForgetAnswer(TypedDict):
    committed: bool
    plan: dict[str, Any] | None     # without `confirm`: what would be scrubbed (nothing changed)
    confirm: str | None             # the one-time code that commits exactly this plan's request
    receipt: dict[str, Any] | None  # with `confirm`: the erasure receipt
    note: str


SURFACE = "mcp"                     # what a serve record names as where the values left


def tool_text(answer: dict) -> str:
    """The unstructured text of an answer: the recall block as is, anything else as JSON."""
    return answer["text"] if "text" in answer else json.dumps(answer, ensure_ascii=False, default=str)


class GroupCommit:
    """Writes of concurrent calls committed together (recalls' serve records; remembers'
    candidates): each caller waits until its write has committed, and one of them (the leader)
    writes every item that arrived while the previous leader wrote, in one transaction (one
    fsync) under the writer's lock.  One client pays what it paid before; sixteen share commits
    instead of queueing for sixteen.  A batch written together is what the same items written
    one after another would be (`observe_many`: each candidate sees the ones before it).  A batch
    that fails is written again one by one, so a caller sees only its own item's error."""

    def __init__(self, lock: threading.Lock, write: Callable[[list], list]):
        self._lock = lock
        self._write = write
        self._turn = threading.Condition()
        self._pending: list[list] = []      # [item, done, result, error]
        self._leading = False

    def submit(self, item):
        slot = [item, False, None, None]
        with self._turn:
            self._pending.append(slot)
            while self._leading and not slot[1]:
                self._turn.wait()
            if not slot[1]:
                self._leading = True
        if not slot[1]:
            self._lead()
        if slot[3] is not None:
            raise slot[3]
        return slot[2]

    def _lead(self) -> None:
        batch: list[list] = []
        try:
            with self._lock:
                with self._turn:                 # everything that arrived while the lock was busy
                    batch, self._pending = self._pending, []
                try:
                    for slot, result in zip(batch, self._write([slot[0] for slot in batch])):
                        slot[2] = result
                except Exception as exc:
                    if len(batch) == 1:
                        batch[0][3] = exc
                    else:                        # nothing of it committed: each alone, its own error
                        for slot in batch:
                            try:
                                slot[2] = self._write([slot[0]])[0]
                            except Exception as own:
                                slot[3] = own
        finally:
            with self._turn:
                for slot in batch:
                    slot[1] = True
                self._leading = False
                self._turn.notify_all()


class Counter:
    """An integer in a box, as `multiprocessing.Value` holds one (`.value`)."""

    def __init__(self) -> None:
        self.value = 0


class WriterLock:
    """The lock every write of the server takes: a thread lock, and across worker processes an
    exclusive `flock` on one file (`path`), which each process opens for itself.  Writers of
    several workers then queue on the kernel's lock and wake when it is free, where SQLite's own
    busy handler would have polled with sleeps of up to 100 ms; and the kernel drops the lock of
    a process that dies, as it does SQLite's."""

    def __init__(self, path: str | None = None) -> None:
        self._thread = threading.Lock()
        self._path = path
        self._fd: int | None = None

    def __enter__(self) -> WriterLock:
        self._thread.acquire()
        if self._path is not None:
            import fcntl
            import os

            try:
                if self._fd is None:
                    self._fd = os.open(self._path, os.O_RDWR)
                fcntl.flock(self._fd, fcntl.LOCK_EX)
            except BaseException:
                self._thread.release()
                raise
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            import fcntl

            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._thread.release()

    def close(self) -> None:
        if self._fd is not None:
            import os

            os.close(self._fd)
            self._fd = None


class SharedState:
    """What every worker of one server must see alike: the forget confirmation codes (code ->
    (caller, request, deadline)), the spent ones (code -> (how it was spent, deadline)), the
    lock that orders them, and how many forgets were committed (`forgets`: each reader opens
    its ledger again when it changes), and the file whose `flock` orders the workers' writes
    (`WriterLock`).  `local()` for one process; `workers.serve_workers` makes one whose maps live
    in a manager process and whose counter is in shared memory."""

    def __init__(self, lock, codes, spent, forgets, writer_lock_path: str | None = None) -> None:
        self.lock = lock
        self.codes = codes
        self.spent = spent
        self.forgets = forgets
        self.writer_lock_path = writer_lock_path

    @classmethod
    def local(cls) -> SharedState:
        return cls(threading.Lock(), {}, {}, Counter())


class MemoryTools:
    """The seven tools over one ledger.  `open_ledger(read_only)` opens the writer once
    (`read_only=False`) and a reader per thread (`read_only=True`: a read tool cannot change the
    file, as no read command can; docs/decisions.md, "Read-only opens")."""

    def __init__(self, open_ledger: Callable[[bool], Ledger], extractor: str = "patterns",
                 shared: SharedState | None = None):
        self._open = open_ledger
        self.extractor = extractor
        self.writer = open_ledger(False)
        self._shared = shared if shared is not None else SharedState.local()
        self._write_lock = WriterLock(self._shared.writer_lock_path)
        self._serves = GroupCommit(self._write_lock, self.writer.serves.record_recalls)
        self._remembers = GroupCommit(self._write_lock, self._observe_many)
        self._local = threading.local()
        self._readers: list[Ledger] = []
        self._readers_lock = threading.Lock()

    def close(self) -> None:
        with self._readers_lock:
            for reader in self._readers:
                reader.close()
            self._readers.clear()
        with self._write_lock:
            self.writer.close()
        self._write_lock.close()

    def _reader(self) -> Ledger:
        local = self._local
        generation = self._shared.forgets.value
        if getattr(local, "ledger", None) is not None and local.generation != generation:
            with self._readers_lock:
                self._readers.remove(local.ledger)
            local.ledger.close()
            local.ledger = None
        if getattr(local, "ledger", None) is None:
            local.generation = generation
            local.ledger = self._open(True)
            with self._readers_lock:
                self._readers.append(local.ledger)
        return local.ledger

    # --- reads -----------------------------------------------------------------------------

    def recall(self, scope: Scope, query: str = "", limit: int | None = None, app: str | None = None,
               user: str | None = None) -> RecallAnswer:
        app, user = scope.partition(app, user)
        ledger = self._reader()
        options = dict(clearance=list(scope.clearance), limit=limit, preload=not (query or "").strip())
        # no explanation: the facts of the scope above the clearance are counted by recall itself
        # (`withheld`), and an explanation would be checked against the log fact by fact
        result = ledger.recall(app, user, query or "", **options)
        withheld = result.withheld.get("sensitivity", 0)
        self._serves.submit((result, scope.name, SURFACE))   # recorded, durably, before the answer leaves
        return {"app": app, "user": user, "text": result.text, "withheld": withheld, "notices": result.notices,
                "facts": [{k: str(f.get(k) or "") for k in SERVED_FIELDS} for f in result.selected]}

    def _served(self, scope: Scope, tool: str, answer: dict, facts: list[dict], head_seq: int) -> dict:
        """Record the values an answer hands out (a serve record; ledger/audit/access.py), before it leaves."""
        if facts:
            with self._write_lock:
                self.writer.serves.record_serve(answer["app"], answer["user"], caller=scope.name, surface=SURFACE,
                                         tool=tool, clearance=scope.clearance, facts=facts,
                                         text=tool_text(answer), head_seq=head_seq)
        return answer

    def facts(self, scope: Scope, predicate: str | None = None, valid_at: str | None = None,
              as_of: str | None = None, app: str | None = None, user: str | None = None) -> FactsAnswer:
        app, user = scope.partition(app, user)
        ledger = self._reader()
        head_seq = ledger.head()[0]
        rows = ledger.facts(app, user, predicate=predicate, valid_at=valid_at, as_of=as_of, include_sensitive=True)
        answer = self._cleared(ledger, scope, app, user, rows, predicate)
        return self._served(scope, "facts", answer, answer["facts"], head_seq)

    def history(self, scope: Scope, predicate: str | None = None, app: str | None = None,
                user: str | None = None) -> FactsAnswer:
        app, user = scope.partition(app, user)
        ledger = self._reader()
        head_seq = ledger.head()[0]
        answer = self._cleared(ledger, scope, app, user, ledger.history(app, user, predicate=predicate), predicate)
        return self._served(scope, "history", answer, answer["facts"], head_seq)

    def _cleared(self, ledger: Ledger, scope: Scope, app: str, user: str, rows: list[dict],
                 predicate: str | None) -> FactsAnswer:
        """The rows the caller's clearance covers, their text masked of every value above it (a
        quote that states a withheld fact), as the CLI and the web view show them."""
        if not rows and predicate is not None and ledger.registry.resolve(predicate) is None:
            raise ledger.registry.unknown(predicate)       # as the CLI: an unknown name is an error
        shown = [r for r in rows if r.get("sensitivity") in scope.clearance]
        mask = ledger.lookup.clearance_mask(app, user, scope.clearance)
        notice = ledger.notices.partition_notice(app, user, within_apps=(scope.app,),
                                         within_users=None if scope.any_user else scope.users) if not rows else None
        return {"app": app, "user": user, "facts": mask.rows(shown) if mask else shown,
                "withheld": len(rows) - len(shown), "notice": notice}

    def why(self, scope: Scope, fact_id: str) -> dict:
        """A fact's provenance, if the fact is the caller's (or its app's shared `_domain` fact,
        which recall serves to the caller) and its clearance covers it; otherwise the same refusal
        whether or not the fact exists elsewhere."""
        ledger = self._reader()
        refusal = OutOfScope(f"no fact {fact_id!r} in this caller's scope ({scope.describe()})")
        try:
            found = ledger.why(fact_id)
        except LedgerError:
            raise refusal from None
        fact = found["fact"]
        if fact.get("sensitivity") not in scope.clearance:
            raise refusal
        if not (fact["app"] == scope.app and fact["user"] == DOMAIN_USER):
            try:
                scope.partition(fact["app"], fact["user"])
            except OutOfScope:
                raise refusal from None
        answer = ledger.lookup.cleared_why(found, scope.clearance)
        with self._write_lock:
            self.writer.serves.record_serve(fact["app"], fact["user"], caller=scope.name, surface=SURFACE, tool="why",
                                     clearance=scope.clearance, facts=[fact], text=tool_text(answer))
        return answer

    # --- writes ----------------------------------------------------------------------------

    def remember(self, scope: Scope, predicate: str, value: str, quote: str, session: str,
                 event_id: str | None = None, said_at: str | None = None, subject: str = "user",
                 negated: bool = False, basis: str = "stated", app: str | None = None,
                 user: str | None = None, kind: str | None = None) -> Decision:
        """One candidate, through the validator and decision table every write takes."""
        app, user = scope.partition(app, user)
        said_at = said_at or iso(self.writer.clock())
        if not event_id:               # the same statement offered again is the same evidence
            seed = json.dumps([session, subject, predicate, value, quote, said_at, negated]
                              + ([kind] if kind else []))
            event_id = "mcp-" + hashlib.sha256(seed.encode()).hexdigest()[:24]
        candidate = make_candidate(app=app, user=user, subject=subject, predicate=predicate, value=value,
                                   quote=quote, session=session, evidence_event=event_id, said_at=said_at,
                                   basis=basis, author="user", negated=negated, kind=kind)
        return self._remembers.submit(candidate)     # committed, with others that came meanwhile

    def _observe_many(self, candidates: list) -> list[dict]:
        return [outcome.as_dict() for outcome in self.writer.observe_many(candidates)]

    def ingest_session(self, scope: Scope, session: dict | str, app: str | None = None,
                       user: str | None = None) -> dict:
        """A google-adk session (its JSON object, or that as text): what is new since its
        watermark; the session's own appName / userId must lie in the caller's scope too."""
        if isinstance(session, str):
            try:
                session = json.loads(session)
            except ValueError as exc:
                raise LedgerError(f"the session is not JSON: {exc}") from None
            except RecursionError:
                raise LedgerError("the session's JSON is nested too deeply to read; nothing was written") from None
        if not isinstance(session, dict):
            raise LedgerError("an ADK session must be a JSON object")
        own_app = session.get("appName", session.get("app_name"))
        own_user = session.get("userId", session.get("user_id"))
        app, user = scope.partition(app or own_app, user or own_user)
        with self._write_lock:
            result = self.writer.ingest_session(session, app=app, user=user, extractor=self.extractor)
        if result.status == "error":
            raise LedgerError(result.error or "the session could not be ingested")
        answer = result.as_dict()
        answer.pop("explained", None)
        return answer

    def forget(self, scope: Scope, reason: str, session: str | None = None, fact_id: str | None = None,
               predicate: str | None = None, all: bool = False, ticket: str | None = None,
               confirm: str | None = None, app: str | None = None, user: str | None = None) -> ForgetAnswer:
        """Without `confirm`: the plan and a one-time code, nothing changed.  With the code (a
        reviewer's, or stdio started with --allow-forget): the erasure, and its receipt."""
        app, user = scope.partition(app, user)
        named = [n for n, v in (("session", session), ("fact_id", fact_id), ("predicate", predicate),
                                ("all", all or None)) if v]
        if len(named) != 1:
            raise LedgerError("forget needs exactly one of session, fact_id, predicate or all=true "
                              f"(got {', '.join(named) or 'none'}); nothing was changed")
        if fact_id is not None:
            self._own_fact(scope, app, user, fact_id)
        request = json.dumps([app, user, session, fact_id, predicate, bool(all), reason, ticket])
        options = dict(session=session, fact=fact_id, predicate=predicate, reason=reason, ticket=ticket,
                       requested_by=f"mcp:{scope.name}")
        may_commit = scope.role == "reviewer"
        if confirm is None:
            with self._write_lock:
                plan = self.writer.forget(app, user, dry_run=True, **options)
            code = self._issue(scope, request) if may_commit else None
            note = ("nothing changed: call forget again with the same arguments and confirm=<code> to commit"
                    if may_commit else
                    "nothing changed: only a reviewer token (or a stdio server started with --allow-forget) "
                    "may commit a forget")
            return {"committed": False, "plan": plan, "confirm": code, "receipt": None, "note": note}
        if not may_commit:
            raise LedgerError("only a reviewer token (or a stdio server started with --allow-forget) may "
                              "commit a forget; nothing was changed")
        self._redeem(scope, request, confirm)
        try:
            with self._write_lock:
                receipt = self.writer.forget(app, user, **options)
        finally:                         # committed or not, every reader opens its ledger again
            with self._shared.lock:
                self._shared.forgets.value += 1
        with self._shared.lock:
            self._shared.spent[confirm] = ("it committed its forget", time.monotonic() + CODE_SECONDS)
        return {"committed": True, "plan": None, "confirm": None, "receipt": receipt,
                "note": "forgotten; run verify to check the log and the projections"}

    def _own_fact(self, scope: Scope, app: str, user: str, fact_id: str) -> None:
        ledger = self._reader()
        if not (ledger.lookup.fact_observed_in(fact_id, app, user)
                or ledger.erased.is_forgotten_fact(app, user, fact_id)
                or ledger.erased.is_forgotten_user(app, user)):
            raise OutOfScope(f"no fact {fact_id!r} for app {app!r}, user {user!r}; nothing was changed")

    def _issue(self, scope: Scope, request: str) -> str:
        now = time.monotonic()
        code = secrets.token_hex(4)
        with self._shared.lock:
            codes = self._shared.codes
            for old in [c for c, v in codes.items() if v[2] <= now]:
                del codes[old]
            codes[code] = (scope, request, now + CODE_SECONDS)
        return code

    def _redeem(self, scope: Scope, request: str, code: str) -> None:
        """Take the code, once: a code offered with other arguments than its plan's (or by another
        caller) is spent too, so that it cannot be tried again; each refusal says which case it
        was, and a later use of a spent code says how it was spent, not that it does not match."""
        now = time.monotonic()
        with self._shared.lock:
            held = self._shared.codes.pop(code, None)
            spent = self._shared.spent.get(code)
            for old in [c for c, v in self._shared.spent.items() if v[1] <= now]:
                del self._shared.spent[old]
            if held is not None and held[2] >= now and (held[0] != scope or held[1] != request):
                self._shared.spent[code] = ("a request whose arguments differed from its plan's spent it"
                                     if held[0] == scope else "another caller offered it", now + CODE_SECONDS)
        again = "ask for the plan again (forget without confirm) and confirm with its new code; nothing was changed"
        if held is None:
            if spent is not None and spent[1] > now:
                raise LedgerError(f"the confirmation code was already used ({spent[0]}): a code is good once; {again}")
            raise LedgerError(f"the confirmation code is not one this server issued, or it expired (a code stands "
                              f"for {CODE_SECONDS // 60} minutes): {again}")
        if held[2] < now:
            raise LedgerError(f"the confirmation code expired (codes stand for {CODE_SECONDS // 60} minutes): {again}")
        if held[0] != scope:
            raise LedgerError(f"the confirmation code was issued to another caller and is now spent: {again}")
        if held[1] != request:
            names = ("app", "user", "session", "fact_id", "predicate", "all", "reason", "ticket")
            differ = [n for n, a, b in zip(names, json.loads(held[1]), json.loads(request)) if a != b]
            verb = "differs" if len(differ) == 1 else "differ"
            raise LedgerError(f"the confirmation code does not match this request ({', '.join(differ)} {verb} from"
                              f" the plan's), and is now spent (a code is good once, for the same caller and"
                              f" arguments): {again}")
