"""NumPy's elementwise functions: every ufunc, np.where, np.clip, rounding and casts.

Every ufunc NumPy exports is registered from one rule, so np.exp, np.hypot and np.gcd
behave alike: Python scalars are weak (NEP 50), only-0-d operands give a NumPy scalar,
the result dtype is the loop NumPy resolves.  Ops the fuser can compile carry
`elementwise=True` and `attrs={"kernel": <KernelOp name>, "ufunc": <the ufunc>}`: the
kernel op computes the ufunc at its loop dtype, and `promotion.loop_dtypes(ufunc, types)`
gives the casts to insert in front of it.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir.types import (
    BoolType,
    FloatType,
    NoneType,
    StrType,
    TensorType,
    TupleType,
    Type,
    VarTupleType,
    is_number,
)
from .numpy_rules import (
    ARRAY,
    ARRAYS,
    NUMBER,
    OPTIONAL_ARRAY,
    OPTIONAL_NUMBER,
    STRING,
    UNKNOWN,
    CallTypes,
    Kind,
    broadcast,
    define,
    dtype_of,
    dtype_or,
    is_literal,
    probe_dtype,
    requested_dtype,
    sizes_of,
    tensor,
)
from .promotion import CLIP, KERNEL_UFUNCS, common_dtype, operand_dtype, ufunc_loop
from .registry import OpTypeError

KERNEL_OF: dict[np.ufunc, str] = {
    **{ufunc: kernel for kernel, ufunc in KERNEL_UFUNCS.items()},
    np.fabs: "abs",          # abs at the float loop NumPy casts to
    np.float_power: "pow",   # pow at float64
}

UFUNCS = sorted({u for u in vars(np).values() if isinstance(u, np.ufunc)
                 and u.signature is None and u is not np.isnat}, key=lambda u: u.__name__)


def _integer_only(ufunc: np.ufunc) -> bool:
    """No loop takes floats (bitwise ops, shifts, gcd): a Python float always fails."""
    return not any(c in "efdgFDG" for loop in ufunc.types for c in loop.split("->")[0])


def elementwise_type(ufunc: np.ufunc, operands: list[Type],
                     out: np.dtype | None | object = None) -> list[TensorType]:
    """Result types of `ufunc(*operands, dtype=out)`: the loop's dtypes, the broadcast
    sizes, and a NumPy scalar exactly when every operand is 0-d.  (Also the type rule for
    the Python operators on arrays: `a + b` is np.add.)"""
    loop = None if out is UNKNOWN else ufunc_loop(ufunc, operands, out)
    if loop is None and not any(isinstance(t, TensorType) for t in operands) and all(
            operand_dtype(t) is not None for t in operands):
        raise OpTypeError(f"np.{ufunc.__name__}() is not supported for "
                          f"{', '.join(t.annotation for t in operands)}")
    if FloatType in operands and _integer_only(ufunc):
        raise OpTypeError(f"np.{ufunc.__name__}() is not supported for floats")
    sizes = broadcast(*map(sizes_of, operands))
    ndarray = None if sizes is None else len(sizes) > 0
    return [tensor(None if loop is None else d, sizes, ndarray)
            for d in (loop[1] if loop else [None] * ufunc.nout)]


def _ufunc_rule(ufunc: np.ufunc) -> Callable[[CallTypes], Type]:
    def result(call: CallTypes) -> Type:
        outs = elementwise_type(ufunc, list(call.types[:ufunc.nin]), requested_dtype(call))
        return outs[0] if ufunc.nout == 1 else TupleType(tuple(outs))
    return result


def _ufunc_signature(ufunc: np.ufunc) -> str:
    inputs = ["x"] if ufunc.nin == 1 else [f"x{i + 1}" for i in range(ufunc.nin)]
    out = "None" if ufunc.nout == 1 else repr((None,) * ufunc.nout)
    return f"{', '.join(inputs)}, /, out={out}, *, dtype=None"


def _kernel_traits(ufunc: np.ufunc) -> dict:
    kernel = KERNEL_OF.get(ufunc)
    return {} if kernel is None else {
        "elementwise": True, "attrs": {"kernel": kernel, "ufunc": ufunc}}


for _ufunc in UFUNCS:
    define(f"numpy::{_ufunc.__name__}", _ufunc_signature(_ufunc), _ufunc_rule(_ufunc),
           f"np.{_ufunc.__name__}", python=(_ufunc,), **_kernel_traits(_ufunc))


# -- np.where --

def _where_result(call: CallTypes) -> Type:
    cond, x, y = call.types
    if (x == NoneType) != (y == NoneType):
        raise OpTypeError("np.where() takes either both or neither of x and y")
    if x == NoneType:   # np.where(c) is np.nonzero(c)
        return VarTupleType(tensor(np.intp, (None,), True))
    return tensor(common_dtype([x, y]), broadcast(*map(sizes_of, call.types)), True)


def _where_call(args: list[str], attrs: dict) -> str:
    """np.where(c, None, None) is an object array, not np.where(c): x and y are None
    together (the type rule checks), so a None x means the one-argument form."""
    cond, x, y = args
    if x == y == "None":
        return f"np.where({cond})"
    if is_literal(x) or is_literal(y):
        return f"np.where({cond}, {x}, {y})"
    return f"(np.where({cond}) if {x} is None else np.where({cond}, {x}, {y}))"


define("numpy::where", "condition, x=None, y=None, /", _where_result, _where_call,
       kinds={"x": OPTIONAL_ARRAY, "y": OPTIONAL_ARRAY}, python=(np.where,),
       elementwise=True, attrs={"kernel": "where"})


# -- np.clip and ndarray.clip --

def _clip_type(a: Type, lo: Type, hi: Type) -> Type:
    """np.clip runs positive/minimum/maximum/clip depending on which bounds are None, on
    `a` made an array first (so a Python number `a` is strong)."""
    if is_number(a):
        a = tensor(np.dtype(operand_dtype(a)), (), False)
    if lo == NoneType and hi == NoneType:
        ufunc, operands = np.positive, [a]
    elif lo == NoneType:
        ufunc, operands = np.minimum, [a, hi]
    elif hi == NoneType:
        ufunc, operands = np.maximum, [a, lo]
    else:
        ufunc, operands = CLIP, [a, lo, hi]
    return elementwise_type(ufunc, operands)[0]


def _np_clip_result(call: CallTypes) -> Type:
    a, a_min, a_max, _, lo, hi = call.types
    if (a_min, a_max) != (NoneType, NoneType) and (lo, hi) != (NoneType, NoneType):
        raise OpTypeError("np.clip() takes either a_min and a_max or min and max, not both")
    if (a_min, a_max) == (NoneType, NoneType):
        a_min, a_max = lo, hi
    return _clip_type(a, a_min, a_max)


def _first_given(primary: str, fallback: str) -> str:
    if fallback == "None":
        return primary
    if primary == "None":
        return fallback
    return f"({primary} if {primary} is not None else {fallback})"


def _np_clip_call(args: list[str], attrs: dict) -> str:
    a, a_min, a_max, _, lo, hi = args
    return f"np.clip({a}, {_first_given(a_min, lo)}, {_first_given(a_max, hi)})"


_BOUNDS = dict.fromkeys(("a_min", "a_max", "min", "max"), OPTIONAL_ARRAY)
_CLIP_TRAITS = {"elementwise": True, "attrs": {"kernel": "clip", "ufunc": CLIP}}
define("numpy::clip", "a, a_min=None, a_max=None, out=None, *, min=None, max=None",
       _np_clip_result, _np_clip_call, kinds=_BOUNDS, python=(np.clip,), **_CLIP_TRAITS)
define("ndarray::clip", "a, min=None, max=None, out=None",
       lambda call: _clip_type(*call.types[:3]), ".clip", kinds=_BOUNDS, **_CLIP_TRAITS)


# -- rounding, closeness, casts --

def _like_input(call: CallTypes, dtype: np.dtype | None) -> TensorType:
    """A result shaped like the first argument: a NumPy scalar for a Python number."""
    a = call.types[0]
    ndarray = False if is_number(a) else a.ndarray if isinstance(a, TensorType) else None
    return tensor(dtype, sizes_of(a), ndarray)


def _round_result(call: CallTypes) -> Type:
    d = operand_dtype(call.types[0])
    return _like_input(call, None if d is None else probe_dtype(np.round, np.dtype(d)))


define("numpy::round", "a, decimals=0, out=None", _round_result, "np.round",
       python=(np.round, np.around), method="round")


def _isclose_result(call: CallTypes) -> Type:
    sizes = broadcast(sizes_of(call["a"]), sizes_of(call["b"]))
    return tensor(np.bool_, sizes, None if sizes is None else len(sizes) > 0)


define("numpy::isclose", "a, b, rtol=1e-05, atol=1e-08, equal_nan=False", _isclose_result,
       "np.isclose", python=(np.isclose,))
define("numpy::allclose", "a, b, rtol=1e-05, atol=1e-08, equal_nan=False",
       lambda call: BoolType, "np.allclose", python=(np.allclose,))
define("numpy::array_equal", "a1, a2, equal_nan=False", lambda call: BoolType,
       "np.array_equal", python=(np.array_equal,))


def _cast_result(call: CallTypes) -> Type:
    a = call.types[0]
    return tensor(dtype_or(call, np.float64), sizes_of(a),   # astype(None) is float64
                  a.ndarray if isinstance(a, TensorType) else None)


_CAST_TRAITS = {"elementwise": True, "views": True,   # copy=False may return the input
                "attrs": {"kernel": "cast"}}
define("ndarray::astype", "a, dtype, order='K', casting='unsafe', subok=True, copy=True",
       _cast_result, ".astype", **_CAST_TRAITS)
define("numpy::astype", "x, dtype, /, *, copy=True", _cast_result, "np.astype",
       python=(np.astype,), **_CAST_TRAITS)

# np.float32(x), np.int64(x), ...: a NumPy scalar from a number or a string, a cast
# array from an array.
SCALAR_TYPES = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                np.uint32, np.uint64, np.float16, np.float32, np.float64)


def _scalar_rule(scalar_type: type) -> Callable[[CallTypes], Type]:
    def result(call: CallTypes) -> Type:
        value = call.types[0]
        sizes = sizes_of(value)
        if is_number(value) or value == StrType or sizes == ():
            return tensor(scalar_type, (), False)
        return tensor(scalar_type, sizes, None if sizes is None else True)
    return result


for _scalar in SCALAR_TYPES:
    _default = "False" if _scalar is np.bool_ else "0"
    define(f"numpy::{_scalar.__name__}", f"value={_default}, /",
           _scalar_rule(_scalar), f"np.{_scalar.__name__}",
           kinds={"value": Kind("a number, an array or a str",
                                lambda t: ARRAY.accepts(t) or STRING.accepts(t))},
           python=(_scalar,), views=True)   # np.float64(a) may return `a` itself


# -- elementwise functions that are not ufuncs --

def _float_like_input(fn: Callable) -> Callable[[CallTypes], Type]:
    """np.nan_to_num, np.sinc: the input's sizes, the dtype `fn` gives for the input's
    dtype, a NumPy scalar for a number or a 0-d array."""
    def result(call: CallTypes) -> Type:
        d = operand_dtype(call.types[0])
        out = _like_input(call, None if d is None else probe_dtype(fn, np.dtype(d)))
        return tensor(dtype_of(out), out.sizes, None if out.sizes is None else out.sizes != ())
    return result


# copy=False replaces in place: the op is taken to write x whatever copy is.
define("numpy::nan_to_num", "x, copy=True, nan=0.0, posinf=None, neginf=None",
       _float_like_input(np.nan_to_num), "np.nan_to_num",
       kinds={"nan": NUMBER, "posinf": OPTIONAL_NUMBER, "neginf": OPTIONAL_NUMBER},
       python=(np.nan_to_num,), writes=(0,), views=True)
define("numpy::sinc", "x", _float_like_input(np.sinc), "np.sinc", python=(np.sinc,))


def _interp_result(call: CallTypes) -> Type:
    """Float64 (complex for complex fp) at the points x: a NumPy scalar for one point."""
    sizes = sizes_of(call["x"])
    real = operand_dtype(call["fp"]) not in (None, "complex64", "complex128")
    return tensor(np.float64 if real else None, sizes,
                  None if sizes is None else sizes != ())


define("numpy::interp", "x, xp, fp, left=None, right=None, period=None", _interp_result,
       "np.interp", kinds=dict.fromkeys(("xp", "fp"), ARRAY) | dict.fromkeys(
           ("left", "right", "period"), OPTIONAL_NUMBER), python=(np.interp,))
define("numpy::select", "condlist, choicelist, default=0", lambda call: tensor(ndarray=True),
       "np.select", kinds={"condlist": ARRAYS, "choicelist": ARRAYS, "default": ARRAY},
       python=(np.select,))
