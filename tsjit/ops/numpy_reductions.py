"""NumPy's reductions, scans, statistics, sorting and searching.

Each is one function and, where ndarray has the same method with the same parameters,
that method too (`np.sum(x, axis=0)` and `x.sum(axis=0)` are one op).  The result dtype
is what NumPy gives for a one-element array of the input dtype (so int32 sums are int64,
uint8 sums uint64, int means float64, exactly as NumPy decides them); the rank follows
from constant `axis`/`keepdims` values; a full reduction is a NumPy scalar.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir.types import (
    AnyType,
    NoneType,
    TensorType,
    TupleType,
    Type,
    VarTupleType,
    is_number,
)
from .numpy_rules import (
    ANYTHING,
    ARRAY,
    FLAG,
    INDEX,
    NUMBER,
    OPTIONAL_ARRAY,
    OPTIONAL_FLAG,
    OPTIONAL_NUMBER,
    SHAPE,
    UNKNOWN,
    CallTypes,
    ResultRule,
    define,
    dtype_of,
    dtype_or,
    element_count,
    flags,
    normalize_axes,
    probe_dtype,
    reduced_sizes,
    requested_dtype,
    sizes_of,
    tensor,
)
from .promotion import array_dtype, operand_dtype


def _result_dtype(fn: Callable, call: CallTypes, **fixed: object) -> np.dtype | None:
    """`fn`'s result dtype for the first argument's dtype and the constant dtype= argument."""
    d = operand_dtype(call.types[0])
    requested = requested_dtype(call) if "dtype" in call.slots else None
    if d is None or requested is UNKNOWN:
        return None
    if requested is not None:
        fixed["dtype"] = requested
    return probe_dtype(fn, np.dtype(d), **fixed)


def _const(call: CallTypes, name: str, default: object) -> object:
    return call.const(name) if name in call.slots else default


def reduction(fn: Callable) -> ResultRule:
    """Along `axis` (None: all), keeping reduced axes as 1 with keepdims; rank 0 is a
    NumPy scalar."""
    def result(call: CallTypes) -> Type:
        sizes = reduced_sizes(sizes_of(call.types[0]), _const(call, "axis", None),
                              _const(call, "keepdims", False))
        return tensor(_result_dtype(fn, call), sizes, None if sizes is None else len(sizes) > 0)
    return result


def along_axis(fn: Callable) -> ResultRule:
    """cumsum, sort: the input's sizes along an axis, flattened when axis is None."""
    def result(call: CallTypes) -> Type:
        sizes, axis = sizes_of(call.types[0]), call.const("axis")
        if axis is None:
            sizes = None if sizes is None else (element_count(sizes),)
        elif axis is UNKNOWN:
            sizes = None
        return tensor(_result_dtype(fn, call), sizes, True)
    return result


def _define_reduction(fn: Callable, signature: str, rule: Callable[[Callable], ResultRule], *,
                      method: bool = False, also: tuple = (), **options: object) -> None:
    """Register np.<fn> (and `also`, and ndarray.<fn> when `method`) with `rule(fn)`."""
    name = fn.__name__
    define(f"numpy::{name}", signature, rule(fn), f"np.{name}", python=(fn, *also),
           method=name if method else None, **options)


_SUM = "a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True"
_MAX = "a, axis=None, out=None, keepdims=False, initial=None, where=True"
_MEAN = "a, axis=None, dtype=None, out=None, keepdims=False, *, where=True"
_STD = "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True"
_ARG = "a, axis=None, out=None, *, keepdims=False"
_ANY = "a, axis=None, out=None, keepdims=False, *, where=True"
_MEDIAN = "a, axis=None, out=None, overwrite_input=False, keepdims=False"
_SCAN = "a, axis=None, dtype=None, out=None"

