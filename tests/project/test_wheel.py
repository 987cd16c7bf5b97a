"""The built wheel installs one name, `factledger`, and works from a fresh virtual environment.

Offline by design: the wheel is built without build isolation (setuptools comes from the test
extra) and installed with `--no-deps`; its dependencies are made importable by a `.pth` line naming
this environment's site-packages.  A `.pth` line only adds a folder to `sys.path` (the `.pth`
files inside it, such as the editable install's finder, are not run), so the fresh environment
sees `factledger` only as the wheel installed it.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd)


def test_the_wheel_installs_only_factledger_and_imports_in_a_fresh_venv(tmp_path):
    dist = tmp_path / "dist"
    built = _run(sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", dist, ROOT, cwd=tmp_path)
    assert built.returncode == 0, built.stderr[-2000:]
    # every folder of data is a package of its own, so setuptools installs it without a warning
    assert "absent from the `packages` configuration" not in built.stdout + built.stderr
    wheel = next(dist.glob("factledger-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"factledger"}
    # every module of the card's folders is in the wheel (a subpackage missing from pyproject's
    # package list would install without its modules)
    for folder in ("ledger", "projections", "cli", "web", "adk", "mcp_server"):
        for path in (ROOT / folder).rglob("*.py"):
            assert f"factledger/{path.relative_to(ROOT).as_posix()}" in names, path

    env = tmp_path / "venv"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                     cwd=tmp_path).stdout.strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = _run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
                     "--quiet", wheel, cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr[-2000:]

    ok = _run(python, "-c", "import factledger; from factledger import Ledger, make_candidate, LedgerError; "
              "import factledger.cli.main; print(factledger.__file__)", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip().startswith(str(site)), ok.stdout
    for name in ("cli", "ledger", "projections"):
        gone = _run(python, "-c", f"import {name}", cwd=tmp_path)
        assert gone.returncode == 1 and "ModuleNotFoundError" in gone.stderr, (name, gone.stderr)

    script = env / "bin" / "factledger"
    assert script.exists()
    db = tmp_path / "w.db"
    assert _run(script, "--db", db, "init", cwd=tmp_path).returncode == 0
    verified = _run(script, "--db", db, "verify", cwd=tmp_path)
    assert verified.returncode == 0, verified.stderr

    # the demo runs from the wheel alone: the examples are package data, found in site-packages
    assert (site / "factledger" / "examples" / "sessions" / "meal-kit").is_dir()
    demo = _run(script, "demo", "--out", tmp_path / "demo.db", cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert "pescatarian" in demo.stdout
