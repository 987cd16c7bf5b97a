"""Progress bars on stderr while a terminal watches, one a stage; nothing otherwise.

The core names its stages and counts its work (`ledger/vocabulary/progress.py`); this draws
each stage as a click progress bar on stderr when stderr is a terminal, so a pipe, a log file or
a test reading stderr sees nothing of it.
"""

from __future__ import annotations

import sys

import click


class Bars:
    """A `Progress` for the command line; use it as a context manager (the last bar is closed
    on the way out, also on an error)."""

    def __init__(self) -> None:
        self.shown = sys.stderr.isatty()
        self._bar = None

    def stage(self, label: str, total: int) -> None:
        self.close()
        if self.shown:
            self._bar = click.progressbar(length=max(total, 1), label=label, file=sys.stderr)
            self._bar.__enter__()

    def update(self, n: int) -> None:
        if self._bar is not None and n:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            bar, self._bar = self._bar, None
            bar.__exit__(None, None, None)

    def __enter__(self) -> Bars:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
