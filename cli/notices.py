"""Nothing filtered in silence: the notices a read prints on stderr when its answer is thin.

A read exits 0 with what it found (possibly nothing) and, on stderr, says why when the reason is
not "there is nothing": facts withheld by clearance, an app, user, predicate, session or event type
the ledger does not know (a typo answers "nothing" otherwise).  Notices start with `factledger:`
so scripts can tell them from `Error:` lines.

A name from the vocabulary (a predicate, an event type) that matches nothing and that neither the
registry nor the event types know is a typo, not an empty answer: `Error: ...` with the
did-you-mean hint, exit 1 (`log --type Bogus`, `facts --predicate favourite_colour`).  An app, user or
session is data, not vocabulary (a user may simply not have spoken yet): those stay notices, exit 0.
"""

from __future__ import annotations

from collections import Counter

import click

from factledger.ledger.audit.presence import type_notice
from factledger.ledger.domain.recall_options import PUBLIC_CLEARANCE, parse_clearance
from factledger.ledger.errors import LedgerError
from factledger.ledger.registry.predicates import SENSITIVITIES
from factledger.ledger.vocabulary.terminal import escape


def note(text: str) -> None:
    click.echo(f"factledger: {escape(text)}", err=True)


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def warn_exposure(host: str, what: str, *, public_clearance: str | None = None) -> None:
    """A warning line for a risky way to start a server: listening beyond this machine with no TLS
    of its own (a reverse proxy must add it), and anonymous readers cleared above `normal`.  The
    server still starts: a deployment may mean it; the operator must have read it."""
    if host not in LOOPBACK and not host.startswith("127."):
        click.echo(f"factledger: warning: {what} listens on {host}, beyond this machine, without TLS: bearer tokens, "
                   "passwords and fact values cross the network in clear unless a TLS proxy is in front", err=True)
    if public_clearance is not None and public_clearance != PUBLIC_CLEARANCE:
        click.echo(f"factledger: warning: anyone who can reach {what} reads {public_clearance} values without "
                   "signing in (--public --public-clearance " + public_clearance + ")", err=True)


def check_partition(ledger, app: str, user: str) -> bool:
    """Notice when the partition is unknown (or erased); True when it exists."""
    text = ledger.notices.partition_notice(app, user)
    if text:
        note(text)
    return text is None


def check_predicate(ledger, predicate: str | None, app: str | None = None, user: str | None = None) -> None:
    """Called when a read found nothing: a predicate the registry does not know is an error,
    unless the partition recorded an open key of that name (its facts may all be closed)."""
    if predicate and ledger.registry.resolve(predicate) is None:
        if app and user and ledger.notices.key_kind(app, user, predicate) is not None:
            return
        raise ledger.registry.unknown(predicate)


def check_session(ledger, app, user, session: str | None) -> None:
    if session:
        text = ledger.notices.session_notice(app, user, session)
        if text:
            note(text)


def check_type(type_: str | None) -> None:
    """Called when a read found nothing: an event type that does not exist is an error."""
    if type_:
        text = type_notice(type_)
        if text:
            raise LedgerError(text)


def clearance_option(default: str):
    def decorate(func):
        func = click.option("--include-sensitive", "include_sensitive", is_flag=True, hidden=True,
                            help="Same as --clearance all")(func)
        return click.option("--clearance", default=None, metavar="LEVEL",
                            help="normal < personal < health: the level and every level below "
                                 f"it, as in recall (all = health)  [default: {default}]")(func)
    return decorate


def cleared(clearance: str | None, include_sensitive: bool, default: str) -> tuple[str, ...]:
    return parse_clearance("all" if include_sensitive else (clearance if clearance is not None else default))


def withhold(rows: list[dict], allowed: tuple[str, ...]) -> list[dict]:
    """Keep the rows the clearance allows; say on stderr how many were withheld and how to see them."""
    shown = [r for r in rows if r.get("sensitivity") in allowed or r.get("sensitivity") is None]
    hidden = Counter(r["sensitivity"] for r in rows if r not in shown)
    if hidden:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(hidden.items()))
        note(f"{sum(hidden.values())} facts withheld by clearance ({kinds}; cleared for "
             f"{', '.join(allowed)}); see them with --clearance "
             f"{max(hidden, key=SENSITIVITIES.index)}")
    return shown
