"""What a value in native scalar code is at run time, and how LLVM registers carry it.

The IR's static types say too little for native code: a `Tensor` may be an array, a NumPy
scalar or (after a loop widened it) a Python float, and an `int` parameter may receive a
`bool`.  Native code is therefore compiled per *variant*: the exact run-time kinds of a
region's inputs (taken from the arguments, and checked by guards on every call), from
which inference derives the kind of every value inside.

Every kind is carried as a fixed tuple of LLVM values (`components`), so that control-flow
joins, boxing and unboxing treat all kinds alike: a Python int is one i64, an Optional int
an i1 "is None" flag and an i64, an array its object pointer, data pointer, sizes and
strides, a constant (None, a str) nothing at all.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from ...ir.types import BoolType, FloatType, IntType, TensorType, Type

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
DOUBLE = ir.DoubleType()
PTR = ir.PointerType()

# Element dtypes native code reads, writes and computes with (float16 and complex values
# stay with the interpreter).
SUPPORTED_DTYPES = frozenset(np.dtype(t) for t in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64"))


# NumPy's own descriptor object of each dtype: arrays normally point to it.
_CANONICAL = {dtype: dtype for dtype in SUPPORTED_DTYPES}


class Unsupported(Exception):
    """Native code cannot reproduce this program (or this variant of it) exactly; the
    message says why, and the region runs in the interpreter instead."""


class NType:
    """A run-time kind of value; subclasses are frozen dataclasses (hashable keys)."""

    def components(self) -> tuple[ir.Type, ...]:
        raise NotImplementedError


@dataclass(frozen=True)
class PyScalar(NType):
    """A Python int (64-bit in script code), float or bool: `kind` is "int", "float", "bool"."""

    kind: str

    def components(self) -> tuple[ir.Type, ...]:
        return ({"int": I64, "float": DOUBLE, "bool": I1}[self.kind],)

    def __str__(self) -> str:
        return self.kind


PY_INT, PY_FLOAT, PY_BOOL = PyScalar("int"), PyScalar("float"), PyScalar("bool")
_NUMBER_KINDS = {IntType: PY_INT, FloatType: PY_FLOAT, BoolType: PY_BOOL}


@dataclass(frozen=True)
class Const(NType):
    """A value known when compiling (None, a str message, a dtype): no run-time parts."""

    value: object

    def components(self) -> tuple[ir.Type, ...]:
        return ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Const) and type(other.value) is type(self.value) and (
            other.value is self.value or other.value == self.value)

    def __hash__(self) -> int:
        return hash((type(self.value), self.value))

    def __str__(self) -> str:
        return f"Const({self.value!r})"


NONE = Const(None)


@dataclass(frozen=True)
class Undefined(NType):
    """prim::Uninitialized: a value on a path that has already exited; never observed."""

    def components(self) -> tuple[ir.Type, ...]:
        return ()


UNDEFINED = Undefined()


@dataclass(frozen=True)
class OptionalScalar(NType):
    """None or a Python scalar: an i1 "is None" flag, then the scalar's components."""

    elem: PyScalar

    def components(self) -> tuple[ir.Type, ...]:
        return (I1, *self.elem.components())

    def __str__(self) -> str:
        return f"Optional[{self.elem}]"


@dataclass(frozen=True)
class Tagged(NType):
    """A Python number on some paths and a NumPy scalar on others: the accumulator of
    `s = 0.0; for i: s += x[i]` is a Python float until the loop has run once.  An i1 tag
    (True: the NumPy scalar) and both kinds' components; operations branch on the tag."""

    python: PyScalar
    numpy: NumpyScalar

    def components(self) -> tuple[ir.Type, ...]:
        return (I1, *self.python.components(), *self.numpy.components())

    def alternatives(self, parts: tuple[ir.Value, ...]) -> tuple[NValue, NValue]:
        n = len(self.python.components())
        return (NValue(self.python, parts[1:1 + n]), NValue(self.numpy, parts[1 + n:]))

    def __str__(self) -> str:
        return f"{self.python}|{self.numpy}"


@dataclass(frozen=True)
class NumpyScalar(NType):
    """A NumPy scalar (`np.float32(1.5)`), such as an array element read by `x[i]`."""

    dtype: np.dtype

    def components(self) -> tuple[ir.Type, ...]:
        return (register_type(self.dtype),)

    def __str__(self) -> str:
        return f"np.{self.dtype.name}"


@dataclass(frozen=True)
class Array(NType):
    """An exact `numpy.ndarray` of known dtype and rank.  `writeable`: the guard checked
    the WRITEABLE flag (only variants that write an array require it).  Components: the
    object, the data pointer, then `rank` sizes and `rank` strides (read once on entry:
    code in a region cannot reshape an array)."""

    dtype: np.dtype
    rank: int
    writeable: bool

    def components(self) -> tuple[ir.Type, ...]:
        return (PTR, PTR) + (I64,) * (2 * self.rank)

    def __str__(self) -> str:
        flag = ", writeable" if self.writeable else ""
        return f"Array({self.dtype.name}, rank={self.rank}{flag})"


@dataclass(frozen=True)
class Shape(NType):
    """`x.shape` of an array of rank `rank`: the sizes."""

    rank: int

    def components(self) -> tuple[ir.Type, ...]:
        return (I64,) * self.rank

    def __str__(self) -> str:
        return f"Shape({self.rank})"


@dataclass(frozen=True)
class PyList(NType):
    """A Python list of numbers that native code only reads (`xs[i]`, `len(xs)`, `for x in
    xs`): its object.  The guard checks every item's exact kind once per call."""

    elem: PyScalar

    def components(self) -> tuple[ir.Type, ...]:
        return (PTR,)

    def __str__(self) -> str:
        return f"List[{self.elem}]"


