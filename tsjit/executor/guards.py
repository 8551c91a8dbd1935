"""The run-time side of `prim::TypeCheck`: one generated Python predicate per guard.

A guard runs on every call of optimized code, so it is generated as straight-line Python
over exact identities where it can: `type(x) is ndarray` (subclasses fail, they may
override operators), `x.dtype is <dtype>` (NumPy's builtin dtypes are singletons), else
`x.dtype == <dtype>` (an unpickled array, e.g. from multiprocessing, has an equal dtype
object of its own: identity alone failed such arrays on every call, re-specializing
forever; a byte-swapped dtype is not equal and takes the fallback), `x.ndim == r`; a
Python scalar's exact type.  A failure is counted
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
    params = [f"a{i}" for i in range(len(types))]
    tests = [c for a, t in zip(params, types) for c in conditions(a, t, a, namespace)]

    def failed(*values: object) -> bool:
        on_failure()
        if log.isEnabledFor(logging.DEBUG):
            log.debug("guard of %s failed: expected (%s), found (%s)", label,
                      ", ".join(map(str, types)), ", ".join(map(describe_value, values)))
        return False

    namespace["_failed"] = failed
    source = (f"def check({', '.join(params)}):\n"
              f"    if {' and '.join(tests) or 'True'}:\n        return True\n"
              f"    return _failed({', '.join(params)})\n")
    exec(compile(source, f"<tsjit guard {label}>", "exec"), namespace)
    return namespace["check"]


def conditions(a: str, t: Type, key: str, namespace: dict) -> list[str]:
    """Python conditions that hold when the value named `a` has type `t`; the objects
    they compare with are added to `namespace` under names ending in `key`.  (The guard
    must never accept a value of another type: there `_ndarray` is np.ndarray and
    `_generic` np.generic.)"""
    if t in _PYTHON_TYPES:
        return [f"type({a}) is {_PYTHON_TYPES[t]}"]
    assert isinstance(t, TensorType), f"a guard cannot check {t}"
    if t.ndarray is False and t.dtype is not None:
        namespace[f"_scalar_{key}"] = np.dtype(t.dtype).type
        return [f"type({a}) is _scalar_{key}"]
    tests = [f"type({a}) is _ndarray" if t.ndarray else f"isinstance({a}, (_ndarray, _generic))"]
    if t.dtype is not None:
        namespace[f"_dtype_{key}"] = np.dtype(t.dtype)
        tests.append(f"({a}.dtype is _dtype_{key} or {a}.dtype == _dtype_{key})")
    if t.sizes is not None:
        tests.append(f"{a}.ndim == {len(t.sizes)}")
        tests.extend(f"{a}.shape[{d}] == {n}" for d, n in enumerate(t.sizes) if n is not None)
    if t.layout == "C":
        tests.append(f"{a}.flags.c_contiguous")
    elif t.layout == "F":
        tests.append(f"{a}.flags.f_contiguous")
    return tests


def lower_type_check(node: Node, context) -> Callable[..., bool]:
    return make_type_check(node.attrs["types"], context.count_guard_failure,
                           f"{context.name} #{context.next_label()}")
