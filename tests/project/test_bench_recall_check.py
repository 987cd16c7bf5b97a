"""`python -m bench.recall_check` runs end to end at a tiny size on a file ledger, writes every
figure, and leaves the served-fact check as it found it; no timing is asserted."""

from __future__ import annotations

from bench import queries
from bench.recall_check import measure
from factledger.ledger import Ledger
from factledger.ledger.audit import served


def test_the_recall_check_bench_measures_both_checks_and_restores_the_check(tmp_path):
    db = tmp_path / "ledger.db"
    with Ledger(db, future_tolerance="100y", create=True) as ledger:
        queries.seed_recall_user(ledger, facts=50)
    keyed, seed = served._touched_rows, queries.seed_recall_user
    results = measure(str(db), count=4)
    assert served._touched_rows is keyed and queries.seed_recall_user is seed
    for label in ("key_lookups", "one_join", "key_lookups_again"):
        for key in ("recall_p50_ms", "recall_p99_ms", "recall_unchecked_p50_ms", "recall_unchecked_p99_ms",
                    "verified_vs_unchecked_p50", "verified_vs_unchecked_p99"):
            assert results[label][key] > 0, (label, key)
