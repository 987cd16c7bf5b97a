"""Every shell block of README.md and docs/*.md runs as written, or says why it cannot.

A reader copies a block and runs it; a block that fails as written is a bug of the docs (or of the
command).  This test takes each fenced block whose language is `sh` (or `bash`, `shell`) and runs
it with `bash -e -o pipefail`, as a subprocess, in a fresh empty folder with no `FACTLEDGER_*`
variable set, the installed `factledger` first on PATH and the repository's `examples/` linked in
(a reader runs the README from a checkout or with the examples at hand).

The info string after the language says how a block is run (the first word is all a renderer
reads, so the marks do not show):

- ```` ```sh ```` : run as written on a fresh ledger (none exists until the block makes one).
- ```` ```sh demo ```` : run as written with `FACTLEDGER_DB` naming a fresh copy of the demo ledger
  (`factledger demo --out`), for blocks that act on the demo's users (priya's sessions, arun); the
  folder is laid out as a checkout after `make demo` (`demo-out/factledger.db` and its key and
  checkpoint, `.venv/bin/factledger`, `.venv/bin/activate`), so the README's lines run as printed.
- ```` ```sh postgres ```` : run against the test server (tests/pg_server.py) on both backends'
  behalf: each distinct `postgresql://...` URL in the block (a host the reader replaces with theirs)
  is replaced by a fresh schema of the test server, and the block otherwise runs as written.
- ```` ```sh illustrative ```` : a synopsis with placeholders (SEQ, FILE, [--option], A | B), not
  runnable by design; only checked: each `factledger NAME` names a command.
- ```` ```sh server ```` : starts a long-running server or needs one (`serve`); checked like an
  illustrative block.
- ```` ```sh repo ```` : developer commands of a source checkout (make targets, `python -m bench...`,
  hyperfine), long or needing tools the test does not install; checked like an illustrative block,
  and each `make TARGET` names a target of the Makefile.

In a block that runs, a `pip install 'factledger[EXTRA]'` line is not run (the test environment
has the extras; a test never reaches the network): the extras it names must exist in
pyproject.toml, and the line becomes a no-op.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from factledger.cli.main import COMMANDS
from tests.project.conftest import lay_out_demo_checkout

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELLS = ("sh", "bash", "shell")
MARKS = {"", "demo", "postgres", "illustrative", "server", "repo"}
FENCE = re.compile(r"^```([A-Za-z]+)([^\n]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
URL = re.compile(r"""postgres(?:ql)?://[^\s'"]+""")
PIP = re.compile(r"^\s*pip install (?:-\S+ )*'factledger\[([a-z,]+)\]'.*$|^\s*pip install cryptography\s*(#.*)?$",
                 re.MULTILINE)


def blocks() -> list[tuple[str, int, str, str]]:
    """(page, line, mark, text) of every shell block."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match.group(1) in SHELLS:
                line = text.count("\n", 0, match.start()) + 1
                found.append((page.relative_to(ROOT).as_posix(), line, match.group(2).strip(), match.group(3)))
    return found


BLOCKS = blocks()
IDS = [f"{page}:{line}" for page, line, _, _ in BLOCKS]


def subcommands(text: str) -> list[str]:
    """The command each `factledger ...` invocation of a block names (after any --db X)."""
    names = []
    for line in text.splitlines():
        for match in re.finditer(r"(?:^|[\s;&|(`$])factledger((?:\s+--db\s+\S+)?)\s+([a-z][a-z-]*)", line):
            names.append(match.group(2))
    return names


def extras() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def without_installs(text: str) -> str:
    """The block with its `pip install` lines checked and made no-ops."""
    def checked(match: re.Match) -> str:
        if match.group(1):
            unknown = set(match.group(1).split(",")) - extras()
            assert not unknown, f"the docs install extras pyproject.toml does not define: {unknown}"
        return ": 'pip install: the test environment has it'"
    return PIP.sub(checked, text)


def test_every_shell_block_is_marked_with_a_known_mark():
    assert BLOCKS, "no shell block found"
    unknown = [(page, line, mark) for page, line, mark, _ in BLOCKS if mark not in MARKS]
    assert not unknown, f"marks this test does not know (see its docstring): {unknown}"


@pytest.mark.parametrize("page, line, mark, text", BLOCKS, ids=IDS)
def test_every_command_a_block_names_exists(page, line, mark, text):
    unknown = sorted({name for name in subcommands(text) if name not in COMMANDS})
    assert not unknown, f"{page}:{line} names commands factledger does not have: {unknown}"
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.MULTILINE))
    missing = sorted({t for t in re.findall(r"(?:^|\s)make ([a-z][a-z-]*)", text, re.MULTILINE)} - targets)
    assert not missing, f"{page}:{line} names make targets the Makefile lacks: {missing}"


def run_block(text: str, folder: Path, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FACTLEDGER_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(env_extra or {})
    (folder / "examples").symlink_to(ROOT / "examples")
    script = folder / "block.sh"
    script.write_text(without_installs(text), encoding="utf-8")
    return subprocess.run(["bash", "-e", "-o", "pipefail", str(script)], cwd=folder, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)


FILE_BLOCKS = [(p, n, m, t) for p, n, m, t in BLOCKS if m in ("", "demo")]
SERVER_BLOCKS = [(p, n, m, t) for p, n, m, t in BLOCKS if m == "postgres"]


@pytest.mark.parametrize("page, line, mark, text", FILE_BLOCKS, ids=[f"{p}:{n}" for p, n, _, _ in FILE_BLOCKS])
def test_a_shell_block_runs_as_written(page, line, mark, text, tmp_path, request):
    env = {}
    if mark == "demo":      # a checkout after `make demo`: demo-out/, .venv/bin (tests/project/conftest.py)
        copy = lay_out_demo_checkout(tmp_path, request.getfixturevalue("demo_ledger"))
        env["FACTLEDGER_DB"] = str(copy)
    done = run_block(text, tmp_path, env)
    assert done.returncode == 0, f"{page}:{line} fails as written:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"


@pytest.mark.parametrize("page, line, mark, text", SERVER_BLOCKS,
                         ids=[f"{p}:{n}" for p, n, _, _ in SERVER_BLOCKS])
def test_a_postgres_block_runs_against_the_test_server(page, line, mark, text, tmp_path, postgres):
    urls = sorted(set(URL.findall(text)))
    assert urls, f"{page}:{line} is marked postgres but names no postgresql:// URL"
    fresh = {url: postgres.location() for url in urls}      # one fresh schema for each URL named
    done = run_block(URL.sub(lambda m: fresh[m.group(0)], text), tmp_path)
    assert done.returncode == 0, f"{page}:{line} fails as written:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
