"""The projection protocol is the whole contract between the projector and a projection.

Every member the runner (and the order check) uses on a projection is declared by a protocol in
projections/base.py, every projection a ledger keeps satisfies the protocols it is run under, and
a projection that follows the facts fold must be handed the very fold the projector runs first.
"""

from __future__ import annotations

import ast
import inspect

import pytest

from factledger.ledger.domain.eventrow import Event
from factledger.ledger.domain.events import EVENT_TYPES
from factledger.projections import base, runner
from factledger.projections.catalog import all_projections
from factledger.projections.facts import FactsProjection
from factledger.projections.recall import RecallProjection
from factledger.projections.runner import Projector
from factledger.projections.vectors import VectorProjection

PROTOCOLS = (base.Projection, base.BufferedProjection, base.LogWideProjection, base.KeyReader,
             base.FactsFold, base.FollowsFacts, base.WholeLogRebuild)


def _declared() -> set[str]:
    names: set[str] = set()
    for protocol in PROTOCOLS:
        names |= set(getattr(protocol, "__annotations__", {}))
        names |= {n for n, v in vars(protocol).items() if callable(v) and not n.startswith("_")}
    return names


def _used_on_projections(module) -> set[str]:
    """Attributes read from names that hold a projection in the module's code."""
    holders = {"projection", "p", "_facts"}
    used = set()
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.Attribute):
            target = node.value
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
            if name in holders:
                used.add(node.attr)
    return used


def test_every_member_the_runner_uses_is_declared():
    used = _used_on_projections(runner) | _used_on_projections(base)
    assert used, "the scan found nothing: it no longer reads the runner"
    assert used - _declared() == set()


def test_every_projection_satisfies_its_protocols():
    projections = all_projections()
    for projection in projections:
        assert isinstance(projection, base.Projection) or isinstance(projection, base.LogWideProjection)
        assert isinstance(projection.depends_on, tuple)
    buffered = [p for p in projections if isinstance(p, base.BufferedProjection)]
    assert {p.name for p in buffered} >= {"facts", "recall", "vectors"}
    facts = next(p for p in projections if isinstance(p, base.KeyReader))
    assert isinstance(facts, base.FactsFold)
    followers = [p for p in projections if isinstance(p, base.FollowsFacts)]
    assert {p.name for p in followers} == {"recall", "vectors"}
    assert all(p.facts is facts and p.depends_on == (facts.name,) for p in followers)


def test_the_recall_index_cannot_fold_before_the_facts():
    facts = FactsProjection()
    with pytest.raises(ValueError, match="must come after facts"):
        Projector([RecallProjection(facts), facts])


def test_a_follower_must_be_handed_the_facts_fold_the_projector_runs():
    with pytest.raises(ValueError, match="follows a facts fold this projector does not run"):
        Projector([FactsProjection(), VectorProjection(FactsProjection())])
    facts = FactsProjection()
    Projector([facts, RecallProjection(facts), VectorProjection(facts)])


class _AnyBody(dict):
    """A body that has every field (so an `apply` that ignored its event type would act)."""

    def __missing__(self, key):
        return "x"

    def get(self, key, default=None):
        return "x"


class _Refusing:
    """A connection that fails the test on any use."""

    def __init__(self, what: str):
        self.what = what

    def __getattr__(self, name):
        raise AssertionError(f"{self.what} used the connection ({name})")


def test_a_projection_acts_on_no_event_outside_its_event_types():
    """A rebuild hands a per-event projection only partitions holding one of its `event_types`
    (projections/runner.py): every other type must be one its `apply` ignores."""
    named = [p for p in all_projections() if getattr(p, "event_types", None) is not None]
    assert {p.name for p in named} == {"review", "sessions", "erasures", "negations", "serves"}
    for projection in named:
        assert projection.event_types <= set(EVENT_TYPES)
        assert not isinstance(projection, base.BufferedProjection)
        for type_ in EVENT_TYPES:
            if type_ not in projection.event_types:
                projection.apply(_Refusing(f"{projection.name} on {type_}"),
                                 Event(1, "e1", type_, "app", "u1", "2026-01-01T00:00:00Z", _AnyBody()))
