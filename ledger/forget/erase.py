"""Right-to-forget and retention: one request, one transaction, one receipt, no byte left behind.

Inside one `BEGIN IMMEDIATE` transaction: plan the target events (`targets.py`); scrub their
bodies and salts (for a whole user, pseudonymise `user`); rebuild the affected partitions'
projections; append the content-free `Redacted` receipt; decide the affected keys again
(`redecide.py`), so the state is exactly a rebuild from the log.  After the commit the engine makes
the scrub physical (`UnitOfWork.purge`: SQLite's WAL truncated, `vacuum=True` compacts the file;
PostgreSQL's VACUUM FULL unless `vacuum=False`).  A dry run does all of it and rolls back, so its
plan is the real one (docs/forgetting.md).
"""

from __future__ import annotations

import sqlite3
import time
from datetime import timedelta

from factledger.ledger.domain.eventrow import body_of
from factledger.ledger.domain.events import EVENT, Redacted, parse_body
from factledger.ledger.errors import LedgerError
from factledger.ledger.forget.restate import has_content, restate, restatement, without_content
from factledger.ledger.forget.scope import (
    ALL_APPS,
    ERASURES_USER,
    Scope,
    event_hash,
    fact_hash,
    pseudonym,
    retention_hash,
    session_hash,
    user_hash,
)
from factledger.ledger.forget.targets import Plan, candidate_expired, emptied_sessions, plan, unknown_fact
from factledger.ledger.registry.predicates import SENSITIVITIES
from factledger.ledger.store.eventlog import pseudonymise, scrub
from factledger.ledger.store.reads import (
    bodies_at,
    candidate_bodies,
    has_partition,
    partitions_observed_before,
    partitions_serving_before,
    predicates_observed_as,
    serves_naming,
)
from factledger.ledger.vocabulary.clock import iso
from factledger.ledger.vocabulary.words import DOMAIN_USER, ERASED_PREFIX
from factledger.projections.current import open_fact_ids
from factledger.projections.erasures import is_forgotten, session_erased_at
from factledger.projections.keystate import StoredPartition
from factledger.projections.serves import drop_serves

DEFAULT_REQUESTER = "unspecified"


class _DryRun(Exception):
    """Raised inside the transaction to roll a dry run back after it computed everything."""

    def __init__(self, receipt: dict):
        self.receipt = receipt


def forget(ledger, scope: Scope, reason: str | None, requester: str | None = None, *,
           dry_run: bool = False, vacuum: bool | None = None, ticket: str | None = None) -> dict:
    """Forget one scope of one partition; returns the receipt (a no-op receipt if nothing is there).

    `ticket` is an external reference (a case number), recorded in the `Redacted` event and the
    receipt so the compliance file can link the two; it must not carry personal data."""
    reason, requester = check_words(reason, requester)
    ticket = check_ticket(ticket)

    def plans() -> list[Plan]:
        conn = ledger.conn
        if is_forgotten(conn, scope.app, "user", user_hash(scope.app, scope.user)) and not has_partition(
                conn, scope.app, scope.user):
            return []
        found = plan(conn, scope, ledger.registry)
        if scope.kind == "fact" and scope.fact_id not in found.facts_by_id:
            if is_forgotten(conn, scope.app, "fact", fact_hash(scope.app, scope.user, scope.fact_id)):
                return []
            raise unknown_fact(conn, scope)
        if scope.kind == "session" and found.empty:
            if session_erased_at(conn, scope.app, session_hash(scope.app, scope.user, scope.session)) is not None:
                return []                     # forgotten, or emptied by a fact-wide forget: done
            raise LedgerError(f"no session {scope.session!r} for app {scope.app!r}, "
                              f"user {scope.user!r}")
        return [found] if not found.empty else []

    return _run(ledger, scope.kind, scope.hash, scope.app, plans, reason, requester,
                dry_run=dry_run, vacuum=vacuum, ticket=ticket)


