"""Read models folded from the event log; each can be dropped and rebuilt from it."""

from __future__ import annotations

from factledger.projections.catalog import all_projections

__all__ = ["all_projections"]
