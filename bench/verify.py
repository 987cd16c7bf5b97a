"""Verify measurement: `Ledger.verify()` against the raw sha256 chain loop over the same rows.

The raw loop (`baseline.raw_chain`) recomputes every commitment and link and nothing else; verify
also runs SQLite's quick_check, parses each body and checks its clear columns and redactions.
The raw loop runs first, so both read a warm page cache.

Two verifies: `--log-only` (the chain, commitments and triggers: `verify_per_s`, the figure this
bench has always reported) and the full one, which also rebuilds every projection in memory and
compares it with the live tables (`verify_full_per_s`, `verify_full_ratio` against the raw loop).
"""

from __future__ import annotations

import time

from .baseline import raw_chain
from .stats import rate, ratio


def measure(ledger) -> dict:
    count, raw_s = raw_chain(ledger._conn)
    t0 = time.perf_counter()
    result = ledger.verify(log_only=True)
    verify_s = time.perf_counter() - t0
    if not result["ok"]:
        raise RuntimeError(f"verify failed on the bench ledger: {result}")
    t0 = time.perf_counter()
    full = ledger.verify()
    full_s = time.perf_counter() - t0
    if not full["ok"]:
        raise RuntimeError(f"full verify failed on the bench ledger: {full}")
    ours, whole = rate(result["events"], verify_s), rate(full["events"], full_s)
    raw = rate(count, raw_s)
    return {"verify_per_s": ours, "raw_chain_per_s": raw, "verify_ratio": ratio(ours, raw),
            "verify_s": round(verify_s, 3), "verify_full_per_s": whole,
            "verify_full_ratio": ratio(whole, raw), "verify_full_s": round(full_s, 3)}