SERVES_POLICY = "[serves]"        # the policy's name for serve records (no predicate is spelled so)


def retain(ledger, *, apply: bool = False, older_than: int | None = None,
           predicate: str | None = None, sensitivity: str | None = None, app: str | None = None,
           user: str | None = None, reason: str | None = None, requester: str | None = None,
           vacuum: bool | None = None, serves_older_than: int | None = None) -> dict:
    """Forget facts past their retention: the registry's `retention_days`, or `older_than` days
    for one predicate or sensitivity class; and serve records past theirs (the registry's
    `[serves] retention_days`, or `serves_older_than` days alone), each scrubbed whole.  A dry
    run unless `apply`; one receipt."""
    days = _policy(ledger, older_than, predicate, sensitivity, serves_older_than)
    reason, requester = check_words(reason or "retention policy", requester or "retention")
    now = ledger.clock()
    cutoffs = {name: iso(now - timedelta(days=n)) for name, n in days.items()}
    serves_cutoff = cutoffs.pop(SERVES_POLICY, None)
    policy = tuple(sorted(cutoffs.items()))
    kind_hash = retention_hash(days, app, user)

    def plans() -> list[Plan]:
        found = []
        for part_app, part_user in _expired_partitions(ledger.conn, cutoffs, ledger.registry, app, user,
                                                       serves_cutoff):
            scope = Scope("retention", part_app, part_user, cutoffs=policy, run_hash=kind_hash,
                          serves_cutoff=serves_cutoff)
            one = plan(ledger.conn, scope, ledger.registry)
            if not one.empty:
                found.append(one)
        return found

    receipt = _run(ledger, "retention", kind_hash, app or ALL_APPS, plans, reason, requester,
                   dry_run=not apply, vacuum=vacuum)
    receipt["policy"] = {p: c for p, c in policy} | ({SERVES_POLICY: serves_cutoff} if serves_cutoff else {})
    receipt["retention_days"] = dict(sorted(days.items()))
    return receipt


def is_forgotten_session(conn: sqlite3.Connection, app: str, user: str, session: str) -> bool:
    return is_forgotten(conn, app, "session", session_hash(app, user, session))


# --- the one path every request takes ------------------------------------------------------

def _run(ledger, kind: str, digest: str, app: str, make_plans, reason: str, requester: str, *,
         dry_run: bool, vacuum: bool | None, ticket: str | None = None) -> dict:
    started = time.perf_counter()
    try:
        with ledger.transaction():
            if not dry_run:
                refuse_foreign(ledger)
            plans = make_plans()
            if not plans:
                receipt = _noop(kind, digest, reason, requester, ledger)
            else:
                receipt = _execute(ledger, plans, kind, digest, app, reason, requester, ticket)
            receipt["ticket"] = ticket
            receipt["dry_run"] = dry_run
            if dry_run:
                receipt["plan"] = [p.describe() for p in plans]
                raise _DryRun(receipt)
    except _DryRun as rolled_back:
        receipt = rolled_back.receipt
        # nothing was recorded: a plan has no seq, event id or compensating seqs, only counts
        receipt["compensating_events"] = len(receipt.get("compensating_seqs") or [])
        receipt.update(redaction_seq=None, event_id=None, compensating_seqs=[])
        receipt["seconds"] = round(time.perf_counter() - started, 4)
        return receipt
    if not receipt["noop"]:
        ledger.recall_kept.forget()             # this ledger's kept scopes and text memo
        receipt["purge"] = ledger.purge(vacuum, partitions=changed_partitions(plans))
    receipt["seconds"] = round(time.perf_counter() - started, 4)
    return receipt


