"""The benchmark suite runs end to end at a tiny N and writes every key of the performance table (docs/performance.md).

No timing is asserted here (figures on shared machines drift); only that the suite runs, the
ledger it builds verifies, and the JSON has its keys (a key may be null with a reason).
"""

from __future__ import annotations

import json

from bench.__main__ import main
from bench.generator import Generator
from bench.report import ORDER, TARGETS


def test_generator_is_deterministic():
    assert Generator(3).batch(300) == Generator(3).batch(300)
    assert Generator(3).batch(50) != Generator(4).batch(50)


def test_bench_runs_and_writes_every_key(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["--events", "2000", "--json", str(out), "--workdir", str(tmp_path / "work"),
                 "--skip", "adk", "--forget-sizes", "20,200"]) == 0
    results = json.loads(out.read_text())
    for key in ORDER:
        assert key in results, key
        if results[key] is None:
            assert results["null_reasons"].get(key), key
    assert results["events"] >= 2000
    assert results["replay_events"] >= results["events"]
    # each round: one-job s, two-job s, their speed-up, the machine's ceiling before and after
    assert len(results["replay_rounds"]) == 2 and all(len(r) == 5 for r in results["replay_rounds"])
    assert 0 < results["parallel_ceiling_2"] <= 4
    assert set(results["targets"]) == set(TARGETS)
    assert "observe_batch_ratio" in capsys.readouterr().out
