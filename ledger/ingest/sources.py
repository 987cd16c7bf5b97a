"""Where sessions come from: files, directories (walked in name order) and `-` for stdin.

Each file is read and parsed on its own, and a failure is kept as a `SourceError` next to the
good sessions instead of being raised, so one bad file in a batch never loses the others.

A directory walk never follows a symlink out of the tree it was asked to read, and never reads
anything but regular files; every file it passes over (a compressed `s1.jsonl.gz`, a FIFO, a
link to `/etc/passwd`) is reported as `Skipped`, and a path that yields no session at all is a
`SourceError`, so "nothing was ingested" is never silent.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from factledger.ledger.errors import LedgerError
from factledger.ledger.ingest.formats import parse_text
from factledger.ledger.ingest.jsonl import decode, kind, read_bounded, read_text
from factledger.ledger.ingest.session import Session

SUFFIXES = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl"}
COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".zip", ".lz4")


@dataclass(frozen=True)
class SourceError:
    source: str
    error: str


@dataclass(frozen=True)
class Skipped:
    """A file a directory walk passed over, and why."""

    path: str
    reason: str


def fmt_of(path: Path) -> str | None:
    return SUFFIXES.get(path.suffix.lower())


def _why_not(path: Path, root: Path) -> str | None:
    """Why a file found under `root` is not read, or None when it is a session file."""
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        return f"cannot read ({exc.strerror})"
    if stat.S_ISLNK(mode):
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return "a broken or looping symlink"
        if not target.is_relative_to(root):
            return "a symlink out of the directory"
        mode = os.stat(target).st_mode
    if not stat.S_ISREG(mode):
        return f"{kind(mode)}, not a regular file"
    if fmt_of(path) is None:
        if path.suffix.lower() in COMPRESSED:
            return "compressed; decompress it first"
        return "not a session file (.json, .jsonl or .ndjson)"
    return None


def walk(directory: Path) -> tuple[list[str], list[Skipped]]:
    """The session files under `directory` (sorted, recursive, links not followed out)."""
    root = directory.resolve()
    found, skipped = [], []
    for folder, dirs, files in os.walk(directory, followlinks=False):
        dirs.sort()
        for name in dirs:
            if os.path.islink(os.path.join(folder, name)):
                skipped.append(Skipped(os.path.join(folder, name), "a symlinked directory, not followed"))
        for name in files:
            path = Path(folder) / name
            reason = _why_not(path, root)
            if reason is None:
                found.append(str(path))
            else:
                skipped.append(Skipped(str(path), reason))
    return sorted(found), sorted(skipped, key=lambda s: s.path)


def expand(paths: Iterable[str]) -> list[str]:
    """Files named, and the session files under directories named (sorted, recursive)."""
    return [name for group, _skipped in _expand(paths) for name in group]


def _expand(paths: Iterable[str]) -> list[tuple[list[str], list[Skipped]]]:
    out = []
    for raw in paths:
        if raw == "-":
            out.append((["-"], []))
        elif Path(raw).is_dir():
            out.append(walk(Path(raw)))
        else:
            out.append(([str(Path(raw))], []))
    return out


def read_source(name: str, stdin: TextIO | None = None) -> list[Session]:
    """Parse one file (or stdin); raises `LedgerError` naming it."""
    if name == "-":
        stream = stdin or sys.stdin
        binary = getattr(stream, "buffer", None)
        if binary is not None:
            text = decode(read_bounded(binary, "<stdin>"), "<stdin>")
        else:
            try:
                text = stream.read()
            except UnicodeDecodeError:
                raise LedgerError("<stdin>: not UTF-8 text") from None
        return parse_text(text, "<stdin>", default_id=None)
    path = Path(name)
    text = read_text(name, missing="no such file")
    return parse_text(text, name, default_id=path.stem, fmt=fmt_of(path))


def load(paths: Iterable[str], stdin: TextIO | None = None,
         skipped: list[Skipped] | None = None) -> tuple[list[Session], list[SourceError]]:
    """Every session of every source, oldest first, and the sources that failed.

    Files a directory walk passed over are appended to `skipped`; a path named that yields no
    session (an empty directory, one holding only `.gz` files) is an error of its own.
    """
    sessions: list[Session] = []
    errors: list[SourceError] = []
    paths = list(paths)
    for raw, (names, passed) in zip(paths, _expand(paths)):
        if skipped is not None:
            skipped.extend(passed)
        before = len(sessions)
        for name in names:
            try:
                sessions.extend(read_source(name, stdin))
            except LedgerError as exc:
                errors.append(SourceError("<stdin>" if name == "-" else name, str(exc)))
        if not names:
            detail = f" (skipped {len(passed)}: " + "; ".join(
                f"{s.path}: {s.reason}" for s in passed[:5]) + (" ..." if len(passed) > 5 else "") + ")"
            errors.append(SourceError(raw, f"{raw}: no session files found" + (detail if passed else "")))
        elif len(sessions) == before and not any(e.source in names for e in errors):
            errors.append(SourceError(raw, f"{raw}: holds no session"))
    # Chronological order, so a batch given in any order decides like live ingestion would.
    order = {id(s): i for i, s in enumerate(sessions)}
    sessions.sort(key=lambda s: (s.started_at or "~", order[id(s)]))
    return sessions, errors
