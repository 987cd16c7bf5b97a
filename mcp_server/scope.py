"""Whom one MCP caller may name: an app, its users, a clearance and a role.

A stdio server's scope is its flags; an HTTP caller's is its token's.  Every tool takes optional
`app` and `user` arguments that default to the scope's own and must lie inside it: a name outside
is refused, and the refusal says which scope it lies outside of (never whether the other
partition holds anything).  The ledger's reserved partitions (ledger/vocabulary/words.py: the
erasure receipts, the checkpoints, a forgotten user's pseudonym, the all-apps app) are never a
caller's, and the app-wide `_domain` user only when the scope names it: `*` means the app's
people, not the facts every one of them is served.
"""

from __future__ import annotations

from dataclasses import dataclass

from factledger.ledger.errors import LedgerError
from factledger.ledger.service import DEFAULT_CLEARANCE, parse_clearance
from factledger.ledger.vocabulary.ids import normalise_id
from factledger.ledger.vocabulary.words import ALL_APPS, DOMAIN_USER, ERASED_PREFIX, RESERVED_USERS

ROLES = ("agent", "reviewer")
ANY_USER = "*"


class OutOfScope(LedgerError):
    """A call named an app or user its token (or the stdio flags) does not cover; nothing was read or written."""


def reserved(user: str) -> bool:
    return user in RESERVED_USERS or user.startswith(ERASED_PREFIX)


@dataclass(frozen=True)
class Scope:
    app: str
    users: tuple[str, ...]          # (ANY_USER,) for every user of the app
    clearance: tuple[str, ...] = parse_clearance(DEFAULT_CLEARANCE)     # the sensitivities this caller is served
    role: str = "agent"
    name: str = "stdio"             # what receipts record as the requester (the token's label)

    @classmethod
    def build(cls, app: str, users, clearance: str | None = None, role: str = "agent",
              name: str = "stdio") -> Scope:
        app = normalise_id(app, "app")
        if app == ALL_APPS:
            raise LedgerError(f"app {app!r} is reserved by the ledger (retention runs across apps)")
        users = tuple(users)
        if users != (ANY_USER,):
            users = tuple(normalise_id(u, "user") for u in users)
            if not users:
                raise LedgerError("a scope needs a user (or '*' for every user of the app)")
            for user in users:
                if reserved(user):
                    raise LedgerError(f"user {user!r} is reserved by the ledger (erasure receipts, "
                                      "checkpoints, forgotten users): no caller may name it")
        if role not in ROLES:
            raise LedgerError(f"unknown role {role!r} (known: {', '.join(ROLES)})")
        return cls(app, users, parse_clearance(clearance if clearance is not None else DEFAULT_CLEARANCE), role, name)

    @property
    def any_user(self) -> bool:
        return self.users == (ANY_USER,)

    def describe(self) -> str:
        who = "every user" if self.any_user else "user " + ", ".join(repr(u) for u in self.users)
        return f"app {self.app!r}, {who}"

    def partition(self, app: str | None, user: str | None) -> tuple[str, str]:
        """The (app, user) a call acts on: its arguments, or the scope's own; `OutOfScope` outside."""
        app = self.app if app is None or not str(app).strip() else normalise_id(app, "app")
        if user is None or not str(user).strip():
            if self.any_user or len(self.users) != 1:
                raise OutOfScope(f"name a user: this caller's scope is {self.describe()}")
            user = self.users[0]
        else:
            user = normalise_id(user, "user")
        inside = app == self.app and (user in self.users or
                                      (self.any_user and not reserved(user) and user != DOMAIN_USER))
        if not inside:
            raise OutOfScope(f"app {app!r}, user {user!r} is outside this caller's scope "
                             f"({self.describe()}): refused, nothing read or written")
        return app, user