def refuse_foreign(ledger) -> None:
    """A forget scrubs bodies with UPDATEs: a trigger, rule or view the ledger did not create can
    copy each scrubbed body and salt elsewhere in the file before it goes, and the forgotten value
    would stay.  So no forget runs while the schema holds one (`verify` names it, `repair` drops it)."""
    foreign = ledger.foreign_objects()
    if foreign:
        raise LedgerError("the ledger's schema holds what the ledger did not create, which could keep a copy of "
                          "what a forget scrubs: " + "; ".join(foreign) + ". Nothing was forgotten")


def changed_partitions(plans: list[Plan]) -> tuple[tuple[str, str], ...]:
    """The (app, user) partitions a forget's scrub and rebuild changed, for the purge: every event
    and projection row it rewrites or deletes is in a plan's partition (fact ids and restatements
    are partition-local), or is a serve record of a `_domain` fact in a partition that read it.
    A whole user's events move to the pseudonym by insert, which leaves no old row version there."""
    return tuple(sorted({(p.scope.app, p.scope.user) for p in plans}
                        | {(p.scope.app, other) for p in plans for other in p.served_in}))


def _execute(ledger, plans: list[Plan], kind: str, digest: str, app: str, reason: str,
             requester: str, ticket: str | None = None) -> dict:
    conn, store, projector = ledger.conn, ledger.store, ledger.projector
    redaction_seq = store.last_seq + 1          # the Redacted event's seq, known under the lock
    counts: dict[str, int] = {"events": 0, "facts": 0, "sessions": 0, "keys": 0, "restated": 0}
    targets: list[int] = []
    restated: list[int] = []
    sessions: set[str] = set()
    facts: list[str] = []
    events_read: set[str] = set()         # ids an ingestion read (ADK): erased, never read again
    emptied: set[str] = set()
    again = [restatement(p, ledger.registry) for p in plans]
    elsewhere = _served_elsewhere(conn, plans, again)
    if elsewhere:                             # scrubbed first: a plan's rebuild below then skips them
        scrub(conn, sorted(elsewhere), redaction_seq)
        drop_serves(conn, sorted(elsewhere))
        counts["serve_records"] = len(elsewhere)
        targets += sorted(elsewhere)
        restated += sorted(elsewhere)
    open_before: list[set[str]] = []
    for p, r in zip(plans, again):
        s = p.scope
        open_before.append(open_fact_ids(conn, s.app, s.user))
        before = projector.partition_counts(conn, s.app, s.user)
        scrub(conn, [*p.targets, *r.moved], redaction_seq)
        if s.kind == "user":
            pseudonymise(conn, s.app, s.user, pseudonym(s.app, s.user), redaction_seq)
            counts["pseudonymised"] = counts.get("pseudonymised", 0) + len(p.targets) + len(p.already)
        projector.rebuild(conn, app=s.app, user=s.user)
        after = projector.partition_counts(conn, s.app, s.user)
        for table, n in before.items():
            removed = n - after.get(table, 0)
            if removed > 0:
                counts[f"rows:{table}"] = counts.get(f"rows:{table}", 0) + removed
        counts["events"] += len(p.targets)
        counts["facts"] += len(p.facts)
        counts["sessions"] += len(p.sessions)
        counts["keys"] += len(r.cut)
        p.decided_again = set(r.cut)          # the plan names the keys this counts
        counts["restated"] += len(r.moved)
        served = sum(1 for _seq, b in r.records if b.get("type") == EVENT.FactsServed)
        if served:                            # serve records recorded again without their hashes
            counts["serve_records"] = counts.get("serve_records", 0) + served
        expired = p.by_type.get(EVENT.FactsServed, 0) if s.kind == "retention" else 0
        if expired:                           # serve records past their own retention, scrubbed whole
            counts["serve_records_expired"] = counts.get("serve_records_expired", 0) + expired
        p.restated = r.moved
        targets += p.targets + r.moved
        restated += r.moved
        sessions |= {session_hash(s.app, s.user, x) for x in p.sessions}
        read = {e.seq: e.body for e in p.events if e.type == EVENT.SessionIngested and e.body}
        events_read |= {event_hash(s.app, s.user, read[seq]["session"], x) for seq in p.targets
                        if seq in read for x in read[seq].get("event_ids") or ()}
        # A whole user's facts are hashed with the pseudonym its events now carry (the log names
        # that, not the user), so `why FACT` can still name the receipt; nothing else is revealed.
        owner = pseudonym(s.app, s.user) if s.kind == "user" else s.user
        facts += [fact_hash(s.app, owner, f) for f in sorted(p.facts)]
        if s.fact_wide:
            emptied |= {session_hash(s.app, s.user, x) for x in emptied_sessions(p)}
    body = Redacted(app=app, user=ERASURES_USER, scope_kind=kind, scope_hash=digest,
                    reason=reason, requester=requester, target_seqs=sorted(targets),
                    counts=counts, session_hashes=sorted(sessions), fact_hashes=facts,
                    partitions=len(plans), ticket=ticket, restated_seqs=sorted(restated),
                    event_hashes=sorted(events_read) or None,
                    emptied_session_hashes=sorted(emptied - sessions))
    event = store.append(body)
    if event.seq != redaction_seq:
        raise LedgerError("internal: the Redacted event did not get the expected seq")
    compensating: list[int] = []
    for p, r, before in zip(plans, again, open_before):
        s = p.scope
        restate(p, r, event.seq, ledger.registry.sha256,
                StoredPartition(conn, s.app, s.user, lambda b: compensating.append(store.append(b).seq)), before)
    for seq, (_user, body) in sorted(elsewhere.items()):
        compensating.append(store.append(parse_body({**body, "cause": event.seq, "restates": seq})).seq)
    return {"noop": False, "redaction_seq": event.seq, "event_id": event.event_id,
            "scope_kind": kind, "scope_hash": digest, "recorded_at": event.recorded_at,
            "reason": reason, "requester": requester, "counts": counts,
            "compensating_seqs": compensating, "partitions": len(plans)}


