"""The names generated code may use besides builtins: the runtime side of the op templates.

Templates in the operator registry are Python expressions over `np`, `math`, `_operator`
and the helpers defined here; `namespace()` gives each compiled graph a fresh globals dict
holding exactly these, to which the code generator adds the objects it binds (`_k0`, ...).
"""
from __future__ import annotations

import cmath
import collections
import functools
import math
import operator
from collections.abc import Iterator

import numpy as np

from ..ir.types import (
    AnyType,
    BoolType,
    ClassType,
    ComplexType,
    DictType,
    DTypeType,
    EnumType,
    FloatType,
    IntType,
    IterableType,
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


def _tensor_matches(value: object, t: TensorType) -> bool:
    """A NumPy value of the refinements `t` states (each None refinement accepts anything)."""
    if not isinstance(value, (np.ndarray, np.generic)):
        return False
    if t.dtype is not None and value.dtype.name != t.dtype:
        return False
    if t.ndarray is not None and isinstance(value, np.ndarray) != t.ndarray:
        return False
    if t.sizes is not None and (len(value.shape) != len(t.sizes) or any(
            s is not None and s != n for s, n in zip(t.sizes, value.shape))):
        return False
    if t.layout == "C":
        return bool(value.flags.c_contiguous)
    if t.layout == "F":
        return bool(value.flags.f_contiguous)
    return True


def _is_dtype(value: object) -> bool:
    return isinstance(value, np.dtype) or (
        isinstance(value, type) and issubclass(value, np.generic))


def _all_match(values, t: Type) -> bool:
    return all(value_matches(v, t) for v in values)


# Python's isinstance for the builtin types (so True is an int and np.float64(1) a float,
# as `isinstance` says in the eager program).
_SINGLETON_CHECKS = {
    IntType: lambda v: isinstance(v, int),
    FloatType: lambda v: isinstance(v, float),
    ComplexType: lambda v: isinstance(v, complex),
    BoolType: lambda v: isinstance(v, bool),
    StrType: lambda v: isinstance(v, str),
    NoneType: lambda v: v is None,
    AnyType: lambda v: True,
    DTypeType: _is_dtype,
}

_STRUCTURED_CHECKS = {
    TensorType: _tensor_matches,
    ListType: lambda v, t: isinstance(v, list) and _all_match(v, t.elem),
    DictType: lambda v, t: isinstance(v, dict) and _all_match(v.keys(), t.key)
    and _all_match(v.values(), t.value),
    TupleType: lambda v, t: isinstance(v, t.py_class or tuple) and len(v) == len(t.elems)
    and all(map(value_matches, v, t.elems)),
    VarTupleType: lambda v, t: isinstance(v, tuple) and _all_match(v, t.elem),
    OptionalType: lambda v, t: v is None or value_matches(v, t.elem),
    UnionType: lambda v, t: any(value_matches(v, o) for o in t.options),
    # the class, or a subclass that overrides none of its methods: script code calls the
    # methods compiled for the class (an override would not be called)
    ClassType: lambda v, t: type(v) is t.py_class or _keeps_methods(type(v), t.py_class),
    IterableType: lambda v, t: _iterable_matches(v, t),
    EnumType: lambda v, t: isinstance(v, t.py_class),
}


@functools.lru_cache(maxsize=256)
def _keeps_methods(cls: type, base: type) -> bool:
    """Whether `cls` derives from `base` and redefines none of the functions, properties
    and other descriptors `base` has (a dataclass's generated __eq__ is one), so that an
    instance of it runs the same code as one of `base`; a new __init__ does not count."""
    if not issubclass(cls, base):
        return False
    below = cls.__mro__[:cls.__mro__.index(base)]
    return not any(name != "__init__" and hasattr(base, name) and (
        callable(member) or hasattr(member, "__get__"))
        for k in below for name, member in vars(k).items())


def _iterable_matches(value: object, t: IterableType) -> bool:
    """A dict view or range of `t`'s elements, or an iterator of `t`'s kind (whose
    elements are not looked at: that would consume them)."""
    if t.kind == "iterator":
        return isinstance(value, Stepper)
    if t.kind in ("reversed", "iter"):      # the classes vary with what was iterated
        return isinstance(value, Iterator)
    if t.kind in IterableType.ITERATORS:
        return type(value).__name__ == t.kind
    return type(value).__name__ == t.kind and _all_match(value, t.elem)


def value_matches(value: object, t: Type) -> bool:
    """Whether a runtime value belongs to the IR type `t` (containers: every element)."""
    check = _SINGLETON_CHECKS.get(t)
    if check is not None:
        return check(value)
    structured = _STRUCTURED_CHECKS.get(type(t))
    return structured is not None and structured(value, t)


def isinstance_of(value: object, types: Type | tuple[Type, ...]) -> bool:
    """`prim::isinstance`: the value is of one of the types (one Type or a tuple of them);
    of a class, an instance of a subclass too, as the builtin says."""
    for t in (types,) if isinstance(types, Type) else types:
        if isinstance(value, t.py_class) if isinstance(t, ClassType) else value_matches(
                value, t):
            return True
    return False


class Stepper:
    """A loop's position in an iterable object (prim::IterStart): Python's own iterator,
    so the loop sees exactly what `for` over that object sees (a dict view raises
    RuntimeError after its dict changed size)."""

    __slots__ = ("iterator", "item")

    def __init__(self, iterable: object) -> None:
        self.iterator = iter(iterable)
        self.item = None

    def advance(self) -> bool:
        """prim::IterNext: step to the next element; False when there is none."""
        try:
            self.item = next(self.iterator)
        except StopIteration:
            return False
        return True


def namespace() -> dict[str, object]:
    """Fresh globals for one generated function."""
    return {"np": np, "math": math, "cmath": cmath, "_operator": operator,
            "_isinstance": isinstance_of, "_Stepper": Stepper,
            "_OrderedDict": collections.OrderedDict}


# Global names of generated code that local variables must never shadow.
RESERVED_NAMES = frozenset(namespace())
