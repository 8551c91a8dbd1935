"""NumPy's array constructors and dtype functions.

`dtype=` arguments are dtype values (np.float32, np.dtype('f4'), 'float32', float): the
front end types them `DType` (or str); a constant one refines the result dtype.
"""
from __future__ import annotations

import numpy as np

from ..ir.types import (
    AnyType,
    BoolType,
    DTypeType,
    FloatType,
    IntType,
    NoneType,
    StrType,
    TupleType,
    Type,
    is_number,
)
from .numpy_rules import (
    ARRAY,
    DTYPE,
    OPTIONAL_SHAPE,
    UNKNOWN,
    CallTypes,
    Kind,
    define,
    dtype_or,
    flags,
    shape_sizes,
    sizes_of,
    tensor,
)
from .promotion import operand_dtype


def _value_dtype(t: Type) -> np.dtype | None:
    """The dtype np.asarray gives a value of type t."""
    d = operand_dtype(t)
    return None if d is None else np.dtype(d)


# -- filled arrays --

def _filled(call: CallTypes) -> Type:
    fill = _value_dtype(call["fill_value"]) if "fill_value" in call.slots else np.float64
    return tensor(dtype_or(call, fill), shape_sizes(call["shape"], call.const("shape")), True)


for _fn in (np.zeros, np.ones, np.empty):
    define(f"numpy::{_fn.__name__}", "shape, dtype=None, order='C'", _filled,
           f"np.{_fn.__name__}", python=(_fn,))
define("numpy::full", "shape, fill_value, dtype=None, order='C'", _filled, "np.full",
       python=(np.full,))


def _like_result(call: CallTypes) -> Type:
    """zeros_like & co.: the prototype's dtype and sizes unless dtype=/shape= say else."""
    prototype = call.types[0]
    sizes = sizes_of(prototype) if call["shape"] == NoneType else shape_sizes(
        call["shape"], call.const("shape"))
    return tensor(dtype_or(call, _value_dtype(prototype)), sizes, True)


_LIKE = "dtype=None, order='K', subok=True, shape=None"
for _fn, _head in [(np.zeros_like, "a"), (np.ones_like, "a"), (np.empty_like, "prototype, /"),
                   (np.full_like, "a, fill_value")]:
    define(f"numpy::{_fn.__name__}", f"{_head}, {_LIKE}", _like_result, f"np.{_fn.__name__}",
           kinds={"shape": OPTIONAL_SHAPE}, python=(_fn,))


def _eye_result(call: CallTypes) -> Type:
    """np.eye(N, M) is N x M, M defaulting to N; np.identity(n) is n x n."""
    rows = call.const("N") if "N" in call.slots else call.const("n")
    cols = call.const("M") if "M" in call.slots else None
    rows = rows if type(rows) is int else None
    cols = rows if cols is None else cols if type(cols) is int else None
    return tensor(dtype_or(call, np.float64), (rows, cols), True)


_OPTIONAL_INDEX = Kind("an int or None", lambda t: t in (IntType, NoneType))
define("numpy::eye", "N, M=None, k=0, dtype=None, order='C'", _eye_result, "np.eye",
       kinds={"M": _OPTIONAL_INDEX},
       python=(np.eye,))
define("numpy::identity", "n, dtype=None", _eye_result, "np.identity", python=(np.identity,))


# -- ranges --

def _python_number_dtype(types: tuple[Type, ...]) -> np.dtype | None:
    """int64 for Python ints, float64 once a Python float is among them; None if an
    argument is not a Python number (NumPy scalars follow arange's own rules)."""
    given = [t for t in types if t != NoneType]
    if not all(t in (IntType, FloatType) for t in given):
        return None
    return np.dtype(np.float64 if FloatType in given else np.int64)


def _arange_result(call: CallTypes) -> Type:
    start, stop, step = (call.const(n) for n in ("start_or_stop", "stop", "step"))
    if stop is None:
        start, stop = 0, start
    bounds = (start, stop, step)
    length = len(range(*bounds)) if all(type(v) is int for v in bounds) and step else None
    return tensor(dtype_or(call, _python_number_dtype(call.types[:3])), (length,), True)


define("numpy::arange", "start_or_stop, /, stop=None, step=1, *, dtype=None", _arange_result,
       "np.arange", python=(np.arange,))