for _fn, _sig, _method in [
    (np.sum, _SUM, True), (np.prod, _SUM, True), (np.nansum, _SUM, False),
    (np.nanprod, _SUM, False), (np.mean, _MEAN, True), (np.nanmean, _MEAN, False),
    (np.std, _STD, True), (np.var, _STD, True), (np.nanstd, _STD, False),
    (np.nanvar, _STD, False), (np.max, _MAX, True), (np.min, _MAX, True),
    (np.nanmax, _MAX, False), (np.nanmin, _MAX, False), (np.argmax, _ARG, True),
    (np.argmin, _ARG, True), (np.nanargmax, _ARG, False), (np.nanargmin, _ARG, False),
    (np.any, _ANY, True), (np.all, _ANY, True), (np.median, _MEDIAN, False),
    (np.nanmedian, _MEDIAN, False), (np.ptp, "a, axis=None, out=None, keepdims=False", False),
    (np.count_nonzero, "a, axis=None, *, keepdims=False", False),
]:
    _also = {np.max: (np.amax,), np.min: (np.amin,)}.get(_fn, ())
    _define_reduction(_fn, _sig, reduction, method=_method, also=_also,
                      no_value=("initial",) if "initial" in _sig else ())

for _fn, _method in [(np.cumsum, True), (np.cumprod, True), (np.nancumsum, False),
                     (np.nancumprod, False)]:
    _define_reduction(_fn, _SCAN, along_axis, method=_method)


def _quantile_rule(fn: Callable) -> ResultRule:
    """A scalar q reduces like np.median; an array q adds its axes in front."""
    median_like = reduction(lambda a, **kw: fn(a, 0.5, **kw))

    def result(call: CallTypes) -> Type:
        return median_like(call) if is_number(call["q"]) else tensor()
    return result


_QUANTILE = ("a, q, axis=None, out=None, overwrite_input=False, method='linear', "
             "keepdims=False")
for _fn in (np.percentile, np.quantile, np.nanpercentile, np.nanquantile):
    _define_reduction(_fn, _QUANTILE, _quantile_rule)


def _average_result(call: CallTypes) -> Type:
    returned = flags(call, "returned")
    if returned is None:
        return AnyType
    mean = reduction(np.average)(call) if call["weights"] == NoneType else tensor()
    return TupleType((mean, tensor())) if returned[0] else mean


define("numpy::average", "a, axis=None, weights=None, returned=False, *, keepdims=False",
       _average_result, "np.average", kinds={"weights": OPTIONAL_ARRAY},
       python=(np.average,))


def _diff_result(call: CallTypes) -> Type:
    sizes, axis = sizes_of(call["a"]), call.const("axis")
    axes = None if sizes is None or axis is UNKNOWN else normalize_axes(axis, len(sizes))
    plain = call["prepend"] == call["append"] == NoneType
    return tensor(_result_dtype(np.diff, call) if plain else None,
                  None if axes is None else tuple(
                      None if d in axes else s for d, s in enumerate(sizes)), True)


define("numpy::diff", "a, n=1, axis=-1, prepend=None, append=None", _diff_result, "np.diff",
       kinds={"prepend": OPTIONAL_ARRAY, "append": OPTIONAL_ARRAY},
       no_value=("prepend", "append"), python=(np.diff,))


def _trace_result(call: CallTypes) -> Type:
    """A sum over a diagonal removes two axes."""
    sizes = sizes_of(call["a"])
    kept = None if sizes is None else (None,) * max(len(sizes) - 2, 0)
    return tensor(_result_dtype(np.trace, call), kept, None if kept is None else len(kept) > 0)


define("numpy::trace", "a, offset=0, axis1=0, axis2=1, dtype=None, out=None", _trace_result,
       "np.trace", python=(np.trace,), method="trace")


# -- sorting and searching --

_SORT = "a, axis=-1, kind=None, order=None, *, stable=None"
define("numpy::sort", _SORT, along_axis(np.sort), "np.sort", python=(np.sort,))
define("ndarray::sort", _SORT, lambda call: None, ".sort", writes=(0,))
define("numpy::argsort", _SORT, along_axis(np.argsort), "np.argsort", python=(np.argsort,),
       method="argsort")


