"""A non-Python client: the TypeScript SDK (`@modelcontextprotocol/sdk`, installed from npm by this
test's set-up into a cache folder, run with node) against `factledger mcp --http`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from tests.mcp.helpers import SEVEN, http_server, new_ledger, new_token, open_facts  # noqa: E402

CLIENT = Path(__file__).with_name("ts_client.mjs")
SDK = "@modelcontextprotocol/sdk@^1"


@pytest.fixture(scope="session")
def ts_sdk() -> Path:
    """A folder with the TypeScript SDK installed (npm, once per cache), the client script beside it."""
    node, npm = shutil.which("node"), shutil.which("npm")
    assert node and npm, "the TypeScript client test needs node and npm (.ci/run installs them)"
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "factledger-tests" / "mcp-ts"
    cache.mkdir(parents=True, exist_ok=True)
    if not (cache / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json").exists():
        (cache / "package.json").write_text('{"name": "factledger-mcp-ts-test", "private": true}\n')
        done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent", SDK], cwd=cache,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
    shutil.copy(CLIENT, cache / CLIENT.name)         # node resolves the SDK from the script's folder
    return cache / CLIENT.name


def test_the_typescript_sdk_lists_remembers_recalls_and_is_refused_outside_its_scope(tmp_path, ts_sdk):
    db = new_ledger(tmp_path)
    tokens = tmp_path / "tokens.toml"
    token = new_token(db, tokens, user="u1")
    with http_server(db, tokens) as url:
        done = subprocess.run(["node", str(ts_sdk), url, token], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    tools = {t["name"]: t["annotations"] for t in answer["tools"]}
    assert set(tools) == SEVEN and tools["forget"]["destructiveHint"]
    assert tools["recall"]["readOnlyHint"] is False     # a recall records what it served
    assert answer["remembered"]["decision"] == "insert"
    assert "home_city = Lisbon" in answer["block"]
    assert [f["value"] for f in answer["facts"]] == ["Lisbon"]
    assert answer["refused"]["isError"] and answer["refused"]["text"].startswith("Error: ")
    assert "outside this caller's scope" in answer["refused"]["text"]
    assert [f["value"] for f in open_facts(db, "mealkit", "u1")] == ["Lisbon"]
