"""The README's tour runs as written on the demo ledger, in a folder laid out as a checkout after
`make demo`; and docs/cli.md's tour from an empty ledger runs as written in a fresh folder.  Both
by bash, as subprocesses, and each is checked for what it says the reader will see."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.project.conftest import lay_out_demo_checkout

ROOT = Path(__file__).resolve().parents[2]


def block(page: str, heading: str, fence: str) -> str:
    text = (ROOT / page).read_text(encoding="utf-8")
    start = text.index(fence, text.index(heading)) + len(fence)
    return text[start:text.index("```\n", start)]


def run(script_text: str, folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    script = folder / "tour.sh"
    script.write_text(script_text, encoding="utf-8")
    return subprocess.run(["bash", "-e", "-o", "pipefail", str(script)], cwd=folder, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)


def clean_env() -> dict[str, str]:
    # (and no COLUMNS: the reader's tables at the piped default width, 120)
    return {k: v for k, v in os.environ.items() if not k.startswith("FACTLEDGER_") and k != "COLUMNS"}


def test_the_readme_tour_runs_on_the_demo_ledger_as_written(tmp_path, demo_ledger):
    lay_out_demo_checkout(tmp_path, demo_ledger)
    env = clean_env()
    env["PATH"] = "/usr/bin:/bin"                        # factledger comes from .venv/bin/activate
    done = run(block("README.md", "## A short tour", "```sh demo\n"), tmp_path, env)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Pune" in out and "metoprolol tartrate 25 mg" in out        # now, and believed then
    assert "deploy.avoided_region" in out                              # review --contradictions
    assert "support-bot" in out and "Accounting of disclosures" in out  # served, report access
    assert '"ok": true' in out and '"differences": []' in out          # verify, replay --check


def test_the_quick_start_lines_run_after_make_demo(tmp_path, demo_ledger):
    lay_out_demo_checkout(tmp_path, demo_ledger)
    env = clean_env()
    env["PATH"] = "/usr/bin:/bin"                        # .venv/bin/factledger, as printed
    done = run(block("README.md", "After `make demo`", "```sh demo\n"), tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert "Pune" in done.stdout and "home_city" in done.stdout


def test_the_cli_doc_tour_from_an_empty_ledger_runs_as_written(tmp_path):
    env = clean_env()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    # the tour pins and moves the clock itself (FACTLEDGER_NOW), so its --as-of shows a changed belief
    done = run(block("docs/cli.md", "## A tour from an empty ledger", "```sh\n"), tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "factledger.db").exists()
    out = done.stdout
    assert '"relation": "replaced by"' in out and '"value": "Bengaluru"' in out   # why "$PUNE"
    assert '"resolved_by": "dr.rao"' in out                                       # why "$GUESS"
    assert '"ok": true' in out and '"differences": []' in out                     # verify, replay
    assert '"state_then": "current"' in out and '"state_now": "superseded"' in out  # --valid-at, Pune
    believed = subprocess.run(["factledger", "facts", "--app", "mealkit", "--user", "priya", "--as-of",
                               "2026-09-15", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True)

    assert {r["value"] for r in json.loads(believed.stdout)} == {"vegetarian", "Pune"}   # since replaced
