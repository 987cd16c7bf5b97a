"""The README's CLI tour runs as written: its shell block, executed by bash in a fresh folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def tour_block() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("```sh\n", text.index("## A short tour of the CLI")) + len("```sh\n")
    return text[start:text.index("```\n", start)]


def test_the_readme_tour_runs_as_written(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FACTLEDGER_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    # the tour pins and moves the clock itself (FACTLEDGER_NOW), so its --as-of shows a changed belief
    script = tmp_path / "tour.sh"
    script.write_text(tour_block(), encoding="utf-8")
    done = subprocess.run(["bash", "-e", "-o", "pipefail", str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
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
