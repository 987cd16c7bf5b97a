"""Forgetting measurements, taken when `Ledger.forget` exists (reported as null otherwise).

- forget_user: one whole user at a time, without vacuum, on the full ledger, over 100 users
  (u09900 to u09999; the copies for the bulk runs are taken before).
- forget_1k / forget_10k: in fresh copies of the full ledger (SQLite's online backup), 1,000 users
  and then 10,000 users forgotten one after the other; linear cost puts the second near ten times
  the first.  The bench has 10,000 users, so the 10k run forgets every one of them.
"""

from __future__ import annotations

import inspect
import sqlite3
import time
from pathlib import Path

from factledger.ledger import Ledger

from .generator import APP, HEAVY_USER, USERS
from .stats import ms, percentile

KEYS = ("forget_user_p50_ms", "forget_user_p99_ms", "forget_1k_s", "forget_10k_s")


def available() -> str | None:
    """None when forgetting can be measured, else the reason it cannot."""
    if not hasattr(Ledger, "forget"):
        return "Ledger.forget does not exist yet"
    return None


def _call(ledger: Ledger, user: str):
    params = inspect.signature(ledger.forget).parameters
    kwargs = {"app": APP, "user": user}
    for name, value in (("reason", "bench"), ("requester", "bench"), ("requested_by", "bench"), ("vacuum", False),
                        ("yes", True)):
        if name in params:
            kwargs[name] = value
    return ledger.forget(**kwargs)


def users(count: int, offset: int = 1) -> list[str]:
    names = [f"u{i:05d}" for i in range(offset, USERS)] + [HEAVY_USER]
    return names[:count]


def forget_users(ledger: Ledger, names: list[str]) -> list[float]:
    samples = []
    for name in names:
        t0 = time.perf_counter()
        _call(ledger, name)
        samples.append(time.perf_counter() - t0)
    return samples


def copy_db(src: Ledger, dest: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(dest) + suffix).unlink(missing_ok=True)
    target = sqlite3.connect(str(dest))
    src._conn.backup(target)
    target.close()


def copies(ledger: Ledger, workdir: Path, sizes=(1000, 10_000)) -> list[tuple[int, Path]]:
    """Fresh copies of the full ledger, taken before anything is forgotten in it."""
    made = []
    for size in sizes:
        path = workdir / f"forget-{size}.db"
        copy_db(ledger, path)
        made.append((size, path))
    return made


def bulk(registry, made: list[tuple[int, Path]], log=print) -> dict:
    """Each size in its own fresh copy; keys forget_<n>_users_s, plus forget_1k_s / forget_10k_s."""
    sizes = [size for size, _ in made]
    out: dict = {"forget_bulk_sizes": sizes}
    for size, path in made:
        with Ledger(path, registry=registry) as copy:
            t0 = time.perf_counter()
            names = users(size)
            thousands = []
            for start in range(0, len(names), 1000):
                thousands.append(sum(forget_users(copy, names[start:start + 1000])))
                log(f"    {min(start + 1000, size):,} of {size:,} users forgotten, "
                    f"{time.perf_counter() - t0:.0f}s")
            took = time.perf_counter() - t0
        out[f"forget_{size}_users_s"] = round(took, 3)
        # Seconds per thousand users within one run: the two runs are in two copies, minutes
        # apart, so the machine's state differs between them; within a run it does not.
        out[f"forget_{size}_per_thousand_s"] = [round(t, 2) for t in thousands]
        if size in (1000, 10_000):
            out[f"forget_{size // 1000}k_s"] = round(took, 3)
        log(f"  forget {size:,} users: {took:.1f}s")
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
    if len(sizes) == 2 and all(out.get(f"forget_{n}_users_s") for n in sizes):
        small, large = (out[f"forget_{n}_users_s"] for n in sizes)
        # 1.0 = exactly linear; the bound (10k <= 12 x 1k) is 1.2 on this scale.
        out["forget_bulk_linearity"] = round((large / small) / (sizes[1] / sizes[0]), 3)
        # The last thousand of the large run over its first: 1.0 when the thousandth costs what the
        # first did, whatever the machine did between the two runs.
        per_thousand = out[f"forget_{sizes[1]}_per_thousand_s"]
        if len(per_thousand) > 1 and per_thousand[0]:
            out["forget_bulk_growth_within_run"] = round(per_thousand[-1] / per_thousand[0], 3)
            out["forget_bulk_peak_within_run"] = round(max(per_thousand) / per_thousand[0], 3)
    return out


def per_user(ledger: Ledger, count: int = 100) -> dict:
    """The last `count` users of the range (the bulk runs, in their copies, start from the first)."""
    samples = forget_users(ledger, users(USERS)[-count - 1:-1])
    return {"forget_user_p50_ms": ms(percentile(samples, 50)),
            "forget_user_p99_ms": ms(percentile(samples, 99))}
