"""Verify measurement: `Ledger.verify()` against the raw sha256 chain loop over the same rows.

The raw loop (`baseline.raw_chain`) recomputes every commitment and link and nothing else; verify
also runs SQLite's quick_check, parses each body and checks its clear columns and redactions.
The raw loop runs first, so both read a warm page cache.
"""

from __future__ import annotations

import time

from .baseline import raw_chain
from .stats import rate, ratio


def measure(ledger) -> dict:
    count, raw_s = raw_chain(ledger._conn)
    t0 = time.perf_counter()
    result = ledger.verify()
    verify_s = time.perf_counter() - t0
    if not result["ok"]:
        raise RuntimeError(f"verify failed on the bench ledger: {result}")
    ours = rate(result["events"], verify_s)
    raw = rate(count, raw_s)
    return {"verify_per_s": ours, "raw_chain_per_s": raw, "verify_ratio": ratio(ours, raw),
            "verify_s": round(verify_s, 3)}
