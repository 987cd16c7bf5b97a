"""Does the ledger know this app, user, session or event type, and was it erased?

Read commands answer "nothing" both when there is nothing and when the question was mistyped;
these lookups let the shell tell the two apart (a notice on stderr), and let a reviewer find a
data subject's erasure receipts by hashing the ids the way the receipts do (`ledger.scope`),
since a receipt never names anyone.
"""

from __future__ import annotations

import difflib
import sqlite3

from factledger.ledger.domain.events import EVENT_TYPES
from factledger.ledger.forget.scope import ERASURES_USER, fact_hash, pseudonym, session_hash, user_hash
from factledger.ledger.store import reads as logread
from factledger.ledger.store.reads import apps, has_app, has_partition
from factledger.ledger.vocabulary.words import DOMAIN_USER, ERASED_PREFIX
from factledger.projections import current, erasures, history, sessions


def users(conn: sqlite3.Connection, app: str) -> list[str]:
    return [u for u in logread.users(conn, app) if u != ERASURES_USER and not u.startswith(ERASED_PREFIX)]


def user_erased_at(conn: sqlite3.Connection, app: str, user: str) -> int | None:
    """Seq of the receipt that erased the whole user, if one did."""
    return erasures.erased_at(conn, app, "user", user_hash(app, user))


def session_erased_at(conn: sqlite3.Connection, app: str, user: str, session: str) -> int | None:
    """Seq of the receipt that forgot the session, or (a fact-wide forget) took all it still said."""
    return erasures.session_erased_at(conn, app, session_hash(app, user, session))


def partition_notice(conn: sqlite3.Connection, app: str, user: str, *, within_apps=None,
                     within_users=None) -> str | None:
    """Why a partition read found nothing, when the partition is not there; None when it is.

    `within_apps` / `within_users`: the names this caller may read (None: every one, as the CLI
    reads the whole file).  A notice never names a partition outside them, not even as a "did you
    mean": a scoped caller (an MCP token) must not learn another tenant's app or another user's id
    (often an e-mail); the app-wide `_domain` user is named only when listed."""
    if has_partition(conn, app, user):
        return None
    erased = user_erased_at(conn, app, user)
    if erased is not None:
        return f"user {user!r} of app {app!r} was erased at seq {erased} (`factledger erasures --app " \
               f"{app} --user ...` shows the receipt)"
    scoped = within_apps is not None or within_users is not None
    if not has_app(conn, app):
        known = [a for a in apps(conn) if within_apps is None or a in within_apps]
        return f"no app {app!r} in this ledger" + _did_you_mean(app, known)
    known = [u for u in users(conn, app) if (within_users is None or u in within_users)
             and not (scoped and u == DOMAIN_USER and u not in (within_users or ()))]
    if within_apps is not None and app not in within_apps:
        known = []
    return f"no user {user!r} in app {app!r}" + _did_you_mean(user, known)


def session_notice(conn: sqlite3.Connection, app: str | None, user: str | None,
                   session: str) -> str | None:
    """Why a session filter found nothing; None if the session is known."""
    if app is not None and user is not None:
        erased = session_erased_at(conn, app, user, session)
        if erased is not None:
            return f"session {session!r} was erased at seq {erased}"
    if sessions.knows_session(conn, session, app, user) or history.knows_session(conn, session, app, user):
        return None
    return f"no session {session!r}" + (f" for app {app!r}, user {user!r}" if user else "")


def type_notice(type_: str) -> str | None:
    if type_ in EVENT_TYPES:
        return None
    return f"no event type {type_!r}" + _did_you_mean(type_, sorted(EVENT_TYPES), always=True)


def _did_you_mean(word: str, known: list[str], always: bool = False) -> str:
    close = difflib.get_close_matches(word, known, n=3, cutoff=0.6)
    if close:
        return f" (did you mean {', '.join(map(repr, close))}?)"
    if always and known:
        return f" (known: {', '.join(known)})"
    return ""


def receipt_seqs(conn: sqlite3.Connection, app: str, user: str | None = None,
                 session: str | None = None) -> set[int]:
    """Seqs of the `Redacted` events that erased anything of this user (or this session).

    Found without keeping any id: a receipt's scope hash, its session hashes, or the envelopes it
    scrubbed (which keep their app and user, or the user's pseudonym after a whole-user erasure).
    """
    if session is not None and user is not None:
        found = session_erased_at(conn, app, user, session)
        return set() if found is None else {found}
    if user is None:
        return erasures.receipt_seqs(conn, app)
    seqs = logread.redacting_seqs(conn, app, (user, pseudonym(app, user)))
    erased = user_erased_at(conn, app, user)
    if erased is not None:
        seqs.add(erased)
    return seqs


def already_erased_at(conn: sqlite3.Connection, app: str, user: str, *, session: str | None = None,
                      fact: str | None = None, scope: tuple[str, str] | None = None) -> int | None:
    """Seq of the receipt that already erased this user, session or fact, or the same scope
    (`scope`: a no-op receipt's kind and hash, e.g. a predicate or sensitivity class forgotten
    before and not said since): a repeat is a no-op, and says which receipt did the work."""
    whole = user_erased_at(conn, app, user)
    if whole is not None:
        return whole
    if session is not None:
        return session_erased_at(conn, app, user, session)
    if fact is not None:
        return erasures.erased_at(conn, app, "fact", fact_hash(app, user, fact))
    if scope is not None:
        return erasures.erased_at(conn, app, *scope)
    return None


def fact_erased_at(conn: sqlite3.Connection, fact_id: str) -> int | None:
    """Seq of the receipt that forgot this fact, found by hashing the id with each partition the
    log still names (receipts name no one, and a scrubbed event keeps only its envelope)."""
    for app, user in logread.partitions(conn, but_user=ERASURES_USER):
        seq = erasures.erased_at(conn, app, "fact", fact_hash(app, user, fact_id))
        if seq is not None:
            return seq
    return None


def open_disputes(conn: sqlite3.Connection, app: str | None = None, user: str | None = None) -> list[dict]:
    """Open facts in dispute, for the review list beside the held candidates (`resolve` settles them)."""
    out = current.disputed(conn, app, user)
    for item in out:
        item["reason"] = "disputed"
    return out
