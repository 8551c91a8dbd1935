"""Checking call arguments against a script function's parameter types.

The check is generated once per signature as straight-line Python, because it
runs on every call (the per-call budget is a few microseconds).

What a parameter accepts is what Python's numeric tower and NumPy's scalars give, as in
TorchScript: an `int` takes any integer (`np.int64` from `argmax`, `.sum()`, indexing), a
`float` any real number (`int`, `np.float32`, `np.int64`), a `bool` also `np.bool_`, a
`complex` any number; the same holds inside containers, and a `List` also takes a
tuple. Values pass unchanged: the code runs on the NumPy scalar or the tuple as the
Python function would (an `np.float32` promotes as NumPy 2 says, a tuple cannot be
appended to), and the executor's guards send a value that is not of the exact Python
type a specialization assumed to code that was profiled with it. A script class takes
its instances and those of subclasses that override none of its methods: its methods
are the ones the code calls, so an instance of a subclass with overrides raises
TypeError rather than giving another result than the Python function.
"""
from __future__ import annotations

import numpy as np

from ..interpreter.helpers import value_matches
from ..ir.types import (
    AnyType,
    BoolType,
    ClassType,
    ComplexType,
    DictType,
    FloatType,
    IntType,
    ListType,
    OptionalType,
    StrType,
    TensorType,
    TupleType,
    Type,
    UnionType,
    VarTupleType,
    qualified_name,
    union_options,
)

ARRAY_TYPES = (np.ndarray, np.generic)
INTEGERS = (int, np.integer)
REALS = (float, int, np.floating, np.integer)
BOOLS = (bool, np.bool_)
COMPLEXES = (complex, float, int, np.number)
_NUMBERS = {IntType: INTEGERS, FloatType: REALS, BoolType: BOOLS, ComplexType: COMPLEXES}


def _all_accepted(values, t: Type) -> bool:
    numbers = _NUMBERS.get(t)
    if numbers is not None:
        # A list of 20k ints checked one by one cost ~5 ms a call; its few distinct element
        # classes cost ~0.2 ms. (A subclass of an accepted class is an instance of it; any
        # other class is left to isinstance, which may still accept it by its __class__.)
        if all(issubclass(k, numbers) for k in set(map(type, values))):
            return True
        return all(isinstance(v, numbers) for v in values)
    return all(value_has_type(v, t) for v in values)


# Containers whose elements are checked with the call boundary's own rules.
_CONTAINERS = {
    ListType: lambda v, t: isinstance(v, (list, tuple)) and _all_accepted(v, t.elem),
    DictType: lambda v, t: isinstance(v, dict) and _all_accepted(v.keys(), t.key)
    and _all_accepted(v.values(), t.value),
    TupleType: lambda v, t: isinstance(v, t.py_class or tuple) and len(v) == len(t.elems)
    and all(map(value_has_type, v, t.elems)),
    VarTupleType: lambda v, t: isinstance(v, tuple) and _all_accepted(v, t.elem),
    OptionalType: lambda v, t: v is None or value_has_type(v, t.elem),
    UnionType: lambda v, t: any(value_has_type(v, o) for o in t.options),
}


def value_has_type(value: object, t: Type) -> bool:
    """Whether a Python value may be passed for a parameter of IR type `t` (see the
    module docstring); other types as the interpreter's isinstance says."""
    numbers = _NUMBERS.get(t)
    if numbers is not None:
        return isinstance(value, numbers)
    container = _CONTAINERS.get(type(t))
    if container is not None:
        return container(value, t)
    return value_matches(value, t)


_FAST = {IntType: "INTEGERS", StrType: "str", BoolType: "BOOLS", FloatType: "REALS"}


def make_argument_checker(function_name: str, params: list[tuple[str, Type]],
                          unannotated: frozenset[str] = frozenset()):
    """A function `check(*args)` raising TypeError for the first ill-typed argument.
    `unannotated`: the parameters that were taken as Tensor for want of an annotation."""
    lines = [f"def check({', '.join(f'a{i}' for i in range(len(params)))}):"]
    env = {"value_has_type": value_has_type, "ARRAY_TYPES": ARRAY_TYPES, "fail": _fail,
           "name": function_name, "INTEGERS": INTEGERS, "REALS": REALS, "BOOLS": BOOLS}
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
    expected_class = getattr(expected, "py_class", None)
    bases = [t.annotation for t in union_options(expected) if isinstance(t, ClassType)
             and isinstance(found, t.py_class)]
    if isinstance(expected_class, type) and expected_class is not type(found) and \
            qualified_name(expected_class) == qualified_name(type(found)):
        hint = (f": another class of the name {qualified_name(expected_class)}; a loaded or "
                "unpickled function takes the class rebuilt from its saved form (or the "
                "program's own, where it saves as the same record), and this one is not it")
    elif bases:
        hint = (f": a subclass of {bases[0]} that overrides its methods, which script code "
                f"calls (a {found_name}'s overrides would not be); annotate the parameter with "
                "a Union of the classes")
    raise TypeError(f"{function_name}() expected a value of type '{expected.annotation}' for "
                    f"argument '{param}' but instead found type '{found_name}'{hint}")