def _unique_result(call: CallTypes) -> Type:
    extra = flags(call, "return_index", "return_inverse", "return_counts")
    if extra is None:
        return AnyType
    flat = call["axis"] == NoneType
    values = tensor(dtype_of(call["ar"]), (None,) if flat else None, True)
    return TupleType((values,) + (tensor(np.intp),) * sum(extra)) if any(extra) else values


define("numpy::unique", "ar, return_index=False, return_inverse=False, return_counts=False, "
       "axis=None, *, equal_nan=True, sorted=True", _unique_result, "np.unique",
       python=(np.unique,))

_POSITIONS = tensor(np.intp, (None,), True)
define("numpy::nonzero", "a", lambda call: VarTupleType(_POSITIONS), "np.nonzero",
       python=(np.nonzero,), method="nonzero")
define("numpy::flatnonzero", "a", lambda call: _POSITIONS, "np.flatnonzero",
       python=(np.flatnonzero,))


def _argwhere_result(call: CallTypes) -> Type:
    sizes = sizes_of(call["a"])
    return tensor(np.intp, None if sizes is None else (None, len(sizes)), True)


define("numpy::argwhere", "a", _argwhere_result, "np.argwhere", python=(np.argwhere,))


def _searchsorted_result(call: CallTypes) -> Type:
    sizes = sizes_of(call["v"])
    return tensor(np.intp, sizes, None if sizes is None else len(sizes) > 0)


define("numpy::searchsorted", "a, v, side='left', sorter=None", _searchsorted_result,
       "np.searchsorted", kinds={"sorter": OPTIONAL_ARRAY}, python=(np.searchsorted,),
       method="searchsorted")


def _bincount_result(call: CallTypes) -> Type:
    return tensor(np.intp if call["weights"] == NoneType else np.float64, (None,), True)


define("numpy::bincount", "x, /, weights=None, minlength=0", _bincount_result, "np.bincount",
       kinds={"weights": OPTIONAL_ARRAY}, python=(np.bincount,))


def _pairwise_dtype(fn: Callable, call: CallTypes) -> np.dtype | None:
    """`fn`'s result dtype for the dtypes of its first two arguments as arrays."""
    dtypes = [array_dtype(t) for t in call.types[:2]]
    # identity: `np.dtype("float64") == None` is True
    return None if any(d is None for d in dtypes) else probe_dtype(fn, *dtypes)


def _per_element(dtype: np.dtype | None, sizes_from: Type) -> TensorType:
    """A result per element of an argument: a NumPy scalar for a number or a 0-d array."""
    sizes = sizes_of(sizes_from)
    return tensor(dtype, sizes, None if sizes is None else sizes != ())


define("numpy::digitize", "x, bins, right=False",
       lambda call: _per_element(np.dtype(np.intp), call["x"]), "np.digitize",
       kinds={"bins": ARRAY, "right": FLAG}, python=(np.digitize,))


def _isin_result(call: CallTypes) -> Type:
    """Always an ndarray, 0-d for a number."""
    return tensor(np.bool_, sizes_of(call["element"]), True)


define("numpy::isin", "element, test_elements, assume_unique=False, invert=False, *, "
       "kind=None", _isin_result, "np.isin",
       kinds={"element": ARRAY, "test_elements": ARRAY, "assume_unique": FLAG, "invert": FLAG},
       python=(np.isin,))


def _unravel_result(call: CallTypes) -> Type:
    """One index array (or NumPy integer) per axis of `shape`."""
    each = _per_element(np.dtype(np.intp), call["indices"])
    shape = call["shape"]
    if isinstance(shape, TupleType):
        return TupleType((each,) * len(shape.elems))
    return TupleType((each,)) if is_number(shape) else VarTupleType(each)


define("numpy::unravel_index", "indices, shape, order='C'", _unravel_result,
       "np.unravel_index", kinds={"shape": SHAPE}, python=(np.unravel_index,))

