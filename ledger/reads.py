"""The reads the shells need beyond facts, history and recall: one door, the `Ledger` facade.

The CLI, the web view and the ADK service never hold the connection, the store or the
projections' read functions (pyproject's `forbidden` contract); each question they ask is a
method here, which `Ledger` inherits, named for what it returns.  A method takes ids as the
caller gives them and passes them on as they are, as the read it wraps did when the shell called
it (a notice must be able to say "no user ''", so nothing here refuses an id the read accepts);
the ADK service's lookups normalise, as `ledger.erased.is_forgotten_session` does.  A read of more than
one statement runs in one read transaction (`snapshot`), as the facade's other reads do.
"""

from __future__ import annotations

from collections.abc import Iterator

from factledger.ledger.audit import presence, served
from factledger.ledger.audit.cleartext import ClearanceMask
from factledger.ledger.audit.erasure_report import erasure_report
from factledger.ledger.audit.inventory import partitions as partition_inventory
from factledger.ledger.audit.logquery import iter_log
from factledger.ledger.audit.proofs import origin
from factledger.ledger.audit.why import related
from factledger.ledger.domain.eventrow import body_of
from factledger.ledger.domain.events import EVENT
from factledger.ledger.domain.recall_options import parse_clearance
from factledger.ledger.errors import LedgerError
from factledger.ledger.forget.scope import event_hash, fact_hash, session_hash, user_hash
from factledger.ledger.store import engines
from factledger.ledger.store import reads as logread
from factledger.ledger.store.eventlog import snapshot
from factledger.ledger.vocabulary.ids import normalise_id, normalise_partition
from factledger.ledger.vocabulary.words import DOMAIN_USER, SENSITIVITIES
from factledger.projections import current, erasures
from factledger.projections.history import open_interval
from factledger.projections.history import values_above as history_values_above
from factledger.projections.provenance import observed_in, seqs_touching
from factledger.projections.review import held_counts
from factledger.projections.serves import fact_classes
from factledger.projections.sessions import session_counts

# What `fact_relations` shows of a related fact (its latest statement), checked against the log.
_STATEMENT = ("fact_id", "value", "session", "quote", "said_at", "author")
CHUNK = 500                     # bound parameters per query (the erased event ids of a session)


