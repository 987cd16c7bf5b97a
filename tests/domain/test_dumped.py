"""Event bodies built without their models are the bodies the models dump (ledger/domain/dumped.py).

Two properties.  Field by field: for any fields, valid or not, `dumped(Model, **fields)` is
`Model(**fields).model_dump(mode="json", exclude_none=True)` (the same keys in the same order, the
same values of the same types, so the same canonical bytes and commitment), or raises as the
model does.  Whole ledgers: the same observations through a ledger that builds its bodies
directly and one that builds them through the models, with the same ids, salts and clock, give
the same log, byte for byte, hash for hash.
"""

from __future__ import annotations

import itertools
import tempfile
import typing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from factledger.ledger import Ledger
from factledger.ledger.domain import dumped as dumped_module
from factledger.ledger.domain import record
from factledger.ledger.domain.dumped import dumped
from factledger.ledger.domain.events import MODELS
from factledger.ledger.store import chain, eventlog
from tests.conftest import MovableClock
from tests.projections.test_fold_rebuild import observation, run

_OMIT = object()
_TIMES = ["2024-01-01T00:00:20.000000Z", "2026-08-03T10:00:00.000000Z", "2024-01-01", "2024-02-30T00:00:00.000000Z",
          "2024-01-01T00:00:20Z", "0999-01-01T00:00:00.000000Z", "preference", "open_item", "Bad Kind", ""]
# Anything at all, for any field: what a wrong caller might hand a model.
_ODD = st.one_of(st.none(), st.text(max_size=4), st.sampled_from(_TIMES), st.integers(-2, 2),
                 st.integers(2 ** 53 - 1, 2 ** 60), st.floats(allow_nan=True, allow_infinity=True),
                 st.booleans(), st.just(1.0), st.lists(st.text(max_size=2), max_size=2))


def _valid(annotation) -> st.SearchStrategy:
    """Values of the field's shape (some still refused by its validator: a bad time, a bad kind)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return st.sampled_from(_TIMES)
    if origin is typing.Literal:
        return st.sampled_from(typing.get_args(annotation))
    if origin is not None and type(None) in typing.get_args(annotation):
        member = next(a for a in typing.get_args(annotation) if a is not type(None))
        return st.one_of(st.none(), _valid(member))
    if annotation is str:
        return st.text(max_size=6)
    if annotation is float:
        return st.one_of(st.floats(0, 1), st.integers(0, 1))
    if annotation is int:
        return st.integers(-5, 10 ** 6)
    if annotation is bool:
        return st.booleans()
    return _ODD


def _fields(model) -> st.SearchStrategy:
    per_field = {}
    for name, field in model.model_fields.items():
        annotation = field.annotation if not field.metadata else typing.Annotated[str, *field.metadata]
        good = _valid(annotation)
        # mostly a value of the field's shape, so that whole bodies are valid often
        per_field[name] = st.one_of(good, good, good, good, good, good, good, good, st.just(_OMIT), _ODD)
    extra = st.one_of(st.just({}), st.just({}), st.just({}), st.dictionaries(st.sampled_from(["nope", "Type"]), _ODD,
                                                                           max_size=1))
    return st.builds(lambda fields, more: {**{k: v for k, v in fields.items() if v is not _OMIT}, **more},
                     st.fixed_dictionaries(per_field), extra)


def _model_dump(model, fields):
    try:
        return model(**fields).model_dump(mode="json", exclude_none=True)
    except ValidationError:
        return ValidationError


@pytest.mark.parametrize("name", sorted(MODELS))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_dumped_is_the_models_dump(name, data):
    model = MODELS[name]
    fields = data.draw(_fields(model))
    expected = _model_dump(model, fields)
    if expected is ValidationError:
        with pytest.raises(ValidationError):
            dumped(model, **fields)
        return
    got = dumped(model, **fields)
    assert list(got.items()) == list(expected.items())
    assert [type(v) for v in got.values()] == [type(v) for v in expected.values()]
    salt = b"\x01" * chain.SALT_BYTES
    assert chain.canonical(got) == chain.canonical(expected)
    assert chain.commitment(salt, chain.canonical(got)) == chain.commitment(salt, chain.canonical(expected))


def test_the_write_paths_models_are_built_directly():
    """The bodies a candidate's decision records are all built without their model (else the
    property above would hold of nothing the write path does)."""
    for name in ("FactObserved", "FactReinforced", "FactSuperseded", "FactDisputed", "FactRetracted",
                 "FactNegated", "FactSplit"):
        assert dumped_module._maker(MODELS[name]) is not None, name


def _log(ops, direct: bool, monkeypatch) -> list[tuple]:
    counter, salts = itertools.count(), itertools.count()
    monkeypatch.setattr(record, "new_id", lambda: f"id-{next(counter):08d}")
    monkeypatch.setattr(eventlog, "new_id", lambda: f"ev-{next(counter):08d}")
    monkeypatch.setattr(chain, "new_salt", lambda: next(salts).to_bytes(chain.SALT_BYTES, "big"))
    monkeypatch.setattr(dumped_module, "_MAKERS", {} if direct else dict.fromkeys(MODELS.values()))
    clock = MovableClock()
    with tempfile.TemporaryDirectory() as tmp, Ledger(Path(tmp) / "l.db", clock=clock, create=True) as ledger:
        run(ledger, clock, ops)
        return ledger._conn.execute("SELECT * FROM events ORDER BY seq").fetchall()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(ops=st.lists(observation, min_size=4, max_size=30))
def test_the_log_is_the_same_byte_for_byte(ops, monkeypatch):
    with monkeypatch.context() as patch:
        direct = _log(ops, True, patch)
    with monkeypatch.context() as patch:
        through_models = _log(ops, False, patch)
    assert direct == through_models
