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


def write_private(path: str, text: str) -> None:
    """Write `text` to `path`, private and whole or not at all."""
    with private_file(path) as handle:
        handle.write(text)
