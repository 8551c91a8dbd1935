"""Checking call arguments against a script function's parameter types.

The check is generated once per signature as straight-line Python, because it
runs on every call (the per-call budget is a few microseconds).
"""
from __future__ import annotations

import numpy as np

from ..ir.types import (
    AnyType,
    BoolType,
    ClassType,
    DictType,
    EnumType,
    FloatType,
    IntType,
    ListType,
    NoneType,
    OptionalType,
    StrType,
    TensorType,
    TupleType,
    Type,
    UnionType,
    VarTupleType,
)

ARRAY_TYPES = (np.ndarray, np.generic)


def value_has_type(value: object, t: Type) -> bool:
    """Whether a Python value is a value of IR type `t` (Python's numeric tower:
    a bool is an int, an int is acceptable as a float)."""
    if t == AnyType:
        return True
    if isinstance(t, TensorType):
        return isinstance(value, ARRAY_TYPES)
    if t == IntType:
        return isinstance(value, int)
    if t == FloatType:
        return isinstance(value, (float, int))
    if t == BoolType:
        return isinstance(value, bool)
    if t == StrType:
        return isinstance(value, str)
    if t == NoneType:
        return value is None
    if isinstance(t, OptionalType):
        return value is None or value_has_type(value, t.elem)
    if isinstance(t, UnionType):
        return any(value_has_type(value, o) for o in t.options)
    if isinstance(t, ListType):
        return isinstance(value, list) and all(value_has_type(v, t.elem) for v in value)
    if isinstance(t, DictType):
        return isinstance(value, dict) and all(
            value_has_type(k, t.key) and value_has_type(v, t.value) for k, v in value.items())
    if isinstance(t, TupleType):
        if t.py_class is not None:
            return isinstance(value, t.py_class)
        return isinstance(value, tuple) and len(value) == len(t.elems) and all(
            value_has_type(v, e) for v, e in zip(value, t.elems))
    if isinstance(t, VarTupleType):
        return isinstance(value, tuple) and all(value_has_type(v, t.elem) for v in value)
    if isinstance(t, (ClassType, EnumType)):
        return isinstance(value, t.py_class)
    return False


_FAST = {IntType: "int", StrType: "str", BoolType: "bool", FloatType: "(float, int)"}


def make_argument_checker(function_name: str, params: list[tuple[str, Type]]):
    """A function `check(*args)` raising TypeError for the first ill-typed argument."""
    lines = [f"def check({', '.join(f'a{i}' for i in range(len(params)))}):"]
    env = {"value_has_type": value_has_type, "ARRAY_TYPES": ARRAY_TYPES, "fail": _fail,
           "name": function_name}
    for i, (pname, t) in enumerate(params):
        env[f"t{i}"] = t
        if t == AnyType:
            continue
        if isinstance(t, TensorType):
            test = f"isinstance(a{i}, ARRAY_TYPES)"
        elif t in _FAST:
            test = f"isinstance(a{i}, {_FAST[t]})"
        else:
            test = f"value_has_type(a{i}, t{i})"
        lines.append(f"    if not {test}: fail(name, {pname!r}, t{i}, a{i})")
    lines.append("    return None")
    exec("\n".join(lines), env)
    return env["check"]


def _fail(function_name: str, param: str, expected: Type, found: object) -> None:
    raise TypeError(f"{function_name}() expected a value of type '{expected.annotation}' for "
                    f"argument '{param}' but instead found type '{type(found).__name__}'")
