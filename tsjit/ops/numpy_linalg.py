"""Products and np.linalg: dot, matmul, outer, inner, vdot, einsum, tensordot, kron, norm,
inv, solve, det.  Results have the promoted dtype of the operands; the rank follows
NumPy's rules for 1-D operands (a vector . vector product is a NumPy scalar).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir.types import AnyType, StrType, TupleType, Type
from .numpy_reductions import reduction
from .numpy_rules import (
    ANYTHING,
    ARRAY,
    FLAG,
    INDEX,
    OPTIONAL_NUMBER,
    STRING,
    CallTypes,
    Kind,
    ResultRule,
    define,
    flags,
    probe_dtype,
    rank_of,
    sizes_of,
    tensor,
)
from .promotion import common_dtype, operand_dtype, ufunc_loop


def _product(rank_rule: Callable[[int, int], int | None]) -> ResultRule:
    """A product of the first two arguments: their promoted dtype, the rank NumPy gives."""
    def result(call: CallTypes) -> Type:
        a, b = call.types[:2]
        ra, rb = rank_of(a), rank_of(b)
        rank = None if ra is None or rb is None else rank_rule(ra, rb)
        return tensor(common_dtype([a, b]), None if rank is None else (None,) * rank,
                      None if rank is None else rank > 0)
    return result


def _dot_rank(ra: int, rb: int) -> int:
    if 0 in (ra, rb):
        return ra + rb
    return ra + rb - 2


def _matmul_rank(ra: int, rb: int) -> int | None:
    if 0 in (ra, rb):
        return None   # matmul rejects scalars
    if ra == 1 or rb == 1:
        return ra + rb - 2
    return max(ra, rb)


define("numpy::dot", "a, b, out=None", _product(_dot_rank), "np.dot", python=(np.dot,),
       method="dot")
define("numpy::inner", "a, b, /", _product(_dot_rank), "np.inner", python=(np.inner,))
define("numpy::vdot", "a, b, /", _product(lambda ra, rb: 0), "np.vdot", python=(np.vdot,))
define("numpy::outer", "a, b, out=None", _product(lambda ra, rb: 2), "np.outer",
       python=(np.outer,))
define("numpy::kron", "a, b", _product(max), "np.kron", python=(np.kron,))


def _matmul_result(call: CallTypes) -> Type:
    shaped = _product(_matmul_rank)(call)
    loop = ufunc_loop(np.matmul, call.types[:2])
    return tensor(None if loop is None else loop[1][0], shaped.sizes, shaped.ndarray)


define("numpy::matmul", "x1, x2, /, out=None, *, dtype=None", _matmul_result, "np.matmul",
       python=(np.matmul,))
define("numpy::tensordot", "a, b, axes=2", _product(lambda ra, rb: None), "np.tensordot",
       kinds={"axes": ANYTHING}, python=(np.tensordot,))


def _einsum_result(call: CallTypes) -> Type:
    subscripts, *operands = call.all_of("operands")
    return tensor(common_dtype(operands) if subscripts == StrType else None)


define("numpy::einsum", "*operands, out=None, optimize=False", _einsum_result, "np.einsum",
       kinds={"operands": Kind("a subscripts str and arrays",
                               lambda t: t == StrType or ARRAY.accepts(t)),
              "optimize": ANYTHING},
       python=(np.einsum,))


# -- np.linalg --

def _linalg_dtype(fn: Callable, *args: Type) -> np.dtype | None:
    """The dtype np.linalg gives (ints become float64), probed on 1x1 matrices."""
    dtypes = [operand_dtype(t) for t in args]
    if any(d is None for d in dtypes):
        return None
    return probe_dtype(fn, *(np.dtype(d) for d in dtypes))


def _inv(a: np.ndarray) -> np.ndarray:
    return np.linalg.inv(a.reshape(1, 1))


def _det(a: np.ndarray) -> np.ndarray:
    return np.linalg.det(a.reshape(1, 1))


def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.linalg.solve(a.reshape(1, 1), b)


def _det_result(call: CallTypes) -> Type:
    rank = rank_of(call["a"])
    sizes = None if rank is None else (None,) * (rank - 2)
    return tensor(_linalg_dtype(_det, call["a"]), sizes, None if sizes is None else rank > 2)


define("numpy::linalg_norm", "x, ord=None, axis=None, keepdims=False",
       reduction(np.linalg.norm), "np.linalg.norm",
       kinds={"ord": Kind("a number, a str or None",
                          lambda t: t == StrType or OPTIONAL_NUMBER.accepts(t))},
       python=(np.linalg.norm,))
define("numpy::linalg_inv", "a",
       lambda call: tensor(_linalg_dtype(_inv, call["a"]), sizes_of(call["a"]), True),
       "np.linalg.inv", python=(np.linalg.inv,))
define("numpy::linalg_det", "a", _det_result, "np.linalg.det", python=(np.linalg.det,))
define("numpy::linalg_solve", "a, b",
       lambda call: tensor(_linalg_dtype(_solve, call["a"], call["b"]), sizes_of(call["b"]),
                           True),
       "np.linalg.solve", python=(np.linalg.solve,))


def _float_dtype(t: Type) -> np.dtype | None:
    dtype = operand_dtype(t)
    return dtype if dtype is not None and np.dtype(dtype).kind in "fc" else None


def _square_result(fn: Callable) -> ResultRule:
    """np.linalg functions giving one matrix (or a stack) shaped as their argument, in the
    dtype `fn` gives (ints become float64), probed on a 1x1 matrix."""
    def result(call: CallTypes) -> Type:
        return tensor(_linalg_dtype(lambda a: fn(a.reshape(1, 1)), call["a"]),
                      sizes_of(call["a"]), True)
    return result


define("numpy::linalg_cholesky", "a, /", _square_result(np.linalg.cholesky),
       "np.linalg.cholesky", python=(np.linalg.cholesky,))
define("numpy::linalg_pinv", "a, rcond=None, hermitian=False", _square_result(np.linalg.pinv),
       "np.linalg.pinv", kinds={"rcond": OPTIONAL_NUMBER, "hermitian": FLAG},
       python=(np.linalg.pinv,))
define("numpy::linalg_matrix_power", "a, n",       # ints stay ints unless n < 0
       lambda call: tensor(_float_dtype(call["a"]), sizes_of(call["a"]), True),
       "np.linalg.matrix_power", python=(np.linalg.matrix_power,))


def _eigvals_result(call: CallTypes) -> Type:
    rank = rank_of(call["a"])
    sizes = None if rank is None else (None,) * (rank - 1)
    # real or complex as the eigenvalues come out: decided by the values, not the dtype
    return tensor(None, sizes, True)


define("numpy::linalg_eigvals", "a", _eigvals_result, "np.linalg.eigvals",
       python=(np.linalg.eigvals,))


# Decompositions: a tuple of arrays (NumPy's result is a namedtuple, SVDResult and the like,
# which passes through as it is), each of the rank NumPy gives for an input of rank r.

def _parts_dtypes(fn: Callable, t: Type) -> tuple[np.dtype | None, ...] | None:
    """The dtypes of `fn`'s result arrays for a 1x1 matrix of t's dtype."""
    dtype = operand_dtype(t)
    if dtype is None:
        return None
    try:
        with np.errstate(all="ignore"):
            parts = fn(np.ones((1, 1), np.dtype(dtype)))
    except (TypeError, ValueError, np.linalg.LinAlgError):
        return None
    return tuple(np.asarray(p).dtype for p in parts)


def _parts(fn: Callable, t: Type, rank_offsets: tuple[int, ...]) -> Type:
    """A tuple of arrays of ranks r + offset (NumPy scalars where that is 0)."""
    dtypes = _parts_dtypes(fn, t) or (None,) * len(rank_offsets)
    r = rank_of(t)
    return TupleType(tuple(
        tensor(d, None if r is None else (None,) * (r + k), None if r is None else r + k > 0)
        for d, k in zip(dtypes, rank_offsets)))


def _svd_result(call: CallTypes) -> Type:
    computes = flags(call, "compute_uv")
    if computes is None:                # decided when the call runs
        return AnyType
    if not computes[0]:
        return tensor(None, None, True)
    return _parts(np.linalg.svd, call["a"], (0, -1, 0))


def _qr_result(call: CallTypes) -> Type:
    mode = call.const("mode")
    if mode not in ("reduced", "complete", "r", "raw"):     # NumPy checks it when it runs
        return AnyType
    if mode == "r":
        return tensor(None, None, True)
    return _parts(lambda a: np.linalg.qr(a, mode), call["a"], (0, -1 if mode == "raw" else 0))


define("numpy::linalg_svd", "a, full_matrices=True, compute_uv=True, hermitian=False",
       _svd_result, "np.linalg.svd",
       kinds=dict.fromkeys(("full_matrices", "compute_uv", "hermitian"), FLAG),
       python=(np.linalg.svd,))
define("numpy::linalg_qr", "a, mode='reduced'", _qr_result, "np.linalg.qr",
       python=(np.linalg.qr,))
define("numpy::linalg_eigh", "a, UPLO='L'",
       lambda call: _parts(np.linalg.eigh, call["a"], (-1, 0)), "np.linalg.eigh",
       kinds={"UPLO": STRING}, python=(np.linalg.eigh,))
define("numpy::linalg_slogdet", "a",
       lambda call: _parts(np.linalg.slogdet, call["a"], (-2, -2)), "np.linalg.slogdet",
       python=(np.linalg.slogdet,))


# -- vector products, convolution, polynomials --

def _array_dtypes(fn: Callable, *args: Type) -> np.dtype | None:
    """`fn`'s result dtype for its arguments made arrays (a Python number is strong)."""
    dtypes = [operand_dtype(t) for t in args]
    if any(d is None for d in dtypes):
        return None
    return probe_dtype(fn, *(np.asarray(d(0)).dtype if isinstance(d, type) else np.dtype(d)
                             for d in dtypes))


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.cross(np.resize(a, 3), np.resize(b, 3))


define("numpy::cross", "a, b, axisa=-1, axisb=-1, axisc=-1, axis=None",
       lambda call: tensor(_array_dtypes(_cross, call["a"], call["b"])), "np.cross",
       kinds=dict.fromkeys(("axisa", "axisb", "axisc"), INDEX), python=(np.cross,))
for _fn in (np.convolve, np.correlate):
    define(f"numpy::{_fn.__name__}", "a, v, mode='full'" if _fn is np.convolve
           else "a, v, mode='valid'",
           lambda call, fn=_fn: tensor(_array_dtypes(fn, call["a"], call["v"]), (None,), True),
           f"np.{_fn.__name__}", python=(_fn,))
define("numpy::polyval", "p, x", lambda call: tensor(ndarray=True if rank_of(call["x"]) else None),
       "np.polyval", kinds={"p": ARRAY}, python=(np.polyval,))