def _linspace_result(call: CallTypes) -> Type:
    retstep = flags(call, "retstep")
    if retstep is None:
        return AnyType
    num = call.const("num")
    scalar_ends = is_number(call["start"]) and is_number(call["stop"])
    samples = tensor(dtype_or(call, np.float64 if scalar_ends else None),
                     (num if type(num) is int else None,) if scalar_ends else None, True)
    step = tensor(np.float64 if scalar_ends else None, (), False)
    return TupleType((samples, step)) if retstep[0] else samples


define("numpy::linspace", "start, stop, num=50, endpoint=True, retstep=False, dtype=None, "
       "axis=0", _linspace_result, "np.linspace", python=(np.linspace,))


def _meshgrid_result(call: CallTypes) -> Type:
    xi = call.all_of("xi")
    ranks = {len(s) if s is not None else None for s in map(sizes_of, xi)}
    sizes = (None,) * len(xi) if ranks == {1} else None
    return TupleType(tuple(tensor(_value_dtype(t), sizes, True) for t in xi))


define("numpy::meshgrid", "*xi, copy=True, sparse=False, indexing='xy'", _meshgrid_result,
       "np.meshgrid", kinds={"xi": ARRAY}, python=(np.meshgrid,), views=True)


# -- from data --

def _array_result(call: CallTypes) -> Type:
    obj = call.types[0]
    sizes, ndmin = sizes_of(obj), call.const("ndmin") if "ndmin" in call.slots else 0
    if sizes is not None and ndmin is UNKNOWN:
        sizes = None
    elif sizes is not None and ndmin > len(sizes):
        sizes = (1,) * (ndmin - len(sizes)) + sizes
    return tensor(dtype_or(call, _value_dtype(obj)), sizes, True)


# copy=False / copy=None may return the argument itself.
define("numpy::array", "object, dtype=None, *, copy=True, order='K', subok=False, ndmin=0",
       _array_result, "np.array", python=(np.array,), views=True)
define("numpy::asarray", "a, dtype=None, order=None, *, copy=None", _array_result,
       "np.asarray", python=(np.asarray,), views=True)


# -- dtypes --

_DTYPE_OR_ARRAY = Kind("a dtype or an array", lambda t: DTYPE.accepts(t) or ARRAY.accepts(t))
define("numpy::dtype", "dtype, align=False, copy=False", lambda call: DTypeType, "np.dtype",
       python=(np.dtype,))
define("numpy::result_type", "*arrays_and_dtypes", lambda call: DTypeType, "np.result_type",
       kinds={"arrays_and_dtypes": _DTYPE_OR_ARRAY}, python=(np.result_type,))
define("numpy::promote_types", "type1, type2, /", lambda call: DTypeType, "np.promote_types",
       python=(np.promote_types,))
define("numpy::issubdtype", "arg1, arg2", lambda call: BoolType, "np.issubdtype",
       python=(np.issubdtype,))
define("numpy::can_cast", "from_, to, casting='safe'", lambda call: BoolType, "np.can_cast",
       kinds={"from_": _DTYPE_OR_ARRAY, "to": DTYPE}, python=(np.can_cast,))

# dtype attributes; np.dtype() makes them work on a scalar class (np.float32) too.
for _name, _type in [("name", StrType), ("kind", StrType), ("char", StrType),
                     ("itemsize", IntType)]:
    define(f"dtype::{_name}", "a", lambda call, t=_type: t, f"np.dtype({{0}}).{_name}",
           kinds={"a": DTYPE}, attributes=((DTypeType, _name),), may_raise=False)


def _logspace_result(call: CallTypes) -> Type:
    """float64 samples between Python-number exponents (base a Python number too)."""
    scalar_ends = is_number(call["start"]) and is_number(call["stop"])
    plain = scalar_ends and is_number(call["base"])
    return tensor(dtype_or(call, np.float64 if plain else None),
                  (None,) if scalar_ends else None, True)


define("numpy::logspace", "start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0",
       _logspace_result, "np.logspace", kinds={"base": ARRAY}, python=(np.logspace,))

_POSITIONS = tensor(np.intp, (None,), True)
for _fn in (np.tril_indices, np.triu_indices):
    define(f"numpy::{_fn.__name__}", "n, k=0, m=None",
           lambda call: TupleType((_POSITIONS, _POSITIONS)), f"np.{_fn.__name__}",
           kinds={"m": _OPTIONAL_INDEX}, python=(_fn,))
