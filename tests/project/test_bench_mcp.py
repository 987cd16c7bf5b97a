"""The MCP latency bench (`python -m bench.mcp_latency`) runs end to end at a tiny size and writes
every figure; no timing is asserted (figures on shared machines drift)."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp")

from bench.mcp_latency import measure  # noqa: E402


def test_the_mcp_bench_measures_both_tools_both_ways_and_their_ratios():
    results = measure(calls=4, concurrent=2, log=lambda _line: None)
    for clients in (1, 2):
        for tool in ("recall", "remember"):
            for q in (50, 99):
                for mode in ("http", "in_process"):
                    assert results[f"mcp_{mode}_{tool}_c{clients}_p{q}_ms"] > 0
                assert results[f"mcp_http_vs_in_process_{tool}_c{clients}_p{q}"] > 0
        for mode in ("http", "in_process"):
            assert results[f"mcp_{mode}_recall_c{clients}_per_s"] > 0
    for mode in ("http", "in_process"):
        assert results[f"mcp_{mode}_recall_p99_c2_vs_c1"] > 0 and results[f"mcp_{mode}_recall_per_s_c2_vs_c1"] > 0