@dataclass(frozen=True)
class Tuple(NType):
    elems: tuple[NType, ...]

    def components(self) -> tuple[ir.Type, ...]:
        return tuple(c for e in self.elems for c in e.components())

    def __str__(self) -> str:
        return f"Tuple[{', '.join(map(str, self.elems))}]"


@dataclass(frozen=True)
class NValue:
    """A value of kind `kind`, carried as the LLVM values `parts` (see the module docstring)."""

    kind: NType
    parts: tuple[ir.Value, ...]

    @property
    def value(self) -> ir.Value:
        """The single register of a one-component kind (a scalar)."""
        (part,) = self.parts
        return part


def register_type(dtype: np.dtype) -> ir.Type:
    """The LLVM type an element of `dtype` is computed in (bool is i1)."""
    if dtype.kind == "b":
        return I1
    if dtype.kind in "iu":
        return ir.IntType(dtype.itemsize * 8)
    return {4: ir.FloatType(), 8: DOUBLE}[dtype.itemsize]


def join(a: NType, b: NType) -> NType:
    """The kind of a value that is `a` on one path and `b` on another (If results, loop-
    carried values); raises Unsupported when no single representation holds both."""
    if a == b or b == UNDEFINED:
        return a
    if a == UNDEFINED:
        return b
    for x, y in ((a, b), (b, a)):
        if x == NONE and isinstance(y, PyScalar):
            return OptionalScalar(y)
        if x == NONE and isinstance(y, OptionalScalar):
            return y
        if isinstance(x, OptionalScalar) and x.elem == y:
            return x
    for x, y in ((a, b), (b, a)):
        if isinstance(x, PyScalar) and isinstance(y, NumpyScalar):
            return Tagged(x, y)
        if isinstance(x, Tagged) and y in (x.python, x.numpy):
            return x
    if isinstance(a, Tuple) and isinstance(b, Tuple) and len(a.elems) == len(b.elems):
        return Tuple(tuple(join(x, y) for x, y in zip(a.elems, b.elems)))
    raise Unsupported(f"a value is {a} on one path and {b} on another")


def kind_of_type(t: Type) -> NType | None:
    """The kind that values of the (specialized) type `t` most likely have at run time:
    a Python number of its type, a writeable array or a NumPy scalar of its dtype; None
    when the type does not tell."""
    if t in _NUMBER_KINDS:
        return _NUMBER_KINDS[t]
    if not isinstance(t, TensorType) or t.dtype is None or t.ndarray is None:
        return None
    dtype = _CANONICAL.get(np.dtype(t.dtype))
    if dtype is None:
        return None
    if not t.ndarray:
        return NumpyScalar(dtype)
    return None if t.sizes is None else Array(dtype, len(t.sizes), True)


def _fits_int64(value: int) -> bool:
    return -(1 << 63) <= value < (1 << 63)


def list_kind(value: list, elem: PyScalar) -> PyList | None:
    """PyList(elem) when every item of `value` is exactly of kind `elem` (what its guard
    checks), else None."""
    return PyList(elem) if all(kind_of_value(v) == elem for v in value) else None


def kind_of_value(value: object) -> NType | None:
    """The kind of a run-time argument value, or None when native code cannot take it
    (a bignum int, a list, a subclass of ndarray, an unsupported dtype ...)."""
    cls = type(value)
    if cls is int:
        return PY_INT if _fits_int64(value) else None
    if cls is float:
        return PY_FLOAT
    if cls is bool:
        return PY_BOOL
    if value is None:
        return NONE
    if cls is np.ndarray:
        dtype = _CANONICAL.get(value.dtype)
        if dtype is not value.dtype:      # the guard compares the dtype object itself
            return None
        return Array(dtype, value.ndim, bool(value.flags.writeable))
    if isinstance(value, np.generic) and cls is value.dtype.type:
        dtype = _CANONICAL.get(value.dtype)
        return None if dtype is None else NumpyScalar(dtype)
    if cls is tuple:
        kinds = tuple(kind_of_value(v) for v in value)
        return None if None in kinds else Tuple(kinds)
    return None


def coerce(value: NValue, kind: NType) -> tuple[ir.Value, ...]:
    """The components of `value` as a value of the wider `kind` (see ntypes.join); only
    constants and existing registers, so it needs no instructions."""
    if value.kind == kind:
        return value.parts
    if isinstance(value.kind, Undefined):
        return tuple(ir.Constant(t, ir.Undefined) for t in kind.components())
    if isinstance(kind, OptionalScalar):
        if value.kind == kind.elem:
            return (ir.Constant(I1, 0), *value.parts)
        return (ir.Constant(I1, 1),
                *(ir.Constant(t, ir.Undefined) for t in kind.elem.components()))
    if isinstance(kind, Tagged):
        python, numpy = (tuple(ir.Constant(t, ir.Undefined) for t in k.components())
                         for k in (kind.python, kind.numpy))
        if value.kind == kind.python:
            return (ir.Constant(I1, 0), *value.parts, *numpy)
        return (ir.Constant(I1, 1), *python, *value.parts)
    if isinstance(kind, Tuple):
        parts, offset = [], 0
        for source, target in zip(value.kind.elems, kind.elems):
            n = len(source.components())
            parts += coerce(NValue(source, value.parts[offset:offset + n]), target)
            offset += n
        return tuple(parts)
    raise AssertionError(f"cannot represent {value.kind} as {kind}")
