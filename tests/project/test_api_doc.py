"""The public names of `Ledger` are exactly those docs/api.md documents (issue 46): a method added
to the facade is documented or made private, and the grouped reads list what their objects hold."""

from __future__ import annotations

import re
from pathlib import Path

from factledger.ledger import Ledger
from factledger.ledger.groups import Erased, Lookup, Notices, Serves

API = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def documented() -> tuple[set[str], dict[str, set[str]]]:
    text = API.read_text()
    names: set[str] = set()
    for line in text.splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            names |= {re.match(r"\w+", n).group(0) for n in re.findall(r"`([^`]+)`", first)}
    groups = {}
    for group, body in re.findall(r"^- `ledger\.(\w+)`: (.*?)(?=^- |\Z)", text, re.S | re.M):
        groups[group] = set(re.findall(r"`(\w+)`", body))
    names.discard("Ledger")
    return names | set(groups), groups


def test_ledgers_public_names_are_the_documented_ones():
    names, _ = documented()
    public = {n for n in dir(Ledger) if not n.startswith("_")}
    assert public - names == set(), "public but not in docs/api.md"
    assert names - public == set(), "in docs/api.md but not public"


def test_the_grouped_reads_hold_what_the_doc_lists():
    _, groups = documented()
    classes = {"erased": Erased, "serves": Serves, "notices": Notices, "lookup": Lookup}
    assert set(groups) == set(classes)
    for name, cls in classes.items():
        assert groups[name] == set(cls.names) == {n for n in dir(cls) if not n.startswith("_") and n != "names"}
        for method in cls.names:                  # each calls the ledger's private method of its name
            assert callable(getattr(Ledger, "_" + method))
