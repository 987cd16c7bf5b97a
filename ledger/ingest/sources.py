"""Where sessions come from: files, directories (walked in name order) and `-` for stdin.

Each file is read and parsed on its own, and a failure is kept as a `SourceError` next to the
good sessions instead of being raised, so one bad file in a batch never loses the others.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..errors import LedgerError
from .formats import parse_text
from .jsonl import read_text
from .session import Session

SUFFIXES = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl"}


@dataclass(frozen=True)
class SourceError:
    source: str
    error: str


def expand(paths: Iterable[str]) -> list[str]:
    """Files named, and the session files under directories named (sorted, recursive)."""
    out: list[str] = []
    for raw in paths:
        if raw == "-":
            out.append("-")
            continue
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and not p.is_dir())
            out.extend(str(p) for p in found)
        else:
            out.append(str(path))
    return out


def read_source(name: str, stdin: TextIO | None = None) -> list[Session]:
    """Parse one file (or stdin); raises `LedgerError` naming it."""
    if name == "-":
        stream = stdin or sys.stdin
        try:
            text = stream.read()
        except UnicodeDecodeError:
            raise LedgerError("<stdin>: not UTF-8 text") from None
        return parse_text(text, "<stdin>", default_id=None)
    path = Path(name)
    text = read_text(name, missing="no such file")
    return parse_text(text, name, default_id=path.stem, fmt=SUFFIXES.get(path.suffix))


def load(paths: Iterable[str], stdin: TextIO | None = None) -> tuple[list[Session], list[SourceError]]:
    """Every session of every source, oldest first, and the sources that failed."""
    sessions: list[Session] = []
    errors: list[SourceError] = []
    for name in expand(paths):
        try:
            sessions.extend(read_source(name, stdin))
        except LedgerError as exc:
            errors.append(SourceError("<stdin>" if name == "-" else name, str(exc)))
    # Chronological order, so a batch given in any order decides like live ingestion would.
    order = {id(s): i for i, s in enumerate(sessions)}
    sessions.sort(key=lambda s: (s.started_at or "~", order[id(s)]))
    return sessions, errors
