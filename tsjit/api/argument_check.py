"""Checking call arguments against a script function's parameter types.

The check is generated once per signature as straight-line Python, because it
runs on every call (the per-call budget is a few microseconds).
"""
from __future__ import annotations

import numpy as np

from ..interpreter.helpers import value_matches
from ..ir.types import AnyType, BoolType, FloatType, IntType, StrType, TensorType, Type

ARRAY_TYPES = (np.ndarray, np.generic)


def value_has_type(value: object, t: Type) -> bool:
    """Whether a Python value may be passed for a parameter of IR type `t`: the
    interpreter's isinstance, plus Python's numeric tower (an int where a float is
    annotated, as PEP 484 allows)."""
    if t == FloatType:
        return isinstance(value, (float, int))
    return value_matches(value, t)


_FAST = {IntType: "int", StrType: "str", BoolType: "bool", FloatType: "(float, int)"}


def make_argument_checker(function_name: str, params: list[tuple[str, Type]],
                          unannotated: frozenset[str] = frozenset()):
    """A function `check(*args)` raising TypeError for the first ill-typed argument.
    `unannotated`: the parameters that were taken as Tensor for want of an annotation."""
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
        lines.append(f"    if not {test}: fail(name, {pname!r}, t{i}, a{i}, "
                     f"{pname in unannotated})")
    lines.append("    return None")
    exec("\n".join(lines), env)
    return env["check"]


def _fail(function_name: str, param: str, expected: Type, found: object,
          unannotated: bool) -> None:
    found_name = type(found).__name__
    hint = (f": '{param}' has no annotation, so it was taken as a Tensor; annotate it "
            f"({param}: {found_name})" if unannotated else "")
    raise TypeError(f"{function_name}() expected a value of type '{expected.annotation}' for "
                    f"argument '{param}' but instead found type '{found_name}'{hint}")
