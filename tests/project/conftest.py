"""The demo ledger, made once for the doc tests, and a folder laid out as a checkout after
`make demo` (demo-out/ with the ledger, its key and checkpoint; .venv/bin with `factledger` and an
`activate`), so the README's lines run there as written."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def demo_ledger(tmp_path_factory) -> Path:
    """A demo ledger kept with its key and checkpoint beside it (`factledger demo --out`)."""
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    done = subprocess.run([str(Path(sys.executable).with_name("factledger")), "demo", "--out", str(path)],
                          capture_output=True, text=True, timeout=600,
                          env={k: v for k, v in os.environ.items() if not k.startswith("FACTLEDGER_")})
    assert done.returncode == 0, done.stderr
    return path


def lay_out_demo_checkout(folder: Path, ledger: Path) -> Path:
    """`folder` as a checkout after `make demo`: demo-out/factledger.db (a copy, with .key,
    .key.pub and .ckpt) and .venv/bin/{factledger, activate}; returns the ledger's copy."""
    out = folder / "demo-out"
    out.mkdir()
    copy = out / "factledger.db"
    shutil.copyfile(ledger, copy)
    for suffix in (".key", ".key.pub", ".ckpt"):
        shutil.copyfile(f"{ledger}{suffix}", f"{copy}{suffix}")
    bin_dir = folder / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "factledger").symlink_to(Path(sys.executable).with_name("factledger"))
    (bin_dir / "activate").write_text(f'export PATH="{bin_dir}:$PATH"\n', encoding="utf-8")
    return copy