class Reads:
    """The read methods of `Ledger` that the shells use (`self._work` is the open unit of work)."""

    # --- clearance -----------------------------------------------------------------------------

    def _clearance_mask(self, app: str, user: str, clearance) -> ClearanceMask:
        """What masks, in text shown to a reader with `clearance` (a level of `normal < personal
        < health`), the values of the partition's facts above it, every interval of them
        (`ledger.audit.cleartext`).  The partition and, as recall serves it, its app's `_domain`."""
        app, user = normalise_partition(app, user)
        with snapshot(self._conn):
            return self._clearance_mask(app, user, clearance)

    def _clearance_mask(self, app: str, user: str, clearance, kept=None) -> ClearanceMask:
        """`clearance_mask` inside the caller's snapshot (recall asks it in the one it reads in).
        `kept`: the scope recall read (`projections.recallcache.ScopeMemo`; `RecallResult.scope`),
        which keeps the values with itself: they change only with the log, as what it keeps does
        (a scope that is not kept, `--as-of` or inside a write, is read afresh each call)."""
        cleared = parse_clearance(clearance)
        if len(cleared) == len(SENSITIVITIES):
            return ClearanceMask()             # cleared for every level: nothing to mask
        users = tuple(dict.fromkeys((user, DOMAIN_USER)))

        def above() -> list[str]:
            return history_values_above(self._conn, app, users, cleared)

        return ClearanceMask(above() if kept is None else kept.derived(("values_above", users, cleared), above))

    def _cleared_why(self, report: dict, clearance) -> dict:
        """A `why` report as a reader with `clearance` may see it: a fact above the clearance is
        refused, and every text of the report (quotes, bodies, related facts) has the partition's
        values above it masked, the fact's own value excepted.  One rule for the CLI, the web view
        and the MCP server."""
        allowed = parse_clearance(clearance)
        fact = report["fact"]
        if fact["sensitivity"] not in allowed:
            raise LedgerError(f"fact {fact['fact_id']!r} is {fact['sensitivity']}: above the clearance "
                              f"{allowed[-1]} (see it with --clearance {fact['sensitivity']})")
        mask = self._clearance_mask(fact["app"], fact["user"], allowed)
        return mask.row(report, own_value=fact["value"]) if mask else report

    # --- the ledger itself ---------------------------------------------------------------------

    @property
    def schema_report(self) -> list[str]:
        """What opening changed in the file or the schema (a tightened mode, an added index), so
        that a shell says it once, in its own words."""
        return list(self._work.schema_report)

    def shown_location(self) -> str:
        """Where the ledger lives, as messages show it: the file path, or the PostgreSQL URL with
        its password hidden and the ledger's schema named (what `factledger init` prints)."""
        return self._work.where

    def event_count(self) -> int:
        """How many events the log holds, to size a progress bar before a replay."""
        return logread.count(self._conn)

    def _first_recorded_at(self) -> str | None:
        """When the first event was recorded (None for an empty log): an `as_of` before it
        answers nothing, and the shell says why instead of printing an empty table."""
        return logread.first_recorded_at(self._conn)

    def stream_log(self, **filters) -> Iterator[dict]:
        """The log's events in seq order, streamed one at a time (`factledger log` prints them as
        they come, so a log of millions never sits in memory).  Filters: app, user, type, after,
        limit, predicate (a registry name), session, fact, since, until
        (`ledger.audit.logquery.iter_log`)."""
        return iter_log(self._conn, **filters)

    def checkpoint_origin(self) -> str | None:
        """The name this ledger's checkpoints carry (None while the log is empty): what a new
        signing key is named after when no name is given."""
        return origin(self._conn)

    def partitions(self, app: str | None = None) -> list[dict]:
        """Every (app, user) with its event, open-fact and held-candidate counts, the erased users
        and the receipts' own partition shown as what they are (`factledger partitions`)."""
        with snapshot(self._conn), served.keeping(self._served_kept):
            return partition_inventory(self._conn, app)

    def _partition_summaries(self) -> list[dict]:
        """Every partition with open facts, held candidates or ingested sessions, with those
        counts (the web view's front page); the three counts are read as one state."""
        conn = self._conn
        with snapshot(conn):
            facts, held, sessions = current.partition_counts(conn), held_counts(conn), session_counts(conn)
        return [{"app": app, "user": user, "open_facts": facts.get((app, user), (0, 0))[0],
                 "disputed": facts.get((app, user), (0, 0))[1], "held": held.get((app, user), 0),
                 "sessions": sessions.get((app, user), 0)}
                for app, user in sorted(set(facts) | set(held) | set(sessions))]

    # --- why a read found nothing ------------------------------------------------------------

    def _partition_notice(self, app: str, user: str, *, within_apps=None, within_users=None) -> str | None:
        """Why a read of this partition found nothing when the partition is not there (no such
        app or user, with a near spelling, or the user erased, naming the receipt); None when it
        exists.  A shell prints it so that a typo never looks like an empty answer.  A scoped
        caller passes the apps and users it may read: no other is named (`presence.partition_notice`)."""
        with snapshot(self._conn), served.keeping(self._served_kept):
            return presence.partition_notice(self._conn, app, user, within_apps=within_apps,
                                             within_users=within_users)

    def _session_notice(self, app: str | None, user: str | None, session: str) -> str | None:
        """Why a session filter found nothing (the session erased, naming the receipt, or never
        seen); None when the ledger knows the session."""
        with snapshot(self._conn), served.keeping(self._served_kept):
            return presence.session_notice(self._conn, app, user, session)

    # --- facts ---------------------------------------------------------------------------------

    def _fact_relations(self, fact_id: str, events: list[dict]) -> list[dict]:
        """What happened to a fact: one entry per event of `Ledger.why(fact_id)["events"]` that
        links it to another fact, a statement or a reviewer (what replaced, disputed or retracted
        it, and who settled it), for `factledger why`."""
        # an event listed once with several roles (`Ledger.why`) is read in each of them; an entry
        # two roles give alike (a resolution seen as subject and as loser) is one entry
        each = [{**e, "role": role} for e in events for role in e.get("roles", [e["role"]])]
        with snapshot(self._conn), served.keeping(self._served_kept):
            found = []
            for entry in related(self._conn, fact_id, each):
                if entry not in found:
                    found.append(entry)
            served.check(self._conn, [{k: e[k] for k in _STATEMENT} for e in found if e.get("value") is not None],
                         table="fact_history")
        return found

    def _fact_erasure(self, fact_id: str) -> dict | None:
        """What `why` says of an erased fact, whatever erased it (the user, a session, the fact, a
        predicate, a class, retention): the fact id, when, and the receipt (seq, scope kind,
        reason, ticket); never a value, which the ledger no longer holds.  None if not erased."""
        with snapshot(self._conn), served.keeping(self._served_kept):
            seq = presence.fact_erased_at(self._conn, fact_id)
        if seq is None:
            return None
        receipt = next((r for r in self.erasures() if r["redaction_seq"] == seq), {})
        return {"fact_id": fact_id, "status": "erased", "erased_at": receipt.get("recorded_at"),
                "receipt_seq": seq, "scope_kind": receipt.get("scope_kind"), "reason": receipt.get("reason"),
                "ticket": receipt.get("ticket")}

    def _fact_interval(self, fact_id: str) -> tuple[str, str, str] | None:
        """(value, state, sensitivity) of a fact as it stands now, or None when the ledger no
        longer holds it: what a page shows of a fact another fact's events name."""
        with snapshot(self._conn), served.keeping(self._served_kept):
            found = open_interval(self._conn, fact_id)
            if found is not None:
                served.check(self._conn, [dict(zip(("value", "state", "sensitivity"), found), fact_id=fact_id)],
                             table="fact_history")
        return found

    def _served_fact_classes(self, app: str, fact_ids: list[str]) -> dict[str, tuple[str, str, str]]:
        """fact_id -> (sensitivity, subject, predicate) of the facts serve records name, as their
        history has it (a `_domain` fact's too); an erased fact is absent.  No value: the web
        view's page of a partition's serves."""
        with snapshot(self._conn), served.keeping(self._served_kept):
            found = fact_classes(self._conn, app, fact_ids)
            served.check_classes(self._conn, fact_ids, found)
        return found

    def _fact_sensitivity(self, fact_id: str) -> str | None:
        """The sensitivity of an open fact (None when it is not open), which decides whether a
        viewer may see it: checked against the log first."""
        with snapshot(self._conn), served.keeping(self._served_kept):
            level = current.sensitivity(self._conn, fact_id)
            served.check_sensitivity(self._conn, fact_id, level)
        return level

    def _fact_observed_in(self, fact_id: str, app: str, user: str) -> bool:
        """Whether this fact was ever observed in this partition: a caller may forget only the
        facts of its own partition."""
        return observed_in(self._conn, normalise_id(fact_id, "fact id"), *normalise_partition(app, user))

    def _reinstatements(self, fact_ids: set[str] | list[str]) -> list[dict]:
        """The `FactReinstated` events of these facts, in seq order (seq, recorded_at, fact_id,
        cause): the marks a key's timeline draws where an erasure brought a value back."""
        if not fact_ids:
            return []
        with snapshot(self._conn), served.keeping(self._served_kept):
            seqs = seqs_touching(self._conn, sorted(fact_ids), EVENT.FactReinstated)
            events = logread.bodies_at(self._conn, seqs)
        out = []
        for seq in seqs:
            recorded_at, body = events[seq]
            data = body_of(body) or {}
            out.append({"seq": seq, "recorded_at": recorded_at, "fact_id": data.get("fact_id"),
                        "cause": data.get("cause")})
        return out

    # --- disputes ------------------------------------------------------------------------------

    def _open_disputes(self, app: str | None = None, user: str | None = None) -> list[dict]:
        """Open facts in dispute (reason "disputed"), listed beside the held candidates in the
        review queue; `resolve` settles them."""
        with snapshot(self._conn), served.keeping(self._served_kept):
            found = presence.open_disputes(self._conn, app, user)
            served.check(self._conn, [{k: v for k, v in f.items() if k != "reason"} for f in found],
                         table="facts_current")
        return found

    def _disputed_by_key(self) -> list[dict]:
        """Every open dispute, one row per key, with the disputing facts' ids (JSON text in
        `disputes`): the web view's review page."""
        with snapshot(self._conn), served.keeping(self._served_kept):
            found = current.disputed_by_key(self._conn)
            served.check(self._conn, found, table="facts_current")
        return found

    def _key_current(self, app: str, user: str, subject: str, predicate: str) -> list[dict]:
        """The open facts of one key: what a disputed fact stands against."""
        with snapshot(self._conn), served.keeping(self._served_kept):
            found = current.key_current(self._conn, app, user, subject, predicate)
            served.check(self._conn, found, table="facts_current")
        return found

    def _user_sessions(self, app: str, user: str) -> list[dict]:
        """Every session the user's surviving events name, ingested or written by `observe` (or
        the ADK service), in the order they first appear: the session, how it came in, its
        first and last seq and how many events name it, with the ingestion's row when there is
        one.  A reviewer erases a session from this list, so none that the log holds is left out."""
        ingested = {row["session"]: row for row in self.sessions(app, user)}
        found: dict[str, dict] = {}
        for event in self.stream_log(app=app, user=user):
            body = event["body"] or {}
            for session in {body.get("session"), (body.get("candidate") or {}).get("session")}:
                if not isinstance(session, str) or not session:
                    continue
                row = found.setdefault(session, {"session": session, "events": 0, "first_seq": event["seq"],
                                                 "source": "ingested" if session in ingested else "observed"})
                row["events"] += 1
                row["last_seq"] = event["seq"]
        for session, row in ingested.items():
            found.setdefault(session, {"session": session, "events": 0, "first_seq": row["first_seq"],
                                       "last_seq": row["last_seq"], "source": "ingested"})
        for session, row in found.items():
            row["ingestion"] = ingested.get(session)
        return list(found.values())

    # --- erasures ------------------------------------------------------------------------------

    def _receipt_tickets(self) -> dict[int, str]:
        """redaction seq -> the external reference (ticket) its receipt was filed under, for the
        receipts that have one: the receipts list shows it beside each."""
        return logread.receipt_tickets(self._conn)

    def _receipt_seqs(self, app: str, user: str | None = None, session: str | None = None) -> set[int]:
        """Seqs of the receipts that erased anything of this user (or this session), found by
        hashing the ids as the receipts do, so that the receipts still name no one."""
        with snapshot(self._conn), served.keeping(self._served_kept):
            return presence.receipt_seqs(self._conn, app, user, session)

    def _already_erased_at(self, app: str, user: str, *, session: str | None = None,
                          fact: str | None = None, scope: tuple[str, str] | None = None) -> int | None:
        """Seq of the receipt that already erased this user, session, fact or scope (a no-op
        receipt's kind and hash): a repeated request says which receipt did the work."""
        with snapshot(self._conn), served.keeping(self._served_kept):
            return presence.already_erased_at(self._conn, app, user, session=session, fact=fact, scope=scope)

    def erasure_report(self, seq: int) -> dict:
        """The printable record of the erasure at `seq`, with a fresh verify and the head now
        (`ledger.audit.erasure_report`); a `LedgerError` when `seq` is no receipt."""
        # the record's fresh check is of the chain (`verify --log-only`): a record is printed per
        # receipt, and checking every projection costs a rebuild of the whole log
        report = erasure_report(self._conn, seq, verify=lambda: self.verify(log_only=True), head=self.head,
                                clock=self.clock)
        # the location as given, its password hidden (what the CLI names a replica's primary by too)
        return {"ledger": engines.display_location(self._work.location), **report}

    def _is_forgotten_fact(self, app: str, user: str, fact_id: str) -> bool:
        """Whether this fact was forgotten by a request that named it."""
        app, user = normalise_partition(app, user)
        return erasures.is_forgotten(self._conn, app, "fact", fact_hash(app, user, normalise_id(fact_id, "fact id")))

    def _is_forgotten_user(self, app: str, user: str) -> bool:
        """Whether this whole user was forgotten (its fact ids are then no longer kept)."""
        app, user = normalise_partition(app, user)
        return erasures.is_forgotten(self._conn, app, "user", user_hash(app, user))

    # --- what a session's ingestions read ------------------------------------------------------

    def _session_ingestions(self, app: str, user: str, session: str) -> list[dict]:
        """The bodies of this session's surviving `SessionIngested` events, in seq order: which
        events each ingestion read (`event_ids`, or up to its watermark)."""
        return [body_of(raw) for raw in logread.ingested_bodies(self._conn, app, user, session)]

    def _session_erased_until(self, app: str, user: str, session: str) -> str | None:
        """When this session, or its whole user, was last forgotten (the receipt's recorded
        time), or None: events said up to then are not read again."""
        return erasures.last_erased(self._conn, app,
                                    [("user", user_hash(app, user)),
                                     ("session", session_hash(app, user, session))])

    def _erased_event_ids(self, app: str, user: str, session: str, event_ids: list[str]) -> set[str]:
        """Which of these events of a session an erasure scrubbed after an ingestion had read them
        (the receipt keeps a hash of each id: `Redacted.event_hashes`)."""
        by_hash = {event_hash(app, user, session, event_id): event_id for event_id in event_ids}
        return {by_hash[h] for h in erasures.forgotten_among(self._conn, app, "event", list(by_hash), CHUNK)}
