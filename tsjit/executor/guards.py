"""The run-time side of `prim::TypeCheck`: one generated Python predicate per guard.

A guard runs on every call of optimized code, so it is generated as straight-line Python
over exact identities: `type(x) is ndarray` (subclasses fail, they may override
operators), `x.dtype is <dtype>` (NumPy's builtin dtypes are singletons; an equal but
distinct dtype, such as a byte-swapped one, fails and takes the fallback, which is
correct, only slower), `x.ndim == r`; a Python scalar's exact type.  A failure is counted
and logged; the fallback it selects is the If's other branch.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from ..ir.graph import Node
from ..ir.types import BoolType, FloatType, IntType, TensorType, Type

log = logging.getLogger("tsjit.guards")

_PYTHON_TYPES = {IntType: "int", FloatType: "float", BoolType: "bool"}


def describe_value(value: object) -> str:
    if type(value) is np.ndarray:
        return f"ndarray({value.dtype}, rank {value.ndim})"
    if isinstance(value, np.generic):
        return f"np.{type(value).__name__}"
    return type(value).__name__


def make_type_check(types: tuple[Type, ...], on_failure: Callable[[], None],
                    label: str) -> Callable[..., bool]:
    """`check(*values) -> bool`: whether each value has its type in `types`; a False
    calls `on_failure()` first."""
    namespace: dict[str, object] = {"_ndarray": np.ndarray, "_generic": np.generic}
    conditions = []
    for i, t in enumerate(types):
        conditions.extend(_conditions(f"a{i}", t, i, namespace))
    params = ", ".join(f"a{i}" for i in range(len(types)))

    def failed(*values: object) -> bool:
        on_failure()
        if log.isEnabledFor(logging.DEBUG):
            log.debug("guard of %s failed: expected (%s), found (%s)", label,
                      ", ".join(map(str, types)), ", ".join(map(describe_value, values)))
        return False

    namespace["_failed"] = failed
    test = " and ".join(conditions) or "True"
    source = (f"def check({params}):\n    if {test}:\n        return True\n"
              f"    return _failed({params})\n")
    exec(compile(source, f"<tsjit guard {label}>", "exec"), namespace)
    return namespace["check"]


def _conditions(a: str, t: Type, i: int, namespace: dict) -> list[str]:
    if t in _PYTHON_TYPES:
        return [f"type({a}) is {_PYTHON_TYPES[t]}"]
    assert isinstance(t, TensorType), f"a guard cannot check {t}"
    if t.ndarray is False and t.dtype is not None:
        namespace[f"_scalar{i}"] = np.dtype(t.dtype).type
        return [f"type({a}) is _scalar{i}"]
    conditions = [f"type({a}) is _ndarray" if t.ndarray else
                  f"isinstance({a}, (_ndarray, _generic))"]
    if t.dtype is not None:
        namespace[f"_dtype{i}"] = np.dtype(t.dtype)
        conditions.append(f"{a}.dtype is _dtype{i}")
    if t.sizes is not None:
        conditions.append(f"{a}.ndim == {len(t.sizes)}")
        conditions.extend(f"{a}.shape[{d}] == {n}" for d, n in enumerate(t.sizes)
                          if n is not None)
    if t.layout == "C":
        conditions.append(f"{a}.flags.c_contiguous")
    elif t.layout == "F":
        conditions.append(f"{a}.flags.f_contiguous")
    return conditions


def lower_type_check(node: Node, context) -> Callable[..., bool]:
    return make_type_check(node.attrs["types"], context.count_guard_failure,
                           f"{context.name} #{context.next_label()}")
