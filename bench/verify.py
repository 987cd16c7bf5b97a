"""Verify measurement: `Ledger.verify()` against the raw sha256 chain loop over the same rows.

The raw loop (`baseline.raw_chain`) recomputes every commitment and link and nothing else; verify
also runs SQLite's quick_check, parses each body and checks its clear columns and redactions.
The raw loop runs first, so both read a warm page cache.

Four verifies, each against the same raw loop: `--log-only` (the chain, commitments and triggers:
`verify_per_s`, `verify_ratio`); `--full` (every projection rebuilt from the whole log in memory
and compared with the live tables, which records the projections' pages: `verify_refold_*`); then
the plain `verify` a user runs, which reads that record and refolds only what changed since
(`verify_full_*`: every projection checked, nothing changed since the record); and, when a
generator is given, the plain `verify` again after 1,000 more candidates (`verify_changed_*`).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from factledger.ledger import make_candidate

from .baseline import raw_chain
from .stats import rate, ratio

CHANGED = 1_000                     # candidates observed between the record and the last verify


def _timed(ledger, **options) -> tuple[dict, float]:
    t0 = time.perf_counter()
    result = ledger.verify(**options)
    spent = time.perf_counter() - t0
    if not result["ok"]:
        raise RuntimeError(f"verify {options} failed on the bench ledger: {result}")
    return result, spent


def measure(ledger, gen=None, workdir: Path | None = None) -> dict:
    with tempfile.TemporaryDirectory(dir=workdir) as state:
        record = Path(state) / "verified.json"
        count, raw_s = raw_chain(ledger._conn)
        raw = rate(count, raw_s)
        log_only, verify_s = _timed(ledger, log_only=True)
        refold, refold_s = _timed(ledger, record=record, full=True)
        count, raw_s = raw_chain(ledger._conn)       # again, in the same minutes as the plain verify
        raw_now = rate(count, raw_s)
        full, full_s = _timed(ledger, record=record)
        ours, whole = rate(log_only["events"], verify_s), rate(full["events"], full_s)
        out = {"verify_per_s": ours, "raw_chain_per_s": raw, "verify_ratio": ratio(ours, raw),
               "verify_s": round(verify_s, 3),
               "verify_refold_per_s": rate(refold["events"], refold_s),
               "verify_refold_ratio": ratio(rate(refold["events"], refold_s), raw),
               "verify_refold_s": round(refold_s, 3),
               "raw_chain_again_per_s": raw_now, "verify_full_per_s": whole,
               "verify_full_ratio": ratio(whole, raw_now),
               "verify_full_s": round(full_s, 3), "verify_full_refolded": full["incremental"]["partitions_refolded"]}
        if gen is not None:
            ledger.observe_many([make_candidate(**c) for c in gen.batch(CHANGED)])
            count, raw_s = raw_chain(ledger._conn)
            raw_now = rate(count, raw_s)
            changed, changed_s = _timed(ledger, record=record)
            speed = rate(changed["events"], changed_s)
            out.update(verify_changed_per_s=speed, verify_changed_ratio=ratio(speed, raw_now),
                       verify_changed_s=round(changed_s, 3),
                       verify_changed_refolded=changed["incremental"]["partitions_refolded"],
                       verify_changed_rows_compared=changed["incremental"].get("rows_compared"))
        return out
