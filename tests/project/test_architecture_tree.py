"""docs/architecture.md's module tree is the code's: every product module is listed in it, and
every file it lists exists.  On a failure the message carries the missing lines, written from
each module's docstring, ready to paste."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
FOLDERS = ("factledger", "ledger", "projections", "cli", "web", "adk", "mcp_server")


def listed() -> set[str]:
    """The paths of the fenced block under '## Module tree': a line's first word is a file, or a
    folder when it ends in '/'; indentation (two spaces a level) says which folder it is in."""
    text = DOC.read_text()
    block = re.search(r"## Module tree\n.*?```\n(.*?)```", text, re.S).group(1)
    paths, stack = set(), []
    for line in block.splitlines():
        if not line.strip():
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 2
        name = line.split()[0]
        del stack[depth:]
        if name.endswith("/"):
            stack.append(name.rstrip("/"))
        else:
            paths.add("/".join([*stack, name]))
    return paths


def modules() -> set[str]:
    return {str(p.relative_to(ROOT)) for folder in FOLDERS for p in (ROOT / folder).rglob("*.py")
            if "__pycache__" not in p.parts}


def summary(path: str) -> str:
    doc = ast.get_docstring(ast.parse((ROOT / path).read_text())) or ""
    return doc.split("\n\n")[0].replace("\n", " ")


def test_the_module_tree_lists_every_module_and_nothing_else():
    doc, code = listed(), modules()
    missing = sorted(code - doc)
    assert not missing, "docs/architecture.md's module tree lacks:\n" + "\n".join(
        f"  {path}    {summary(path)}" for path in missing)
    assert not sorted(doc - code), f"docs/architecture.md lists files that do not exist: {sorted(doc - code)}"


def test_no_product_folder_is_one_room():
    """The architecture issue's bounds: the ledger's top folder holds at most 12 modules and no
    folder of the product more than 25."""
    counts: dict[Path, int] = {}
    for path in modules():
        counts[Path(path).parent] = counts.get(Path(path).parent, 0) + (Path(path).name != "__init__.py")
    assert counts[Path("ledger")] <= 12, counts[Path("ledger")]
    crowded = {str(folder): n for folder, n in counts.items() if n > 25}
    assert not crowded, crowded
