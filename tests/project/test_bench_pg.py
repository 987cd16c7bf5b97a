"""`python -m bench.pg` runs end to end at a tiny N on a SQLite file, and forgets its sized users
first, a hundred of them (docs/performance.md, "What still grew with the ledger"); it measures replay
at one job and two as the file bench does (`bench/replay.py`), on PostgreSQL too.

No timing is asserted (figures on shared machines drift): only the keys, the sample count and
the order of the forgets, which decide what the 1.5x comparison compares.
"""

from __future__ import annotations

from bench import pg, replay
from factledger.ledger import Ledger
from tests.conftest import cand

REPLAY_KEYS = ("replay_ratio", "replay_jobs2_ratio", "replay_speedup_2", "parallel_ceiling_2",
               "raw_read_per_s")


def test_the_pg_bench_forgets_its_sized_users_first_and_reports_their_tail(tmp_path, monkeypatch):
    order: list[list[str]] = []
    forget = pg.forget_users

    def recorded(ledger, names):
        order.append(list(names))
        return forget(ledger, names)

    monkeypatch.setattr(pg, "forget_users", recorded)
    # the replay phase is the file bench's own measurement, run by tests/project/test_bench_smoke.py
    results = pg.run(str(tmp_path / "bench.db"), events=1500, seed=42, concurrency_seconds=0,
                     skip={"concurrency", "replay"})
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
    assert "replay_ratio" not in results


def test_the_replay_bench_measures_a_postgresql_ledger_as_it_does_a_file(postgres):
    """Ratios against the raw floor at one job and two, alternated rounds, the ceiling beside
    them, and a CHECKPOINT between replays (the superuser this server gives may run it)."""
    location = postgres.location()
    with Ledger(location, create=True) as ledger:
        for i in range(60):
            ledger.observe(cand(user=f"u{i % 7}", value=f"v{i % 3}", session=f"s{i}", event=f"e{i}"))
        events = ledger.verify(log_only=True)["events"]
    results = replay.measure(location)
    assert results["replay_events"] == events
    # measured, not judged: at 60 events on a loaded machine a ratio rounded to three places can be 0.0
    assert all(results[k] is not None and results[k] >= 0 for k in REPLAY_KEYS)
    assert [len(r) for r in results["replay_rounds"]] == [5] * replay.ROUNDS
    with Ledger(location) as ledger:
        assert ledger.replay_differences() == []