def _served_elsewhere(conn, plans: list[Plan], again) -> dict[int, tuple[str, dict]]:
    """Serve records outside a plan's partition that handed out a fact it forgets: seq -> (their
    partition's user, the body to record again without content).  Only a `_domain` fact is served
    outside its own partition (a user's recall reads the domain beside the user), so only a plan
    of the domain looks; a record a plan of its own partition records again already is left to it.
    The text hash of such a record is a test of a guess at the forgotten value: it goes too."""
    mine = {seq for p, r in zip(plans, again) for seq in (*p.targets, *r.moved, *(s for s, _ in r.records))}
    found: dict[int, tuple[str, dict]] = {}
    for p in plans:
        if p.scope.user != DOMAIN_USER or not p.facts:
            continue
        seqs = serves_naming(conn, p.scope.app, p.scope.user, sorted(p.facts))     # the log's, not served_facts
        stored = bodies_at(conn, [seq for seq in seqs if seq not in mine])
        for seq, (_at, raw) in stored.items():
            body = body_of(raw) if raw is not None else None
            if body is not None and body.get("type") == EVENT.FactsServed and has_content(body):
                found[seq] = (seqs[seq], without_content(body))
                p.served_in.add(seqs[seq])
    return found


def _noop(kind: str, digest: str, reason: str, requester: str, ledger) -> dict:
    return {"noop": True, "redaction_seq": None, "event_id": None, "scope_kind": kind,
            "scope_hash": digest, "recorded_at": iso(ledger.clock()), "reason": reason,
            "requester": requester, "counts": {"events": 0, "facts": 0, "sessions": 0, "keys": 0, "restated": 0},
            "compensating_seqs": [], "partitions": 0}


# --- helpers ------------------------------------------------------------------------------

def check_ticket(ticket: str | None) -> str | None:
    """An external reference: short, one line, printable; empty means none."""
    if ticket is None or not ticket.strip():
        return None
    ticket = ticket.strip()
    if len(ticket) > 100 or any(not ch.isprintable() for ch in ticket):
        raise LedgerError("--ticket is an external reference: at most 100 printable characters, one line")
    return ticket


