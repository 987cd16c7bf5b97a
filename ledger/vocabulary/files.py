"""Opening an input file that may be hostile: regular files only, read with a bound.

A FIFO blocks a reader forever and `/dev/zero` never ends, so every file the ledger reads on a
caller's behalf (sessions, candidates, probes, a registry, a log export) is opened without
blocking and checked on the open descriptor (a symlink swapped in after a check cannot slip
past it); anything but a regular file is refused.  Reads are bounded by the caller's limit, so
a file too large is an `Error: ...`, never a `MemoryError`.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from factledger.ledger.errors import LedgerError

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


def kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symlink")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str | os.PathLike, missing: str | None = None) -> BinaryIO:
    """`path` opened for binary reading; `LedgerError` naming it when it is not a regular file.
    `missing` words the error for a file that does not exist."""
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError as exc:
        raise LedgerError(f"{path}: {missing or f'cannot read ({exc.strerror})'}") from None
    except IsADirectoryError:
        raise LedgerError(f"{path}: is a directory") from None
    except OSError as exc:
        raise LedgerError(f"{path}: cannot read ({exc.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise LedgerError(f"{path}: is a directory")
        raise LedgerError(f"{path}: not a regular file ({kind(mode)}); refused")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_bounded(stream: BinaryIO, where: str, limit: int, setting: str = "") -> bytes:
    """At most `limit` bytes of `stream`; more is refused instead of exhausting memory."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise LedgerError(f"{where}: larger than {limit} bytes" + (f" ({setting})" if setting else ""))
    return data


def read_regular(path: str | os.PathLike, limit: int, missing: str | None = None,
                 setting: str = "") -> bytes:
    """The bytes of a regular file of at most `limit` bytes."""
    with open_regular(path, missing) as stream:
        try:
            return read_bounded(stream, str(path), limit, setting)
        except OSError as exc:
            raise LedgerError(f"{path}: cannot read ({exc.strerror})") from None
