"""Files the CLI writes for people (reports): private (0600), and whole or not at all."""

from __future__ import annotations

import os
import tempfile

from factledger.ledger import LedgerError


def write_private(path: str, text: str) -> None:
    """Write `text` to a temporary file beside `path` (mkstemp: 0600), renamed over it when complete."""
    folder = os.path.dirname(os.path.abspath(path))
    temp = None
    try:
        fd, temp = tempfile.mkstemp(prefix=".factledger-", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, path)
        temp = None
    except OSError as exc:
        raise LedgerError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if temp is not None and os.path.exists(temp):
            os.remove(temp)
