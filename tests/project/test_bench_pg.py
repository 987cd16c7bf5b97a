"""`python -m bench.pg` runs end to end at a tiny N on a SQLite file, and forgets its sized users
first, a hundred of them (docs/scale.md, "What still grew with the ledger").

No timing is asserted (figures on shared machines drift): only the keys, the sample count and
the order of the forgets, which decide what the 1.5x comparison compares.
"""

from __future__ import annotations

from bench import pg


def test_the_pg_bench_forgets_its_sized_users_first_and_reports_their_tail(tmp_path, monkeypatch):
    order: list[list[str]] = []
    forget = pg.forget_users

    def recorded(ledger, names):
        order.append(list(names))
        return forget(ledger, names)

    monkeypatch.setattr(pg, "forget_users", recorded)
    results = pg.run(str(tmp_path / "bench.db"), events=1500, seed=42, concurrency_seconds=0,
                     skip={"concurrency"})
    assert [names[0][:5] for names in order] == ["sized", "u0998"]
    assert order[0] == pg.sized_users() and len(order[0]) == pg.SIZED_USERS == 100
    assert results["forget_sized_user_samples"] == 100
    assert results["forget_sized_user_mean_events"] > 0
    tail = [results[f"forget_sized_user_{k}_ms"] for k in ("p50", "p95", "p99", "max")]
    assert tail == sorted(tail) and tail[0] > 0
    slowest = results["forget_sized_user_slowest"]
    assert len(slowest) == 3 and slowest[0][1] == results["forget_sized_user_max_ms"]
    assert all(0 <= place < 100 for place, _ in slowest)
    assert results["forget_user_p99_ms"] >= results["forget_user_p50_ms"] > 0
