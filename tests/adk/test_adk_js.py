"""The TypeScript memory service (`adk-js/`, package `factledger-adk`) against a real
`factledger mcp --http` on a temporary ledger: `npm ci` from the committed lock file (skipped
when node_modules already matches it), `npm run build` (tsc), then `npm test` (node --test on the
compiled tests) and the Pune-to-Bengaluru example, each a node subprocess given the server's URL
and tokens made by the CLI.  Nothing is downloaded but the npm registry's packages, once."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from tests.mcp.helpers import http_server, new_ledger, new_token, open_facts  # noqa: E402

PACKAGE = Path(__file__).resolve().parents[2] / "adk-js"
INSTALLED_LOCK = PACKAGE / "node_modules" / ".package-lock.json"     # what npm ci last installed


def npm(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    done = subprocess.run(["npm", *args], cwd=PACKAGE, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"npm {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


def installed_matches_lock() -> bool:
    """node_modules as `npm ci` left it for this lock file: the hidden lock npm writes there
    lists the same packages at the same versions as the committed lock."""
    if not INSTALLED_LOCK.exists():
        return False
    wanted = json.loads((PACKAGE / "package-lock.json").read_text())["packages"]
    have = json.loads(INSTALLED_LOCK.read_text())["packages"]
    return all(have.get(path, {}).get("version") == entry.get("version")
               for path, entry in wanted.items() if path and not entry.get("optional"))


@pytest.fixture(scope="module")
def built() -> Path:
    """The package installed from its lock file and compiled to adk-js/dist."""
    assert shutil.which("node") and shutil.which("npm"), "the ADK JS tests need node and npm (.ci/run installs them)"
    if not installed_matches_lock():
        npm("ci", "--no-audit", "--no-fund")
    npm("run", "build", timeout=300)
    assert (PACKAGE / "dist" / "src" / "index.js").exists()
    return PACKAGE


def test_the_package_passes_the_adk_js_contract_and_the_factledger_points(tmp_path, built):
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    made = {
        "agent": new_token(db, tokens, "contract", users="*"),
        "health": new_token(db, tokens, "contract", users="*", clearance="health"),
        "reviewer": new_token(db, tokens, "contract", users="*", role="reviewer"),
        "single": new_token(db, tokens, "contract", user="carol"),
        "other_app": new_token(db, tokens, "otherapp", users="*"),
    }
    env = {**os.environ, "FACTLEDGER_TOKENS": json.dumps(made)}
    with http_server(db, tokens) as url:
        done = subprocess.run(["npm", "test"], cwd=built, capture_output=True, text=True, timeout=600,
                              env={**env, "FACTLEDGER_MCP_URL": url})
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "# fail 0" in done.stdout and "# pass 0" not in done.stdout
    for suite in ("addSessionToMemory", "searchMemory", "facts over sessions", "forgetting", "errors",
                  "inside a Runner", "lineFor", "withheldEntry", "wireSession"):
        assert re.search(rf"^ok \d+ - {suite}$", done.stdout, re.MULTILINE), f"suite {suite!r} did not pass"


def test_the_example_moves_asha_to_bengaluru_and_another_token_cannot_see_it(tmp_path, built):
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    asha = new_token(db, tokens, "homes", user="asha")
    ravi = new_token(db, tokens, "homes", user="ravi")
    with http_server(db, tokens) as url:
        done = subprocess.run(["node", "dist/examples/move.js", url, asha, ravi], cwd=built,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    [entry] = answer["memories"]
    assert entry["metadata"]["value"] == "Bengaluru" and entry["metadata"]["predicate"] == "home_city"
    said = next(f for f in open_facts(db, "homes", "asha") if f["value"] == "Bengaluru")["said_at"]
    assert entry["timestamp"][:10] == said[:10]
    assert f"home_city = Bengaluru (stated {said[:10]})" in entry["text"]
    assert answer["other"].startswith("Error: ") and "outside this caller's scope" in answer["other"]
    assert [f["value"] for f in open_facts(db, "homes", "asha")] == ["Bengaluru"]
