"""Files the CLI writes for people (reports): private (0600), and whole or not at all."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from factledger.ledger import LedgerError


@contextmanager
def private_file(path: str, prefix: str = ".factledger-") -> Iterator[TextIO]:
    """A handle on a temporary file beside `path` (mkstemp: 0600), renamed over it only when the
    block completes: a failed write never truncates an earlier file."""
    folder = os.path.dirname(os.path.abspath(path))
    temp = None
    try:
        fd, temp = tempfile.mkstemp(prefix=prefix, dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
        os.replace(temp, path)
        temp = None
    except OSError as exc:
        raise LedgerError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if temp is not None and os.path.exists(temp):
            os.remove(temp)


def refuse_evidence(state, *paths: str | None, write: bool = False) -> None:
    """Refuse, before anything is written, an output path that is the ledger's own file (or its
    -wal, -shm, -journal; on PostgreSQL a file of the server's, as far as the session may see),
    the primary's (`--db`) or the replica's (`--read-db`): a read command never destroys the
    evidence it reads (issue 47).  A file ledger is not opened to ask; a server's is, as the
    command will open it (`write`: for writing), so the open is the one the command needs."""
    from factledger.ledger.service import is_server_location, refuse_output

    for path in filter(None, paths):
        for location, primary in ((state.db, True), (state.read_db, False)):
            if not location:
                continue
            if is_server_location(location):
                opened = state.ledger() if write and primary else state.ledger(read_only=True, primary=primary)
                opened.refuse_output(path)
            else:
                refuse_output(path, location)


def write_private(path: str, text: str) -> None:
    """Write `text` to `path`, private and whole or not at all."""
    with private_file(path) as handle:
        handle.write(text)
