"""Every exception a library user may catch is importable from `factledger` itself: each class of
ledger/errors.py, and each exception the README names (`from factledger import LedgerNotFound`
failed while the README promised it)."""

from __future__ import annotations

import builtins
import inspect
import re
import subprocess
import sys
from pathlib import Path

import factledger
from factledger.ledger import errors

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_exception_of_the_errors_module_is_public():
    defined = {name for name, value in vars(errors).items()
               if inspect.isclass(value) and issubclass(value, Exception) and value.__module__ == errors.__name__}
    assert defined <= set(factledger.__all__)
    for name in defined:
        assert getattr(factledger, name) is getattr(errors, name)


def test_the_exceptions_the_readme_names_import_from_factledger():
    named = set(re.findall(r"\b([A-Z][A-Za-z]+(?:Error|NotFound|Refused|Busy|ReadOnly|Damaged|Mismatch))\b",
                           README.read_text()))
    named -= {n for n in dir(builtins) if isinstance(getattr(builtins, n), type)}
    assert "LedgerNotFound" in named
    code = "".join(f"from factledger import {name}\n" for name in sorted(named))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
