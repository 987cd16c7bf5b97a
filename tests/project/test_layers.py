"""Every module has a place in the import-layer contract (pyproject `[tool.importlinter]`).

import-linter checks only the modules a layer names, so a new module that no layer names would
be free to import anything: this test makes adding a module mean placing it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"ledger": "factledger.ledger", "projections": "factledger.projections", "cli": "factledger.cli",
            "web": "factledger.web", "adk": "factledger.adk", "mcp_server": "factledger.mcp_server"}


def _layered() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["type"] == "layers")["layers"]
    return {name.strip() for layer in layers for name in layer.replace("|", ":").split(":")}


def _modules() -> list[str]:
    found = []
    for folder, package in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.append(".".join((package, *parts)))
    return found


def test_every_module_is_in_a_layer():
    layered = _layered()
    unplaced = [m for m in _modules()
                if not any(m == name or m.startswith(name + ".") for name in layered)
                and not any(name.startswith(m + ".") for name in layered)]
    assert not unplaced, ("add each module to a layer in pyproject [tool.importlinter] "
                          f"(docs/architecture.md): {unplaced}")
