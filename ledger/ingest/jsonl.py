"""Reading the ingestion inputs: UTF-8 files and JSON Lines, with one set of error messages.

Every error is a `LedgerError` naming the file (and the line), for the person who has it open.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson

from ..errors import LedgerError


def read_text(path: str, missing: str | None = None) -> str:
    """The file's text (UTF-8). `missing` words the error for a file that does not exist
    ("no such candidates file"); without it, that is a plain "cannot read"."""
    try:
        return Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError as exc:
        raise LedgerError(f"{path}: {missing or f'cannot read ({exc.strerror})'}") from None
    except IsADirectoryError:
        raise LedgerError(f"{path}: is a directory") from None
    except OSError as exc:
        raise LedgerError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise LedgerError(f"{path}: not UTF-8 text") from None


def json_lines(text: str, source: str) -> Iterator[tuple[int, str, object]]:
    """(line number, "SOURCE line N", parsed value) for each non-blank line of `text`."""
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{source} line {number}"
        try:
            yield number, where, orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise LedgerError(f"{where}: not valid JSON ({exc})") from None
