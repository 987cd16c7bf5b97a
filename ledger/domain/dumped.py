"""An event body built as the plain dict it is stored as, without a pydantic model on the way.

`dumped(Model, **fields)` is `Model(**fields).model_dump(mode="json", exclude_none=True)`: the same
dict (same keys, order and values, so the same canonical bytes and commitment), validated by the
same rules, at a fifth of the cost.  The write path builds a few bodies per candidate, and the
model's construction and dump were most of what a body cost.  Each field's check is derived from
the model's own annotations, and only for the shapes checked here exactly (text, a number, a flag,
a literal word, text with the model's after-validator); any value outside those shapes, a missing
or unknown field, or a model with a field of another kind goes through the model itself, so an
invalid body raises as it always did (tests/domain/test_dumped.py proves the two equal).
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Callable

from pydantic import AfterValidator, BaseModel
from pydantic_core import PydanticUndefined

_BAD = object()          # a value the fast check does not vouch for: the model decides
_FLOAT_INT = 2 ** 53     # ints up to this are floats exactly (pydantic's int -> float)

Check = Callable[[object], object]        # value -> the value the model holds, or _BAD


def _text(value):
    return value if type(value) is str else _BAD


def _int(value):
    return value if type(value) is int else _BAD


def _flag(value):
    return value if type(value) is bool else _BAD


def _number(value):
    kind = type(value)
    if kind is float:
        return value if math.isfinite(value) else _BAD
    if kind is int and -_FLOAT_INT <= value <= _FLOAT_INT:
        return float(value)
    return _BAD


def _word(words: frozenset) -> Check:
    def check(value):
        return value if type(value) is str and value in words else _BAD
    return check


def _after(check: Check, funcs: list) -> Check:
    def checked(value):
        value = check(value)
        if value is _BAD:
            return _BAD
        try:
            for func in funcs:
                value = func(value)
        except ValueError:
            return _BAD
        return value
    return checked


_PLAIN: dict = {str: _text, int: _int, bool: _flag, float: _number}


def _check_for(annotation, metadata: list) -> tuple[Check, bool] | None:
    """The check of one field and whether it may be None; None for a shape not handled here."""
    funcs = [m.func for m in metadata if isinstance(m, AfterValidator)]
    if len(funcs) != len(metadata):
        return None                               # a constraint of another kind
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *more = typing.get_args(annotation)
        return _check_for(base, list(more) + list(metadata))
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) != 1 or funcs:
            return None
        found = _check_for(members[0], [])
        return (found[0], True) if found is not None else None
    if origin is typing.Literal:
        words = typing.get_args(annotation)
        if not all(type(w) is str for w in words):
            return None
        check = _word(frozenset(words))
    elif annotation in _PLAIN:
        check = _PLAIN[annotation]
    else:
        return None
    return (_after(check, funcs) if funcs else check), False


def _maker(model: type[BaseModel]) -> Callable[[dict], dict | None] | None:
    """The fast builder of one model's bodies, or None when a field has a shape not handled."""
    if model.model_config.get("extra") != "forbid":
        return None
    plan = []
    for name, field in model.model_fields.items():
        found = _check_for(field.annotation, list(field.metadata))
        if found is None or field.default_factory is not None or field.alias is not None:
            return None
        check, nullable = found
        required = field.is_required()
        default = None if required or field.default is PydanticUndefined else field.default
        if default is not None and type(default) not in (str, int, float, bool):
            return None
        plan.append((name, check, nullable, required, default))
    names = frozenset(model.model_fields)

    def make(fields: dict) -> dict | None:
        if not names.issuperset(fields):
            return None                           # an unknown field: the model refuses it
        out = {}
        for name, check, nullable, required, default in plan:
            value = fields.get(name, _BAD)
            if value is _BAD:
                if required:
                    return None
                value = default
            elif value is None:
                if not nullable:
                    return None
            else:
                value = check(value)
                if value is _BAD:
                    return None
            if value is not None:
                out[name] = value
        return out

    return make


_MAKERS: dict[type, Callable | None] = {}


def dumped(model: type[BaseModel], /, **fields) -> dict:
    """`model(**fields).model_dump(mode="json", exclude_none=True)`, built directly where every
    field is of a shape checked here, else through the model (which raises on a bad body)."""
    make = _MAKERS.get(model, _BAD)
    if make is _BAD:
        make = _MAKERS[model] = _maker(model)
    if make is not None:
        data = make(fields)
        if data is not None:
            return data
    return model(**fields).model_dump(mode="json", exclude_none=True)