def check_words(reason: str | None, requester: str | None) -> tuple[str, str]:
    """A forget's reason (required) and requester, stripped and within their limits."""
    if reason is None or not reason.strip():
        raise LedgerError("a reason is required: --reason (e.g. 'GDPR art. 17 request 2026-114')")
    requester = (requester or DEFAULT_REQUESTER).strip() or DEFAULT_REQUESTER
    if len(reason) > 500 or len(requester) > 200:
        raise LedgerError("--reason is limited to 500 characters and --requested-by to 200")
    return reason.strip(), requester


def _policy(ledger, older_than: int | None, predicate: str | None,
            sensitivity: str | None, serves_older_than: int | None = None) -> dict[str, int]:
    """predicate -> days kept: facts last confirmed longer ago are past retention; and under
    `SERVES_POLICY` the days a serve record is kept (the registry's, in a run of its whole policy)."""
    if serves_older_than is not None:
        if isinstance(serves_older_than, bool) or serves_older_than <= 0:
            raise LedgerError("--serves-older-than must be a positive number of days")
        if older_than is not None or predicate is not None or sensitivity is not None:
            raise LedgerError("--serves-older-than is a run of its own: not with --older-than, --predicate "
                              "or --sensitivity")
        return {SERVES_POLICY: serves_older_than}
    if predicate is not None and sensitivity is not None:
        raise LedgerError("give --predicate or --sensitivity, not both")
    if older_than is not None and (isinstance(older_than, bool) or older_than <= 0):
        raise LedgerError("--older-than must be a positive number of days")
    if older_than is not None and predicate is None and sensitivity is None:
        raise LedgerError("--older-than needs a class: --predicate P or --sensitivity S")
    registry = ledger.registry
    if predicate is not None:
        spec = registry.resolve(predicate)
        if spec is None:
            raise registry.unknown(predicate)
        days = older_than or spec.retention_days
        if days is None:
            raise LedgerError(f"predicate {spec.name} has no retention_days; give --older-than DAYS")
        return {spec.name: days}
    if sensitivity is not None:
        if sensitivity not in SENSITIVITIES:
            raise LedgerError(f"unknown sensitivity {sensitivity!r} (one of {', '.join(SENSITIVITIES)})")
        names = {s.name for s in registry.predicates.values() if s.sensitivity == sensitivity}
        names |= predicates_observed_as(ledger.conn, sensitivity)     # the log's, not a history row's
        return {name: older_than for name in sorted(names)}
    days = {s.name: s.retention_days for s in registry.predicates.values() if s.retention_days}
    if registry.serve_retention_days:
        days[SERVES_POLICY] = registry.serve_retention_days
    return days


def _expired_partitions(conn: sqlite3.Connection, cutoffs: dict[str, str], registry, app: str | None,
                        user: str | None, serves_cutoff: str | None = None) -> list[tuple[str, str]]:
    """Every partition that may hold anything past its retention: an observation said before its
    cutoff, or a held or rejected candidate said before it (a partition need not hold an expired
    fact for its candidates to expire; the digest of a session goes with what its plan takes).
    Chosen from the log, never from a projection row (a deleted history row would have the run
    skip a partition); each partition's plan, from its events, decides what goes."""
    found = partitions_observed_before(conn, cutoffs, app, user)
    for part_app, part_user, body in candidate_bodies(conn, app, user):
        if (part_app, part_user) not in found and candidate_expired(body, cutoffs, registry):
            found.add((part_app, part_user))
    found = {p for p in found if not p[1].startswith(ERASED_PREFIX) and p[1] != ERASURES_USER}
    if serves_cutoff is not None:             # a forgotten user's serve records (the pseudonym's) expire too
        found |= partitions_serving_before(conn, serves_cutoff, app, user)
    return sorted(found)
