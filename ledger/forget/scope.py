"""What a forget request covers, and the hashes that name it without naming anyone.

A `Redacted` event must prove *that* a scope was erased without saying *who* or *what*: it carries
`scope_hash`, a sha256 prefix over a domain tag and the scope's parts, never the ids in clear.
The data subject (or anyone who knows the ids) can recompute the hash and find the receipt; the
log alone does not reveal the ids.  The same hashes feed the forgotten-sessions list, so a
forgotten session can be refused on re-ingestion without keeping its id.

A plain hash of a guessable id (an e-mail address used as a user id) can be confirmed by guessing;
that is the price of a receipt the data subject can check.  Prefer opaque user ids.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from factledger.ledger.errors import LedgerError
from factledger.ledger.registry.kinds import open_key_name
from factledger.ledger.registry.predicates import SENSITIVITIES
from factledger.ledger.vocabulary.words import (  # noqa: F401  (callers name them from here too)
    ALL_APPS,
    CHECKPOINTS_USER,
    ERASED_PREFIX,
    ERASURES_USER,
    RESERVED_USERS,
)

SCOPE_TAG = b"factledger/scope/v1"
HASH_CHARS = 32                      # 128 bits: collision-free for any realistic ledger
PSEUDONYM_CHARS = 16
KINDS = ("user", "session", "fact", "predicate", "sensitivity", "retention")


def scope_hash(kind: str, *parts: str) -> str:
    digest = hashlib.sha256(SCOPE_TAG)
    for part in (kind, *parts):
        digest.update(b"\x00" + part.encode("utf-8"))
    return digest.hexdigest()[:HASH_CHARS]


def session_hash(app: str, user: str, session: str) -> str:
    return scope_hash("session", app, user, session)


def event_hash(app: str, user: str, session: str, event_id: str) -> str:
    """A session event an ingestion read by id, once erased: never read again (adk/delta.py)."""
    return scope_hash("event", app, user, session, event_id)


def user_hash(app: str, user: str) -> str:
    return scope_hash("user", app, user)


def fact_hash(app: str, user: str, fact_id: str) -> str:
    return scope_hash("fact", app, user, fact_id)


def retention_hash(days: dict[str, int], app: str | None, user: str | None) -> str:
    """A retention run named by its rule (predicate -> days kept) and the partitions it may touch,
    not by the cutoff instants the rule gives at this second: the dry run, the plan shown at the
    prompt and the receipt of one run carry the same hash, so the plan approved matches the
    receipt (a later run of the same policy shares it too; its receipt's seq tells them apart)."""
    return scope_hash("retention", app or "", user or "", *(f"{p}>{d}d" for p, d in sorted(days.items())))


def pseudonym(app: str, user: str) -> str:
    """What the `user` column becomes when a whole user is erased."""
    return ERASED_PREFIX + user_hash(app, user)[:PSEUDONYM_CHARS]


@dataclass(frozen=True)
class Scope:
    """One forget request's reach inside one partition (retention builds one per partition)."""

    kind: str
    app: str
    user: str
    session: str | None = None
    fact_id: str | None = None
    predicate: str | None = None
    sensitivity: str | None = None
    cutoffs: tuple[tuple[str, str], ...] = ()   # retention: (predicate, forget if confirmed before)
    run_hash: str | None = None                 # retention: the run's `retention_hash`
    serves_cutoff: str | None = None            # retention: serve records served before this expire

    @property
    def hash(self) -> str:
        if self.kind == "user":
            return user_hash(self.app, self.user)
        if self.kind == "session":
            return session_hash(self.app, self.user, self.session or "")
        if self.kind == "fact":
            return fact_hash(self.app, self.user, self.fact_id or "")
        if self.kind == "predicate":
            return scope_hash("predicate", self.app, self.user, self.predicate or "")
        if self.kind == "sensitivity":
            return scope_hash("sensitivity", self.app, self.user, self.sensitivity or "")
        return self.run_hash or scope_hash("retention", *(f"{p}<{c}" for p, c in self.cutoffs))

    @property
    def fact_wide(self) -> bool:
        """Whether every statement about a forgotten fact goes with it (all scopes but a session)."""
        return self.kind != "session"


def build_scope(app: str | None, user: str | None, *, session: str | None = None,
                fact: str | None = None, predicate: str | None = None,
                sensitivity: str | None = None, registry=None, open_keys=None) -> Scope:
    """Check a forget request's options and name its scope; bad input is a `LedgerError`.
    `open_keys(name)`: whether the partition holds an open key of that name (a predicate the
    registry does not know is then that key, not an error)."""
    if not app or not app.strip() or not user or not user.strip():
        raise LedgerError("forget needs a partition: --app and --user")
    app, user = app.strip(), user.strip()
    if user in RESERVED_USERS or user.startswith(ERASED_PREFIX):
        raise LedgerError(f"user {user!r} is reserved by the ledger and cannot be forgotten")
    given = [name for name, value in (("--session", session), ("--fact", fact),
                                      ("--predicate", predicate), ("--sensitivity", sensitivity))
             if value is not None]
    if len(given) > 1:
        raise LedgerError(f"give at most one of --session, --fact, --predicate, --sensitivity "
                          f"(got {' and '.join(given)})")
    for name, value in (("session", session), ("fact", fact), ("predicate", predicate),
                        ("sensitivity", sensitivity)):
        if value is not None and not value.strip():
            raise LedgerError(f"--{name} is empty")
    if session is not None:
        return Scope("session", app, user, session=session.strip())
    if fact is not None:
        return Scope("fact", app, user, fact_id=fact.strip())
    if predicate is not None:
        spec = registry.resolve(predicate) if registry is not None else None
        if spec is None and open_keys is not None and open_keys(predicate):
            return Scope("predicate", app, user, predicate=open_key_name(predicate))   # a key of its own
        if spec is None:
            if registry is None:
                raise LedgerError(f"unknown predicate {predicate!r} (not in the registry)")
            raise registry.unknown(predicate)
        return Scope("predicate", app, user, predicate=spec.name)
    if sensitivity is not None:
        if sensitivity.strip() not in SENSITIVITIES:
            raise LedgerError(f"unknown sensitivity {sensitivity!r} "
                              f"(one of {', '.join(SENSITIVITIES)})")
        return Scope("sensitivity", app, user, sensitivity=sensitivity.strip())
    return Scope("user", app, user)
