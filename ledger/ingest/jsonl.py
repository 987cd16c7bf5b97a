"""Reading the ingestion inputs: UTF-8 files and JSON Lines, with one set of error messages.

Every error is a `LedgerError` naming the file (and the line), for the person who has it open.

Inputs are untrusted, so reading is bounded: only regular files are read (a FIFO would block
forever, `/dev/zero` never ends; the check is made on the opened descriptor, so a symlink swapped
in between cannot slip past it), a file is read up to `max_file_bytes` and a JSONL line up to
`max_line_bytes`, both configurable (FACTLEDGER_MAX_FILE_BYTES, FACTLEDGER_MAX_LINE_BYTES).
JSON Lines are split at "\\n" only: U+2028, U+2029 and U+0085 are legal inside a JSON string and
`str.splitlines()` would cut the line there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

import orjson

from factledger.ledger.errors import LedgerError
from factledger.ledger.vocabulary import files

DEFAULT_MAX_FILE_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024


def _limit(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        raise LedgerError(f"{name} must be a whole number of bytes, not {ascii(raw)[:40]}") from None
    if value <= 0:
        raise LedgerError(f"{name} must be more than zero")
    return value


def max_file_bytes() -> int:
    return _limit("FACTLEDGER_MAX_FILE_BYTES", DEFAULT_MAX_FILE_BYTES)


def max_line_bytes() -> int:
    return _limit("FACTLEDGER_MAX_LINE_BYTES", DEFAULT_MAX_LINE_BYTES)


def read_bounded(stream: BinaryIO, where: str, limit: int | None = None) -> bytes:
    """At most `limit` bytes of `stream` (default FACTLEDGER_MAX_FILE_BYTES); more is refused."""
    return files.read_bounded(stream, where, max_file_bytes() if limit is None else limit,
                              "FACTLEDGER_MAX_FILE_BYTES")


def decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise LedgerError(f"{where}: not UTF-8 text") from None


def read_text(path: str, missing: str | None = None, limit: int | None = None) -> str:
    """The file's text (UTF-8). `missing` words the error for a file that does not exist
    ("no such candidates file"); without it, that is a plain "cannot read"."""
    limit = max_file_bytes() if limit is None else limit
    return decode(files.read_regular(path, limit, missing, "FACTLEDGER_MAX_FILE_BYTES"), path)


kind = files.kind


def json_lines(text: str, source: str, max_line: int | None = None) -> Iterator[tuple[int, str, object]]:
    """(line number, "SOURCE line N", parsed value) for each non-blank line of `text`."""
    max_line = max_line_bytes() if max_line is None else max_line
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{source} line {number}"
        if len(line) > max_line or len(line.encode("utf-8", "surrogatepass")) > max_line:
            raise LedgerError(f"{where}: longer than {max_line} bytes (FACTLEDGER_MAX_LINE_BYTES)")
        try:
            yield number, where, orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise LedgerError(f"{where}: not valid JSON ({exc})") from None
