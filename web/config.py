"""The web view's settings, held on the Datasette instance that `factledger serve` builds.

They are kept off Datasette's metadata on purpose: metadata is published at `/-/metadata.json`,
and this holds password hashes.  A Datasette started some other way (plain `datasette`, with
this plugin merely installed) has no settings, and the plugin then stays out of its way.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from factledger.ledger import Ledger, LedgerError
from factledger.ledger.domain.recall_options import PUBLIC_CLEARANCE
from factledger.ledger.registry.predicates import Registry
from factledger.ledger.service import is_server_location
from factledger.ledger.vocabulary.clock import Clock, system_clock
from factledger.web.actors import Actor, load_actors
from factledger.web.jobs import Jobs
from factledger.web.sessions import Sessions

log = logging.getLogger(__name__)

ATTRIBUTE = "_factledger_web"


@dataclass
class WebConfig:
    ledger_path: Path | str                   # the ledger file, or a database server's URL
    registry: Registry
    actors: dict[str, Actor] = field(default_factory=dict)
    public: bool = False                      # anonymous visitors may look (a demo), never act
    clock: Clock = system_clock
    busy_timeout: float = 5.0
    actors_path: Path | None = None           # re-read when it changes: a removed actor is nobody
    sessions: Sessions = field(default_factory=Sessions)    # the live sign-ins (web/sessions.py)
    # what an anonymous visitor of --public may read: normal, unless the operator names another
    # class (`serve --public --public-clearance personal` shows the demo's moving city)
    public_clearance: str = PUBLIC_CLEARANCE
    _actors_stamp: tuple | None = None        # the file as last read (none yet: read it first)
    # where the pages read, when not the ledger itself: a replica (`--read-db`, a hot standby);
    # a reviewer's action always writes to `ledger_path`
    read_location: str | None = None
    jobs: Jobs = field(default_factory=Jobs)  # the Integrity checks running or just done (web/jobs.py)

    @staticmethod
    def _stamp_of(path: Path) -> tuple | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    @property
    def anonymous(self) -> Actor:
        """The visitor of a --public view: looks at what `public_clearance` covers, never acts."""
        return Actor("anonymous", self.public_clearance, "viewer", signed_in=False)

    def known_actors(self) -> dict[str, Actor]:
        """The actors as the file says now.  A file that cannot be read or has a mistake in it
        lets nobody in until it is fixed; an actor it no longer names loses every session."""
        if self.actors_path is not None:
            stamp = self._stamp_of(self.actors_path)
            if stamp != self._actors_stamp:
                try:
                    actors = load_actors(str(self.actors_path))
                except LedgerError as exc:
                    log.error("%s: nobody may sign in until it is fixed", exc)
                    actors = {}
                self.sessions.drop_actors(set(self.actors) - set(actors))
                self.actors, self._actors_stamp = actors, stamp
        return self.actors

    def signed_in(self, actor) -> Actor | None:
        """The actor a request's `ds_actor` names, if its session is live (sign-out ends it)."""
        if not isinstance(actor, dict) or not isinstance(actor.get("id"), str):
            return None
        known = self.known_actors().get(actor["id"])
        if known is None or not self.sessions.live(actor.get("sid"), known):
            return None
        return known

    @property
    def database(self) -> str | None:
        """The name Datasette gives the ledger file (its stem); None for a ledger on a database
        server, which Datasette (SQLite's) cannot open: the plugin's pages read it through the
        `Ledger`, and Datasette's own table and SQL pages are not served."""
        if is_server_location(self.ledger_path):
            return None
        return Path(self.ledger_path).stem

    @contextmanager
    def ledger(self, write: bool = False, leave_schema: bool = False):
        """A ledger opened for one request and closed after it: nothing read from the file
        outlives the request, so a page rendered after an erasure cannot show what it scrubbed.
        Read-only unless `write` (a reviewer's action): a page view cannot change the file; an
        erasure's plan (`leave_schema`) writes inside a transaction it rolls back, and repairs
        nothing.  A page reads the replica when there is one (`read_location`); an action writes
        the ledger."""
        location = self.ledger_path if write or not self.read_location else self.read_location
        ledger = Ledger(location, registry=self.registry, clock=self.clock,
                        busy_timeout=self.busy_timeout, create=False, read_only=not write,
                        leave_schema=leave_schema)
        try:
            yield ledger
        finally:
            ledger.close()


def attach(datasette, config: WebConfig) -> None:
    setattr(datasette, ATTRIBUTE, config)


def config_of(datasette) -> WebConfig | None:
    return getattr(datasette, ATTRIBUTE, None)
