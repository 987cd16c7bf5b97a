"""`python -m bench.logchecks` runs end to end at a tiny size (figures only; no timing is asserted),
and switches the checks back on after each unchecked run."""

from __future__ import annotations

import json

from bench.logchecks import main
from factledger.ledger.ingest import pipeline
from factledger.projections.sessions import checked_state


def test_the_log_checks_bench_runs_and_writes_its_figures(tmp_path, capsys):
    out = tmp_path / "checks.json"
    assert main(["--sessions", "3", "--observations", "3", "--rounds", "1", "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    assert set(got) == {"ingest, one user", "ingest, many users", "observe, one key", "observe, one key, late",
                        "observe_many of 50, one key"}
    assert all(row["count"] == 3 and row["ratio"] > 0 for row in got.values())
    assert pipeline.checked_state is checked_state
    assert "ratio" in capsys.readouterr().out
