"""Live sign-in sessions, kept by the server: what makes signing out end a session.

Datasette's signed `ds_actor` cookie is valid until it expires, whatever the server does, so it
also carries a session id and the server keeps the allow-list of live sessions: signing out, an
actor removed from the file, a changed password or a session past its hours ends it.  The list
holds each id's sha256 (never the id), the actor, the end and a digest of the password hash; it
is kept in memory and in `<actors file>.sessions` (0600, replaced whole under a lock), so sign-ins
survive a restart and every process sees one list.  An unreadable list counts as empty.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import secrets
import threading
import time
from pathlib import Path

from factledger.web.actors import Actor

log = logging.getLogger(__name__)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _key(actor: Actor) -> str:
    """What the session remembers of the actor's credential: a new password ends it."""
    return _digest(actor.password)[:32]


class Sessions:
    def __init__(self, path: Path | None = None, clock=time.time):
        self.path = Path(path) if path is not None else None
        self.clock = clock
        self._live: dict[str, dict] = {}
        self._stamp: tuple | None = None
        self._mutex = threading.Lock()

    # --- the three questions -------------------------------------------------------------

    def open(self, actor: Actor, seconds: int, token: str | None = None) -> str:
        """A new live session for `actor`; the id goes into the cookie (`token`: a given id)."""
        token = token or secrets.token_urlsafe(16)
        entry = {"actor": actor.name, "until": int(self.clock()) + seconds, "key": _key(actor)}
        with self._changing() as live:
            live[_digest(token)] = entry
        return token

    def close(self, token) -> None:
        """Sign-out: the session is no longer live, whoever holds a copy of its cookie."""
        if isinstance(token, str) and token:
            with self._changing() as live:
                live.pop(_digest(token), None)

    def live(self, token, actor: Actor) -> bool:
        if not isinstance(token, str) or not token:
            return False
        with self._mutex:
            self._refresh()
            entry = self._live.get(_digest(token))
        return (entry is not None and entry.get("actor") == actor.name
                and entry.get("key") == _key(actor) and entry.get("until", 0) > self.clock())

    def drop_actors(self, names) -> None:
        """Every session of these actors ends (they were removed from the actors file)."""
        names = set(names)
        if names:
            with self._changing() as live:
                for digest in [d for d, e in live.items() if e.get("actor") in names]:
                    del live[digest]

    # --- keeping the list ----------------------------------------------------------------

    @contextlib.contextmanager
    def _changing(self):
        """The list to change in place: under the file's lock, read fresh and written back whole."""
        with self._mutex, self._file_lock():
            self._stamp = None
            self._refresh()
            now = self.clock()
            live = {d: e for d, e in self._live.items() if e.get("until", 0) > now}
            yield live
            self._live = live
            self._save()

    @contextlib.contextmanager
    def _file_lock(self):
        if self.path is None:
            yield
            return
        fd = os.open(str(self.path) + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _refresh(self) -> None:
        if self.path is None:
            return
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._live, self._stamp = {}, None
            return
        except OSError as exc:
            log.error("cannot read the sessions file %s (%s): nobody is signed in", self.path, exc.strerror)
            self._live, self._stamp = {}, None
            return
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if stamp == self._stamp:
            return
        try:
            data = json.loads(self.path.read_bytes())
            live = data["sessions"]
            if not isinstance(live, dict) or not all(isinstance(e, dict) for e in live.values()):
                raise ValueError("not a table of sessions")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.error("cannot read the sessions file %s (%s): nobody is signed in", self.path, exc)
            live = {}
        self._live, self._stamp = live, stamp

    def _save(self) -> None:
        if self.path is None:
            return
        temp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"sessions": self._live}, handle, sort_keys=True)
        os.replace(temp, self.path)
        self._stamp = None
