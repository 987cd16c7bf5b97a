"""How a long check or copy says how far it has gone, without knowing who is watching.

`verify`, `replay --check`, `export` and `import` take a `Progress`: the core names each stage
with its total (`stage`) and reports work done (`update`); the CLI draws click progress bars on
a terminal (`cli/progress.py`), the web view's background Integrity job keeps the figures for its
page to poll.  `SILENT` is the default: a library caller sees nothing.
"""

from __future__ import annotations

from typing import Protocol

# Work between two reports: a counter check per event is free, a call per event is not.
STEP = 10_000


class Progress(Protocol):
    def stage(self, label: str, total: int) -> None:
        """A new stage begins: `total` units of work under `label` (the last stage ends)."""

    def update(self, n: int) -> None:
        """`n` more units of the current stage are done."""


class _Silent:
    def stage(self, label: str, total: int) -> None:
        pass

    def update(self, n: int) -> None:
        pass


SILENT: Progress = _Silent()
