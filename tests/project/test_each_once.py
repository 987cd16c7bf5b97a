"""Each thing spelt once: event types, rule names and reserved partitions (issue 26, item 7)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

from factledger.ledger.domain import events
from factledger.ledger.domain.events import EVENT_TYPES, EventBody
from factledger.ledger.vocabulary import words
from factledger.ledger.vocabulary.words import Reason, Rule


def test_event_types_are_the_unions_types():
    members = get_args(get_args(EventBody)[0])
    assert EVENT_TYPES == tuple(m.model_fields["type"].default for m in members)
    # every concrete body model of the module is in the union, and nothing else
    models = {name for name, obj in vars(events).items() if isinstance(obj, type)
              and issubclass(obj, events.Body) and "type" in obj.model_fields}
    assert set(EVENT_TYPES) == models
    assert len(set(EVENT_TYPES)) == len(EVENT_TYPES)


# --- rule names, reasons and reserved partitions: written out in one product module only


ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
PRODUCT = ("ledger", "projections", "cli", "web", "adk", "mcp_server")
WORDS = Path("ledger/vocabulary/words.py")

# Words that are also words of another list, and so may be written elsewhere in that sense only
# (never as a rule or a reason: `test_no_rule_or_reason_is_written_where_one_is_used`).
ALSO = {
    "superseded": "a fact status", "retracted": "a fact status", "backfill": "a decision action",
    "negation": "a registry guard (and dedup's)", "reviewer": "a web role",
    "split": "a history change and a provenance role", "reinforced": "a history change",
    "backfilled": "a history change",
}


def _strings(path: Path) -> list[tuple[ast.Constant, int]]:
    """The string constants of a module, docstrings left out."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docs]


def _modules() -> list[Path]:
    return sorted(p.relative_to(ROOT) for root in PRODUCT for p in (ROOT / root).rglob("*.py"))


def _decision_words() -> set[str]:
    return {v for c in (Rule, Reason) for k, v in vars(c).items() if k.isupper()}


def test_each_rule_and_reason_is_written_in_one_module():
    wanted = _decision_words()
    found: dict[str, set[Path]] = {}
    for path in _modules():
        for node in _strings(ROOT / path):
            if node.value in wanted:
                found.setdefault(node.value, set()).add(path)
    for value, paths in found.items():
        others = paths - {WORDS}
        assert not others or value in ALSO, f"{value!r} written out in {sorted(map(str, others))}"
    assert {v for v, paths in found.items() if WORDS in paths} == wanted


def test_no_rule_or_reason_is_written_where_one_is_used():
    """The words shared with another list are never written out as a rule or a reason: not as
    `rule=`/`reason=`, not as `Decision`'s rule or reason, not compared with a `rule`."""
    wanted = _decision_words()
    bad = []
    for path in _modules():
        if path == WORDS:
            continue
        tree = ast.parse((ROOT / path).read_text())
        for node in ast.walk(tree):
            consts = []
            if isinstance(node, ast.keyword) and node.arg in ("rule", "reason"):
                consts = [node.value]
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Decision":
                consts = node.args[1:3]
            elif isinstance(node, ast.Compare) and "rule" in ast.unparse(node.left):
                consts = node.comparators
            bad += [(str(path), c.lineno, c.value) for c in consts
                    if isinstance(c, ast.Constant) and c.value in wanted]
    assert bad == []


EVENTS = Path("ledger/domain/events.py")


def test_event_types_are_written_in_one_module():
    """Every other module names a type as `EVENT.FactObserved`: no string that is a type's name,
    nor SQL that quotes one (`type = 'Redacted'`); prose that mentions a type is not a name."""
    found = []
    for path in _modules():
        if path == EVENTS:
            continue
        for node in _strings(ROOT / path):
            if node.value in EVENT_TYPES or any(f"'{name}'" in node.value for name in EVENT_TYPES):
                found.append((str(path), node.lineno, node.value[:60]))
    assert found == []


RESERVED = {words.DOMAIN_USER, words.ERASURES_USER, words.CHECKPOINTS_USER, words.ALL_APPS}


def test_reserved_partitions_are_written_in_one_module():
    found = []
    for path in _modules():
        for node in _strings(ROOT / path):
            s = node.value
            if s in RESERVED or words.ERASED_PREFIX in s or any(f"'{r}'" in s for r in RESERVED):
                found.append(str(path))
    assert sorted(set(found)) == [str(WORDS)]
    assert len(found) == len(RESERVED) + 1


def test_guard_triggers_name_the_pseudonym_prefix():
    from factledger.ledger.store.eventlog import SCHEMA
    from factledger.ledger.store.postgres import backend

    assert f"LIKE '{words.ERASED_PREFIX}%'" in SCHEMA
    assert f"LIKE '{words.ERASED_PREFIX}%'" in backend._GUARD_SQL["events_refuse_update"]


CLEARANCES = Path("ledger/domain/recall_options.py")


def test_default_clearances_are_written_in_one_module():
    """The clearance a caller gets when it names none (an agent's, an auditor's, an anonymous
    visitor's) is spelt in `ledger/domain/recall_options.py` only: no other module assigns a
    clearance default, or passes one to a CLI option, as a literal class name."""
    from factledger.ledger.vocabulary.words import SENSITIVITIES

    bad = []
    for path in _modules():
        if path == CLEARANCES:
            continue
        for node in ast.walk(ast.parse((ROOT / path).read_text())):
            literals = []
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any("clearance" in ast.unparse(t).lower() for t in targets):
                    literals = [node.value]
            elif isinstance(node, ast.Call) and ast.unparse(node.func) in ("clearance_option", "cleared"):
                literals = node.args[-1:]
            bad += [(str(path), n.lineno, n.value) for n in literals
                    if isinstance(n, ast.Constant) and n.value in SENSITIVITIES]
    assert bad == []
