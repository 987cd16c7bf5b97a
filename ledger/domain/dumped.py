"""An event body built as the plain dict it is stored as, without a pydantic model on the way.

`dumped(Model, **fields)` is `Model(**fields).model_dump(mode="json", exclude_none=True)`: the same
dict (same keys, order and values, so the same canonical bytes and commitment), validated by the
same rules, for a third of the cost.  The write path builds a few bodies per candidate, and the
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

_BAD = object()          # a field not given
_FLOAT_INT = 2 ** 53     # ints up to this are floats exactly (pydantic's int -> float)

# Each shape's check, as the lines of the builder (`v` is the value, not None); a value that fails
# one returns None from the builder, and the model decides.
_SHAPES = {
    str: ["if type(v) is not str: return None"],
    int: ["if type(v) is not int: return None"],
    bool: ["if type(v) is not bool: return None"],
    float: ["if type(v) is not float:",
            "    if type(v) is not int or not -FLOAT_INT <= v <= FLOAT_INT: return None",
            "    v = float(v)",
            "elif not isfinite(v): return None"],
}


def _shape(annotation, metadata: list, names: dict) -> tuple[list[str], bool] | None:
    """The check of one field as lines of code, and whether it may be None; None for a shape not
    handled here.  `names`: the builder's namespace, given the literals' words and validators."""
    funcs = [m.func for m in metadata if isinstance(m, AfterValidator)]
    if len(funcs) != len(metadata):
        return None                               # a constraint of another kind
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *more = typing.get_args(annotation)
        return _shape(base, list(more) + list(metadata), names)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) != 1 or funcs:
            return None
        found = _shape(members[0], [], names)
        return (found[0], True) if found is not None else None
    if origin is typing.Literal:
        words = typing.get_args(annotation)
        if not all(type(w) is str for w in words):
            return None
        name = f"WORDS{len(names)}"
        names[name] = frozenset(words)
        lines = [f"if type(v) is not str or v not in {name}: return None"]
    elif annotation in _SHAPES:
        lines = list(_SHAPES[annotation])
    else:
        return None
    for func in funcs:
        name = f"AFTER{len(names)}"
        names[name] = func
        lines += ["try:", f"    v = {name}(v)", "except ValueError:", "    return None"]
    return lines, False


def _maker(model: type[BaseModel]) -> Callable[[dict], dict | None] | None:
    """The fast builder of one model's bodies (straight-line code, one block a field, in the
    model's field order), or None when a field has a shape not handled here."""
    if model.model_config.get("extra") != "forbid":
        return None
    names: dict = {"FLOAT_INT": _FLOAT_INT, "isfinite": math.isfinite, "BAD": _BAD,
                   "NAMES": frozenset(model.model_fields)}
    code = ["def make(fields):",
            "    if not NAMES.issuperset(fields): return None",   # an unknown field: the model refuses it
            "    get = fields.get",
            "    out = {}"]
    for name, field in model.model_fields.items():
        found = _shape(field.annotation, list(field.metadata), names)
        if found is None or field.default_factory is not None or field.alias is not None:
            return None
        lines, nullable = found
        required = field.is_required()
        default = None if required or field.default is PydanticUndefined else field.default
        if default is not None and type(default) not in (str, int, float, bool):
            return None
        code += [f"    v = get({name!r}, BAD)", "    if v is BAD:"]
        if required:
            code.append("        return None")
        elif default is not None:
            code.append(f"        out[{name!r}] = {default!r}")
        else:
            code.append("        pass")
        code += ["    elif v is None:", "        pass" if nullable else "        return None", "    else:"]
        code += ["        " + line for line in lines]
        code.append(f"        out[{name!r}] = v")
    code.append("    return out")
    exec("\n".join(code), names)                   # noqa: S102 - our own code, from the model's fields
    return names["make"]


_MAKERS: dict[type, Callable | None] = {}
_UNSET = object()


def dumped(model: type[BaseModel], /, **fields) -> dict:
    """`model(**fields).model_dump(mode="json", exclude_none=True)`, built directly where every
    field is of a shape checked here, else through the model (which raises on a bad body)."""
    make = _MAKERS.get(model, _UNSET)
    if make is _UNSET:
        make = _MAKERS[model] = _maker(model)
    if make is not None:
        data = make(fields)
        if data is not None:
            return data
    return model(**fields).model_dump(mode="json", exclude_none=True)
