"""`python -m bench.backfill` runs end to end at a tiny size (figures only; no timing is asserted)."""

from __future__ import annotations

import json

from bench.backfill import main


def test_the_late_statement_bench_runs_and_writes_its_figures(tmp_path, capsys):
    out = tmp_path / "late.json"
    assert main(["--rows", "30,60", "--late", "5", "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    assert [r["late"] for r in got["runs"]] == [5, 5]
    assert set(got["growth_last_vs_first"]) == {"split", "backfill", "newer"}
    assert "history rows" in capsys.readouterr().out