_SET_KINDS = {"ar1": ARRAY, "ar2": ARRAY, "assume_unique": FLAG, "return_indices": FLAG}
_SET_OP = "ar1, ar2, assume_unique=False"
for _fn, _sig in [(np.union1d, "ar1, ar2"), (np.setdiff1d, _SET_OP),
                  (np.setxor1d, _SET_OP)]:
    define(f"numpy::{_fn.__name__}", _sig,
           lambda call, fn=_fn: tensor(_pairwise_dtype(fn, call), (None,), True),
           f"np.{_fn.__name__}", kinds=_SET_KINDS, python=(_fn,))


def _intersect_result(call: CallTypes) -> Type:
    values = tensor(_pairwise_dtype(np.intersect1d, call), (None,), True)
    indices = flags(call, "return_indices")
    if indices is None:
        return AnyType
    return TupleType((values, _POSITIONS, _POSITIONS)) if indices[0] else values


define("numpy::intersect1d", "ar1, ar2, assume_unique=False, return_indices=False",
       _intersect_result, "np.intersect1d", kinds=_SET_KINDS, python=(np.intersect1d,))


def _partitioned(dtype: np.dtype | None) -> ResultRule:
    """np.partition / np.argpartition: the input's sizes (flattened when axis is None)."""
    def result(call: CallTypes) -> Type:
        sizes, axis = sizes_of(call["a"]), call.const("axis")
        if axis is None:
            sizes = None if sizes is None else (element_count(sizes),)
        elif axis is UNKNOWN:
            sizes = None
        return tensor(dtype or dtype_of(call["a"]), sizes, True)
    return result


_PARTITION = "a, kth, axis=-1, kind='introselect', order=None"
define("numpy::partition", _PARTITION, _partitioned(None), "np.partition",
       kinds={"kth": ARRAY}, python=(np.partition,))
define("numpy::argpartition", _PARTITION, _partitioned(np.dtype(np.intp)), "np.argpartition",
       kinds={"kth": ARRAY}, python=(np.argpartition,))


def _histogram_result(call: CallTypes) -> Type:
    """(counts, bin edges): counts are intp unless weighted or a density."""
    plain = call["weights"] == NoneType and call.const("density") in (None, False)
    return TupleType((tensor(np.intp if plain else None, (None,), True),
                      tensor(None, (None,), True)))


define("numpy::histogram", "a, bins=10, range=None, density=None, weights=None",
       _histogram_result, "np.histogram",
       kinds={"bins": ANYTHING, "range": OPTIONAL_ARRAY, "density": OPTIONAL_FLAG,
              "weights": OPTIONAL_ARRAY}, python=(np.histogram,))


def _trapezoid_result(call: CallTypes) -> Type:
    """An integral along `axis`: that axis goes."""
    sizes = reduced_sizes(sizes_of(call["y"]), call.const("axis"), False)
    d = array_dtype(call["y"])
    plain = call["x"] == NoneType and is_number(call["dx"])
    return tensor(probe_dtype(np.trapezoid, d) if d is not None and plain else None, sizes,
                  None if sizes is None else len(sizes) > 0)


define("numpy::trapezoid", "y, x=None, dx=1.0, axis=-1", _trapezoid_result, "np.trapezoid",
       kinds={"x": OPTIONAL_ARRAY, "dx": NUMBER, "axis": INDEX}, python=(np.trapezoid,))

_COVARIANCE_KINDS = {"rowvar": FLAG, "bias": FLAG, "ddof": OPTIONAL_NUMBER,
                     "fweights": OPTIONAL_ARRAY, "aweights": OPTIONAL_ARRAY}
define("numpy::cov", "m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, "
       "aweights=None, *, dtype=None", lambda call: tensor(dtype_or(call, None), None, True),
       "np.cov", kinds={"y": OPTIONAL_ARRAY, **_COVARIANCE_KINDS}, python=(np.cov,))
define("numpy::corrcoef", "x, y=None, rowvar=True, *, dtype=None",
       lambda call: tensor(dtype_or(call, None), None, True), "np.corrcoef",
       kinds={"y": OPTIONAL_ARRAY, "rowvar": FLAG}, python=(np.corrcoef,))
