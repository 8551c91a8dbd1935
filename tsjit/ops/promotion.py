"""NumPy 2 dtype promotion over IR types, for the type rules and the fuser's casts.

NumPy itself is the authority: a ufunc's loop comes from `ufunc.resolve_dtypes`, which
implements NEP 50 exactly when a weak Python scalar is given as the class `int` or
`float` (Python bools are plain `bool` operands, the lowest kind, so strong and weak
agree).  Arrays, NumPy scalars and 0-d arrays are all strong.  Asking NumPy rather than
re-deriving its tables keeps the special loops right (sqrt of uint8 is float16, floor of
an int stays int, true division of ints is float64, comparisons are bool) and keeps them
right when NumPy changes.

The fuser uses `loop_dtypes` to insert casts: the inputs are cast to the loop's input
dtypes, the kernel op runs at the loop's output dtype.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ..ir.types import (
    BoolType,
    FloatType,
    IntType,
    ListType,
    TensorType,
    TupleType,
    Type,
    VarTupleType,
)

CLIP = np._core.umath.clip  # the ufunc behind np.clip (not exported under its own name)

# The fuser's kernel vocabulary (codegen/kernel_spec.py OP_SIGNATURES) as NumPy ufuncs:
# kernel op `k` computes `KERNEL_UFUNCS[k]` at the loop dtype.
KERNEL_UFUNCS: dict[str, np.ufunc] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
    "neg": np.negative, "pos": np.positive, "abs": np.absolute, "sign": np.sign,
    "square": np.square, "reciprocal": np.reciprocal,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or,
    "logical_xor": np.logical_xor, "logical_not": np.logical_not,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor, "invert": np.invert,
    "left_shift": np.left_shift, "right_shift": np.right_shift,
    "maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin,
    "clip": CLIP, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint,
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit,
    "copysign": np.copysign, "exp": np.exp, "expm1": np.expm1, "log": np.log,
    "log1p": np.log1p, "log2": np.log2, "log10": np.log10, "tanh": np.tanh, "sin": np.sin,
    "cos": np.cos, "sqrt": np.sqrt,
}

_PY_KIND_ORDER = (BoolType, IntType, FloatType)


def operand_dtype(t: Type) -> np.dtype | type | None:
    """How NumPy sees an operand of type `t`: its dtype (strong), `int`/`float` for a weak
    Python scalar, or None when the type does not tell.  A list or tuple of Python
    numbers becomes the strong dtype `np.asarray` gives it."""
    if isinstance(t, TensorType):
        return None if t.dtype is None else np.dtype(t.dtype)
    if t == BoolType:
        return np.dtype(bool)
    if t == IntType:
        return int
    if t == FloatType:
        return float
    leaf = _sequence_leaf_kind(t)
    return None if leaf is None else np.asarray(leaf(0)).dtype


def array_dtype(t: Type) -> np.dtype | None:
    """The dtype of `np.asarray(value)` for a value of type `t` (None when the type does not
    tell): a Python number is strong here (int64, float64, bool), as functions that make
    arrays of their arguments first see it, unlike a ufunc's weak operand."""
    d = operand_dtype(t)
    return np.asarray(d(0)).dtype if isinstance(d, type) else d


def _sequence_leaf_kind(t: Type) -> type | None:
    """bool, int or float: the widest Python number in a (nested) list or tuple type."""
    if isinstance(t, (ListType, VarTupleType)):
        elems: tuple[Type, ...] = (t.elem,)
    elif isinstance(t, TupleType) and t.elems:
        elems = t.elems
    else:
        return None
    widest = -1
    for e in elems:
        if e in _PY_KIND_ORDER:
            widest = max(widest, _PY_KIND_ORDER.index(e))
        else:
            inner = _sequence_leaf_kind(e)
            if inner is None:
                return None
            widest = max(widest, (bool, int, float).index(inner))
    return (bool, int, float)[widest]


@lru_cache(maxsize=4096)
def _resolve(ufunc: np.ufunc, operands: tuple, out: np.dtype | None) -> tuple[np.dtype, ...] | None:
    dtypes = operands + (None,) * ufunc.nout
    try:
        if out is None:
            return ufunc.resolve_dtypes(dtypes)
        return ufunc.resolve_dtypes(dtypes, signature=(None,) * ufunc.nin + (out,) * ufunc.nout)
    except TypeError:  # no loop for these dtypes: the call raises at run time
        return None


def ufunc_loop(ufunc: np.ufunc, operands: Sequence[Type], out: np.dtype | None = None
               ) -> tuple[tuple[np.dtype, ...], tuple[np.dtype, ...]] | None:
    """(input dtypes, output dtypes) of the loop NumPy runs for `ufunc(*operands)`, with
    `dtype=out` if given; None when an operand's dtype is unknown or no loop exists."""
    dtypes = tuple(operand_dtype(t) for t in operands)
    if any(d is None for d in dtypes):
        return None
    loop = _resolve(ufunc, dtypes, out)
    return None if loop is None else (loop[:ufunc.nin], loop[ufunc.nin:])


def common_dtype(operands: Sequence[Type]) -> np.dtype | None:
    """`np.result_type` of the operands with Python scalars weak (np.where's branches,
    np.concatenate's inputs), or None when a dtype is unknown."""
    dtypes = tuple(operand_dtype(t) for t in operands)
    return None if any(d is None for d in dtypes) else _result_type(dtypes)


@lru_cache(maxsize=1024)
def _result_type(dtypes: tuple) -> np.dtype:
    # np.result_type takes a weak Python scalar as a value of its class
    return np.result_type(*(d(0) if isinstance(d, type) else d for d in dtypes))


def loop_dtypes(kind: str | np.ufunc, operands: Sequence[Type]
                ) -> tuple[tuple[np.dtype, ...], np.dtype] | None:
    """The dtypes the fuser casts the operands of kernel op `kind` (or of a ufunc) to, and
    the dtype the op computes in.  `where` reads its condition by truthiness (bool)."""
    if kind == "where":
        result = common_dtype(operands[1:])
        return None if result is None else ((np.dtype(bool), result, result), result)
    ufunc = KERNEL_UFUNCS[kind] if isinstance(kind, str) else kind
    loop = ufunc_loop(ufunc, operands)
    return None if loop is None else (loop[0], loop[1][0])


def result_dtype(kind: str | np.ufunc, operands: Sequence[Type]) -> np.dtype | None:
    """The dtype NumPy gives `kind(*operands)` (a kernel op name or a ufunc), or None when
    it is not known from the types (or the call has no loop and raises)."""
    loop = loop_dtypes(kind, operands)
    return None if loop is None else loop[1]
