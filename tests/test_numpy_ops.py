"""The NumPy op tables: every op's template runs the same NumPy call as eager code, its type
rule accepts that call and describes the actual result (refined types included), its
effects (views, writes) match what NumPy does, its parameters match NumPy's, and dtype
promotion agrees with NumPy on every dtype pair."""
from __future__ import annotations

import inspect
import itertools

import numpy as np
import pytest

from tsjit.interpreter.rendering import Renderer
from tsjit.ir.types import (
    TENSOR,
    AnyType,
    BoolType,
    DTypeType,
    FloatType,
    IntType,
    ListType,
    NoneType,
    StrType,
    TensorType,
    TupleType,
    Type,
    VarTupleType,
    is_subtype,
)
from tsjit.ops import numpy_elementwise
from tsjit.ops.numpy_rules import CONSTANTS
from tsjit.ops.promotion import KERNEL_UFUNCS, loop_dtypes, result_dtype
from tsjit.ops.registry import (
    NO_DEFAULT,
    OPS,
    OpDef,
    OpTypeError,
    lookup_attribute,
    lookup_method,
    lookup_python,
)

NUMPY_OPS = {name: op for name, op in OPS.items()
             if name.split("::")[0] in ("numpy", "ndarray", "dtype")}

# -- sample values --

F2 = np.arange(6.0).reshape(2, 3) - 2.5
F32 = F2.astype(np.float32)
I2 = (np.arange(6, dtype=np.int32) - 2).reshape(2, 3)
V = np.array([3.0, -1.0, 2.0, 0.5])
IV = np.array([4, -1, 7, 2])
U8 = np.array([0, 7, 200, 255], dtype=np.uint8)
M = F2 > 0
SQ = np.array([[4.0, 1.0], [2.0, 3.0]])
Z = np.array(2.5)
S32 = np.float32(1.5)


# -- a tiny front end and interpreter --

def type_of(value: object) -> Type:
    """The refined IR type of a runtime value, as profiling would record it."""
    if isinstance(value, np.ndarray):
        return TensorType(value.dtype.name, value.shape, None, True)
    if isinstance(value, np.generic):
        return TensorType(value.dtype.name, (), None, False)
    if isinstance(value, (np.dtype, type)):
        return DTypeType
    if isinstance(value, tuple):
        return TupleType(tuple(map(type_of, value)))
    if isinstance(value, list):
        return ListType(type_of(value[0]) if value else AnyType)
    return {bool: BoolType, int: IntType, float: FloatType, str: StrType,
            type(None): NoneType}[type(value)]


def unrefined(t: Type) -> Type:
    if isinstance(t, TensorType):
        return TENSOR
    if isinstance(t, TupleType):
        return TupleType(tuple(map(unrefined, t.elems)))
    if isinstance(t, ListType):
        return ListType(unrefined(t.elem))
    return t


def bind(op: OpDef, args: tuple, kwargs: dict) -> list:
    """The op's inputs in signature order, defaults filled in (as the front end binds)."""
    positional, inputs = list(args), []
    for p in op.params:
        if p.variadic:
            inputs.extend(positional)
            positional = []
        elif positional and not p.kwonly:
            inputs.append(positional.pop(0))
        elif p.name in kwargs:
            inputs.append(kwargs[p.name])
        else:
            assert p.default is not NO_DEFAULT, f"{op.name}: missing {p.name}"
            inputs.append(p.default)
    assert not positional, f"{op.name}: too many arguments"
    return inputs


def run_template(op: OpDef, inputs: list, inline_constants: bool) -> object:
    """Evaluate the op's template on inputs held in variables, or with the non-array
    inputs written as the interpreter writes constants (literals inline)."""
    renderer = Renderer()
    names = [renderer.operand(v) if inline_constants and not isinstance(v, (np.ndarray, list))
             else f"a{i}" for i, v in enumerate(inputs)]
    namespace = {"np": np, **renderer.bound, **{f"a{i}": v for i, v in enumerate(inputs)}}
    with np.errstate(all="ignore"):
        return eval(op.emit_python(names, {}), namespace)


def infer(op: OpDef, inputs: list, refined: bool) -> Type | None:
    types = [type_of(v) for v in inputs]
    if not refined:
        return op.infer([unrefined(t) for t in types], {})
    constants = {i: v for i, v in enumerate(inputs) if not isinstance(v, (np.ndarray, list))}
    return op.infer(types, {CONSTANTS: constants})


def assert_same(actual: object, expected: object) -> None:
    assert type(actual) is type(expected), (actual, expected)
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e)
    elif isinstance(expected, (np.ndarray, np.generic)):
        assert actual.dtype == expected.dtype and np.shape(actual) == np.shape(expected)
        np.testing.assert_array_equal(actual, expected)
    else:
        assert actual == expected or (actual != actual and expected != expected)


def copies(values: tuple) -> tuple:
    return tuple(v.copy() if isinstance(v, np.ndarray) else v for v in values)


# -- the calls every op is tested on --

def _ufunc_operands(ufunc: np.ufunc) -> tuple:
    """Sample operands for one of the ufunc's float64/int64/bool loops (float64 first)."""
    loops = [t.split("->")[0] for t in ufunc.types if set(t.split("->")[0]) <= set("dlq?")]
    loop = next((t for t in loops if "d" in t), loops[0])
    data = {"d": (V, V[::-1] + 0.25), "l": (IV, IV[::-1] % 5 + 1), "?": (V > 0, V < 1)}
    return tuple(data["l" if c == "q" else c][i] for i, c in enumerate(loop))


def _ufunc_cases() -> list:
    cases = []
    for ufunc in numpy_elementwise.UFUNCS:
        operands = _ufunc_operands(ufunc)
        cases.append((ufunc, operands, {}))
        cases.append((ufunc, tuple(np.array(a[1]) if i == 0 else a[0].item() for i, a in
                                   enumerate(operands)), {}))   # 0-d with a Python scalar
        if ufunc.nin == 2:
            cases.append((ufunc, (operands[0][:, None], operands[1]), {}))   # broadcast
    cases.append((np.add, (I2, 7), {"dtype": np.float32}))
    cases.append((np.sqrt, (U8,), {}))
    cases.append((np.true_divide, (I2, 2), {}))
    cases.append((np.less, (F32, 0.5), {}))
    return cases


CASES = _ufunc_cases() + [
    # selection, rounding, casts
    (np.where, (M, F2, 0), {}), (np.where, (M,), {}), (np.where, (True, 1.0, 0.0), {}),
    (np.clip, (I2, -1.5, 1.5), {}), (np.clip, (F32, None, 0.5), {}),
    (np.clip, (U8,), {"min": 3, "max": 100}), (np.clip, (F2, None, None), {}),
    (".clip", (F2, 0.0), {}), (".clip", (I2,), {"max": 1}),
    (np.round, (F2 * 3.3, 1), {}), (np.round, (2.5,), {}), (".round", (F32,), {}),
    (np.around, (S32,), {}),
    (np.isclose, (F2, F2 + 1e-9), {}), (np.allclose, (V, V), {"atol": 0.0}),
    (np.array_equal, (V, V), {}),
    (".astype", (F2, np.int32), {}), (".astype", (S32, "float64"), {}),
    (".astype", (I2, float), {"copy": False}),
    (".astype", (I2, None), {}), (np.astype, (U8, np.int8), {}),
    *((t, (v,), {}) for t in numpy_elementwise.SCALAR_TYPES for v in (3, F2[:1], Z)),
    (np.float32, ("1.5",), {}), (np.int64, (), {}),
    # reductions
    (np.sum, (F2,), {}), (np.sum, (I2,), {"axis": 0, "keepdims": True}),
    (np.sum, (U8,), {"dtype": np.float32}), (np.sum, (F2,), {"axis": (0, 1)}),
    (np.sum, (F2, 1), {"initial": 10.0}), (".sum", (M,), {"axis": -1}),
    (np.prod, (I2,), {}), (".prod", (U8,), {"axis": 0}), (np.nansum, (F2,), {}),
    (np.nanprod, (F2,), {"axis": 1}), (np.mean, (I2,), {"axis": 1}), (".mean", (F32,), {}),
    (np.nanmean, (F2,), {"keepdims": True}), (np.std, (F2,), {"ddof": 1}),
    (".std", (I2,), {"axis": 0}), (np.var, (F32,), {"axis": -1, "keepdims": True}),
    (".var", (U8,), {}), (np.nanstd, (F2,), {}), (np.nanvar, (F2,), {"axis": 0}),
    (np.max, (I2,), {}), (np.amax, (F2,), {"axis": 1}), (".max", (U8,), {"initial": 3}),
    (np.min, (F32,), {"axis": 0}), (np.amin, (I2,), {}), (".min", (Z,), {}),
    (np.nanmax, (F2,), {}), (np.nanmin, (F2,), {"axis": 1}), (np.argmax, (F2,), {}),
    (np.argmin, (I2,), {"axis": 1}), (".argmax", (F2,), {"axis": -1, "keepdims": True}),
    (".argmin", (V,), {}), (np.nanargmax, (F2,), {"axis": 0}), (np.nanargmin, (F2,), {}),
    (np.any, (M,), {"axis": 1}), (np.all, (F2,), {}), (".any", (I2,), {}),
    (".all", (M,), {"axis": 0, "keepdims": True}), (np.median, (I2,), {"axis": 0}),
    (np.nanmedian, (F2,), {}), (np.ptp, (I2,), {"axis": 1}), (np.count_nonzero, (F2,), {}),
    (np.count_nonzero, (M,), {"axis": 0}), (np.cumsum, (U8,), {}),
    (np.cumsum, (I2,), {"axis": 1}), (".cumsum", (F32,), {"dtype": np.float64}),
    (np.cumprod, (I2,), {"axis": 0}), (".cumprod", (V,), {}), (np.nancumsum, (F2,), {}),
    (np.nancumprod, (F2,), {"axis": 1}), (np.percentile, (F2, 25), {}),
    (np.quantile, (I2, [0.25, 0.5]), {"axis": 1}), (np.nanpercentile, (F2, 50), {}),
    (np.nanquantile, (F2, 0.5), {"axis": 0}), (np.average, (F2,), {}),
    (np.average, (F2,), {"axis": 1, "weights": V[:3], "returned": True}),
    (np.diff, (IV,), {}), (np.diff, (F2,), {"axis": 0, "prepend": 0.0}),
    (np.trace, (SQ,), {}), (".trace", (I2,), {"offset": 1}),
    # sorting and searching
    (np.sort, (F2,), {}), (np.sort, (I2,), {"axis": None}), (np.argsort, (V,), {}),
    (".argsort", (F2,), {"axis": 0}), (np.unique, (IV % 3,), {}),
    (np.unique, (IV % 3,), {"return_counts": True, "return_index": True}),
    (np.nonzero, (M,), {}), (".nonzero", (IV,), {}), (np.flatnonzero, (M,), {}),
    (np.argwhere, (M,), {}), (np.searchsorted, (np.sort(V), 1.0), {}),
    (".searchsorted", (np.sort(V), V), {"side": "right"}), (np.bincount, (IV % 3,), {}),
    (np.bincount, (IV % 3,), {"weights": V, "minlength": 5}),
    # products
    (np.dot, (V, V), {}), (np.dot, (I2, I2.T), {}), (".dot", (SQ, SQ[0]), {}),
    (np.dot, (I2, 2.0), {}), (np.inner, (V, V), {}), (np.vdot, (SQ, SQ), {}),
    (np.outer, (V, IV), {}), (np.kron, (SQ, I2), {}), (np.matmul, (F2, F2.T), {}),
    (np.matmul, (V, np.ones((4, 2), np.float32)), {}), (np.tensordot, (F2, F2, 2), {}),
    (np.einsum, ("ij,kj->ik", F2, F32), {}), (np.einsum, ("i,i", V, V), {}),
    (np.linalg.norm, (F2,), {}), (np.linalg.norm, (I2,), {"axis": 1, "keepdims": True}),
    (np.linalg.norm, (SQ, "fro"), {}), (np.linalg.inv, (SQ,), {}), (np.linalg.det, (SQ,), {}),
    (np.linalg.solve, (SQ, SQ[0]), {}), (np.linalg.cholesky, (SQ @ SQ.T,), {}),
    (np.linalg.cholesky, (np.array([[4, 2], [2, 3]], np.int32),), {}),
    (np.linalg.pinv, (F32[:, :2],), {}), (np.linalg.matrix_power, (SQ, 3), {}),
    (np.linalg.matrix_power, (SQ.astype(np.int64), -1), {}),
    (np.linalg.eigvals, (SQ,), {}), (np.linalg.eigvals, (np.array([[0.0, -1.0], [1.0, 0.0]]),), {}),
    (np.linalg.svd, (F2,), {}), (np.linalg.svd, (I2,), {"compute_uv": False}),
    (np.linalg.svd, (np.stack([SQ, SQ]).astype(np.float32),), {"full_matrices": False}),
    (np.linalg.qr, (F2,), {}), (np.linalg.qr, (SQ, "r"), {}), (np.linalg.qr, (I2, "raw"), {}),
    (np.linalg.eigh, (SQ @ SQ.T,), {}), (np.linalg.eigh, (SQ.astype(np.complex64),), {"UPLO": "U"}),
    (np.linalg.slogdet, (SQ,), {}), (np.linalg.slogdet, (np.stack([SQ, SQ]).astype(np.int8),), {}),
    # attributes and shapes
    *(("@" + name, (F2,), {}) for name in ("shape", "strides", "ndim", "size", "itemsize",
                                           "nbytes", "dtype", "T")),
    ("@T", (S32,), {}), ("@real", (F2.astype(np.complex64),), {}), ("@imag", (F2,), {}),
    ("@real", (I2,), {}), ("@imag", (np.complex128(1 + 2j),), {}), (np.shape, ([1, 2],), {}),
    (np.ndim, (Z,), {}),
    (np.size, (F2, 1), {}), (np.transpose, (F2,), {}),
    (np.transpose, (np.ones((2, 3, 4)), (1, 0, 2)), {}), (".transpose", (F2,), {}),
    (".transpose", (np.ones((2, 3, 4)), 2, 0, 1), {}),
    (".transpose", (np.ones((2, 3, 4)), (2, 0, 1)), {}), (np.swapaxes, (F2, 0, 1), {}),
    (".swapaxes", (np.ones((2, 3, 4)), 0, -1), {}), (np.moveaxis, (np.ones((2, 3, 4)), 0, 2), {}),
    (np.reshape, (F2, (3, -1)), {}), (np.reshape, (I2, 6), {}), (np.reshape, (S32, ()), {}),
    (".reshape", (F2, 3, 2), {}), (".reshape", (F2, (-1,)), {}),
    (".reshape", (I2, -1), {"order": "F"}), (np.ravel, (F2.T,), {}), (".ravel", (I2,), {}),
    (".flatten", (F2,), {"order": "F"}), (np.squeeze, (F2[:1],), {}),
    (".squeeze", (np.ones((1, 3, 1)),), {"axis": 2}), (np.expand_dims, (V, 0), {}),
    (np.expand_dims, (F2, (0, -1)), {}), (np.flip, (F2,), {"axis": 1}), (np.fliplr, (F2,), {}),
    (np.flipud, (I2,), {}), (np.broadcast_to, (V, (3, 4)), {}),
    (np.broadcast_arrays, (V, F2[:, :1]), {}), (np.atleast_1d, (2.0,), {}),
    (np.atleast_2d, (V, F2), {}), (np.atleast_3d, (F2,), {}),
    (np.concatenate, ([F2, I2],), {}), (np.concatenate, ((F2, F32), 1), {}),
    (np.concatenate, ([V, V],), {"dtype": np.float32}), (np.stack, ([F2, F2],), {"axis": -1}),
    (np.stack, ((I2, I2),), {}), (np.vstack, ([F2, V[:3]],), {}), (np.hstack, ((V, IV),), {}),
    (np.column_stack, ((V, IV),), {}), (np.append, (V, 1.0), {}),
    (np.split, (IV, 2), {}), (np.array_split, (F2, 2, 1), {}), (np.tile, (V, 2), {}),
    (np.repeat, (I2, 2), {"axis": 0}), (".repeat", (V, 3), {}), (np.roll, (F2, 1), {}),
    (np.copy, (F2.T,), {}), (np.copy, (S32,), {}), (".copy", (F2,), {}), (".copy", (S32,), {}),
    (np.ascontiguousarray, (F2.T,), {}), (np.ascontiguousarray, (S32,), {}),
    (np.asfortranarray, (I2,), {"dtype": np.float64}), (".view", (F2,), {}),
    (".view", (F2, np.int64), {}), (np.tril, (F2,), {}), (np.triu, (SQ, 1), {}),
    (np.diag, (V,), {}), (np.diag, (SQ,), {}), (np.diagonal, (F2,), {}),
    (".diagonal", (np.ones((2, 3, 3)),), {"axis1": 1, "axis2": 2}), (np.take, (V, [0, 2]), {}),
    (".take", (F2, 1), {"axis": 1}), (np.take_along_axis, (F2, np.argsort(F2, 1), 1), {}),
    (".item", (F2, 1), {}), (".item", (Z,), {}), (".item", (I2, (1, 2)), {}),
    (".tolist", (I2,), {}), (".fill", (I2, 1.5), {}), (".sort", (F2,), {}),
    (".sort", (I2,), {"axis": 0}), (np.copyto, (F2, 1), {}), (np.fill_diagonal, (SQ, 0.0), {}),
    # constructors and dtypes
    (np.zeros, (3,), {}), (np.zeros, ((2, 0),), {"dtype": np.int32}), (np.ones, ((2, 3),), {}),
    (np.ones, (2,), {"dtype": "float32"}), (np.empty, (0,), {"dtype": bool}),
    (np.full, ((2, 2), 7), {}), (np.full, (3, 0.5), {"dtype": np.float32}),
    (np.full, (2, S32), {}), (np.zeros_like, (F32,), {}), (np.ones_like, (I2,), {}),
    (np.zeros_like, (S32,), {}), (np.full_like, (I2, 2.5), {}),
    (np.empty_like, (F2,), {"dtype": np.int8, "shape": 4}), (np.eye, (3,), {}),
    (np.eye, (2, 3, 1), {"dtype": np.int64}), (np.identity, (2,), {}), (np.arange, (5,), {}),
    (np.arange, (0.0, 1.0, 0.25), {}), (np.arange, (2, 9, 3), {}),
    (np.arange, (4,), {"dtype": np.float32}), (np.arange, (S32,), {}),
    (np.linspace, (0.0, 1.0, 5), {}), (np.linspace, (0, 1), {"num": 4, "retstep": True}),
    (np.linspace, (0, 10, 6), {"dtype": int}), (np.meshgrid, (V, IV[:2]), {}),
    (np.array, ([1, 2, 3],), {}), (np.array, ([[1.5], [2.0]],), {}), (np.array, (True,), {}),
    (np.array, (F2,), {"dtype": np.float32}), (np.array, (V,), {"ndmin": 2}),
    (np.array, (V,), {"copy": False}), (np.asarray, (I2,), {}), (np.asarray, ((1, 2.5),), {}),
    (np.dtype, ("float32",), {}), (np.dtype, (np.int8,), {}), (np.result_type, (I2, 1.0), {}),
    (np.promote_types, (np.int8, np.uint8), {}), (np.issubdtype, (F2.dtype, np.floating), {}),
    (np.can_cast, (np.int32, np.float64), {}), (np.can_cast, (I2, "int8", "same_kind"), {}),
    *(("@" + name, (np.dtype(np.float32),), {}) for name in ("name", "kind", "char", "itemsize")),
    # elementwise non-ufuncs, searching, sets, statistics
    (np.nan_to_num, (np.array([np.nan, np.inf, -1.0]),), {}), (np.nan_to_num, (2.5,), {}),
    (np.nan_to_num, (F32,), {"nan": 1.0, "posinf": 9.0}), (np.nan_to_num, (Z,), {}),
    (np.nan_to_num, (IV,), {}), (np.sinc, (F32,), {}), (np.sinc, (IV,), {}),
    (np.sinc, (0.5,), {}), (np.interp, (V, [0.0, 1.0, 2.0], [1.0, 3.0, 2.0]), {}),
    (np.interp, (0.5, V[:2], F2[0, :2]), {"left": 0.0}), (np.interp, (Z, IV, V), {}),
    (np.select, ([M, ~M], [F2, I2]), {}), (np.select, ([V > 0], [IV]), {"default": -1}),
    (np.digitize, (V, [0.0, 1.0, 2.5]), {}), (np.digitize, (1.5, [0.0, 1.0]), {"right": True}),
    (np.digitize, (Z, V[:2]), {}), (np.isin, (IV, [7, 4]), {}), (np.isin, (3, IV), {}),
    (np.isin, (F2, V), {"invert": True}), (np.unravel_index, (5, (2, 3)), {}),
    (np.unravel_index, (IV % 6, F2.shape), {}), (np.unravel_index, (Z.astype(int), 4), {}),
    (np.union1d, (IV, U8), {}), (np.setdiff1d, (V, IV), {}), (np.setxor1d, (IV, [1, 7]), {}),
    (np.intersect1d, (IV, [7, 2, 9]), {}),
    (np.intersect1d, (V, V[::2]), {"return_indices": True}), (np.partition, (IV, 1), {}),
    (np.partition, (F2, 0), {"axis": None}), (np.argpartition, (V, [0, 2]), {}),
    (np.histogram, (V,), {}), (np.histogram, (IV, 3), {"density": True}),
    (np.histogram, (F32,), {"bins": 2, "range": (0, 3), "weights": F32}),
    (np.trapezoid, (F2,), {}), (np.trapezoid, (I2,), {"axis": 0}),
    (np.trapezoid, (V,), {"x": IV}), (np.trapezoid, (F32,), {"dx": 0.5}),
    (np.cov, (F2,), {}), (np.cov, (V, V[::-1]), {"ddof": 0}), (np.cov, (I2,), {"rowvar": False}),
    (np.corrcoef, (F2,), {}), (np.corrcoef, (V, IV), {"dtype": np.float32}),
    # products, convolution, polynomials
    (np.cross, (V[:3], IV[:3]), {}), (np.cross, (F2, F32), {}),
    (np.convolve, (V, IV[:2]), {}), (np.convolve, (U8, [1, 2]), {"mode": "same"}),
    (np.correlate, (V, IV[:2]), {}), (np.polyval, ([1, 2], 3), {}),
    (np.polyval, (V[:2], F2), {}), (np.polyval, (IV, Z), {}),
    # ranges, shapes
    (np.logspace, (0, 2, 3), {}), (np.logspace, (0.0, 1.0), {"num": 4, "base": 2}),
    (np.logspace, (S32, 2.0, 3), {}), (np.logspace, (0, 1, 3), {"dtype": np.float32}),
    (np.tril_indices, (3,), {}), (np.triu_indices, (2, 1, 4), {}), (np.tril, (V,), {}),
    (np.rot90, (F2,), {}), (np.rot90, (np.ones((2, 3, 4)), 2, (1, 2)), {}),
    (np.pad, (V, 1), {}), (np.pad, (I2, ((1, 0), (2, 1))), {"constant_values": 7}),
    (np.pad, (F2, 2, "edge"), {}), (np.resize, (IV, (2, 3)), {}), (np.resize, (F2, 4), {}),
    (np.insert, (IV, 1, 9), {}), (np.insert, (F2, [0, 2], -1.5, 1), {}),
    (np.delete, (V, [0, 2]), {}), (np.delete, (I2, 0, 0), {}),
    (np.hsplit, (F2, 3), {}), (np.vsplit, (I2, [1]), {}), (np.dsplit, (np.ones((1, 2, 4)), 2), {}),
    (np.dstack, ((V, IV),), {}),
]


def resolve(callee: object, args: tuple) -> tuple[OpDef, object]:
    """The op a call binds to (as the front end finds it) and the eager callable."""
    if callable(callee) and not isinstance(callee, str):
        return lookup_python(callee), callee
    receiver = type_of(args[0])
    name = callee[1:]
    if callee.startswith("@"):
        return lookup_attribute(receiver, name), lambda x: getattr(x, name)
    return lookup_method(receiver, name), lambda x, *a, **k: getattr(x, name)(*a, **k)


def _case_id(case: tuple) -> str:
    callee = case[0]
    return getattr(callee, "__name__", callee) if not isinstance(callee, str) else callee


@pytest.mark.parametrize("case", CASES, ids=map(_case_id, CASES))
def test_template_and_type_rule_match_numpy(case):
    callee, args, kwargs = case
    op, eager = resolve(callee, args)
    assert op is not None, f"{callee} is not bound to an op"
    eager_args = copies(args)
    with np.errstate(all="ignore"):
        expected = eager(*eager_args, **kwargs)
    inputs = bind(op, copies(args), kwargs)
    for inline in (False, True):
        script_inputs = [v.copy() if isinstance(v, np.ndarray) else v for v in inputs]
        actual = run_template(op, script_inputs, inline)
        assert_same(actual, expected)
        # effects: the written argument changes as in eager code, the others stay
        for k, (before, after, eager_after) in enumerate(zip(inputs, script_inputs,
                                                            eager_args)):
            if isinstance(before, np.ndarray):
                if k in op.writes:
                    assert_same(after, eager_after)
                else:
                    assert_same(after, before)
                    if isinstance(actual, np.ndarray) and np.shares_memory(actual, after):
                        assert op.views, f"{op.name} returned a view but is not views=True"
    actual_type = type_of(expected) if expected is not None else None
    for refined in (True, False):
        inferred = infer(op, inputs, refined)
        if actual_type is None:
            assert inferred is None
        elif inferred != AnyType:
            assert _describes(inferred, expected), (refined, inferred, actual_type)


def _describes(t: Type, value: object) -> bool:
    """Whether the inferred type t holds the runtime value (element by element)."""
    if isinstance(t, TupleType) and isinstance(value, tuple):
        return len(t.elems) == len(value) and all(map(_describes, t.elems, value))
    if isinstance(t, VarTupleType) and isinstance(value, tuple):
        return all(_describes(t.elem, v) for v in value)
    if isinstance(t, ListType) and isinstance(value, list):
        return all(_describes(t.elem, v) for v in value)
    actual = type_of(value)
    if isinstance(t, TensorType) and isinstance(actual, TensorType):
        return t.dtype in (None, actual.dtype) and t.ndarray in (None, actual.ndarray) and (
            t.sizes is None or (len(t.sizes) == len(actual.sizes) and all(
                s in (None, a) for s, a in zip(t.sizes, actual.sizes))))
    return is_subtype(actual, t)


def test_every_numpy_op_is_exercised():
    exercised = {resolve(callee, args)[0].name for callee, args, _ in CASES}
    assert set(NUMPY_OPS) - exercised == set()


def test_refinement_is_not_vacuous():
    """Refined inputs and constants give dtypes and sizes, not just Tensor."""
    assert infer(OPS["numpy::sum"], bind(OPS["numpy::sum"], (I2,), {"axis": 0}), True) == \
        TensorType("int64", (3,), None, True)
    assert infer(OPS["numpy::sqrt"], [U8, None, None], True) == TensorType(
        "float16", (4,), None, True)
    assert infer(OPS["ndarray::reshape"], [F2, 3, -1, "C", None], True) == TensorType(
        "float64", (3, 2), None, True)
    assert infer(OPS["numpy::maximum"], [Z, 0.0, None, None], True) == TensorType(
        "float64", (), None, False)
    assert infer(OPS["numpy::where"], [M, F32, 0], True) == TensorType(
        "float32", (2, 3), None, True)


def test_results_are_plain_tensor_unless_an_argument_is_refined():
    """The front end types NumPy results Tensor; refinements come from refined arguments."""
    assert OPS["numpy::zeros"].infer([IntType, NoneType, StrType], {}) == TENSOR
    assert OPS["numpy::exp"].infer([FloatType, NoneType, NoneType], {}) == TENSOR
    assert OPS["numpy::unique"].infer([TENSOR, BoolType, BoolType, BoolType, NoneType,
                                       BoolType, BoolType],
                                      {CONSTANTS: {1: True, 2: False, 3: True}}) == \
        TupleType((TENSOR, TENSOR, TENSOR))


# -- type rules reject what NumPy always rejects --

# (op, argument types, an eager call with such arguments, which NumPy rejects)
_SUM_REST = [NoneType, NoneType, BoolType, NoneType, BoolType]
REJECTED = [
    ("numpy::exp", [StrType, NoneType, NoneType], "np.exp('a')"),
    ("numpy::add", [TENSOR, NoneType, NoneType, NoneType], "np.add(F2, None)"),
    ("numpy::bitwise_and", [FloatType, IntType, NoneType, NoneType], "np.bitwise_and(1.5, 2)"),
    ("numpy::left_shift", [TENSOR, FloatType, NoneType, NoneType], "np.left_shift(IV, 1.5)"),
    ("numpy::sum", [TENSOR, FloatType, *_SUM_REST], "np.sum(F2, axis=1.5)"),
    ("numpy::sum", [TENSOR, BoolType, *_SUM_REST], "np.sum(F2, axis=True)"),
    ("numpy::sum", [TENSOR, ListType(IntType), *_SUM_REST], "np.sum(F2, axis=[0])"),
    ("numpy::sum", [TENSOR, NoneType, IntType, *_SUM_REST[1:]], "np.sum(F2, dtype=5)"),
    ("numpy::zeros", [FloatType, NoneType, StrType], "np.zeros(2.5)"),
    ("numpy::zeros", [TupleType((IntType, FloatType)), NoneType, StrType], "np.zeros((2, .5))"),
    ("numpy::where", [TENSOR, TENSOR, NoneType], "np.where(M, F2)"),
    ("numpy::clip", [TENSOR, IntType, IntType, NoneType, IntType, NoneType],
     "np.clip(F2, 1, 2, min=1)"),
    ("ndarray::astype", [TENSOR, IntType, StrType, StrType, BoolType, BoolType], "F2.astype(5)"),
    ("numpy::concatenate", [StrType, IntType, NoneType, NoneType, StrType],
     "np.concatenate('ab', 1)"),
    ("numpy::reshape", [TENSOR, FloatType, StrType, NoneType], "np.reshape(F2, 2.5)"),
    ("numpy::sqrt", [TupleType((StrType,)), NoneType, NoneType], "np.sqrt(('a',))"),
]


@pytest.mark.parametrize("name, types, eager", REJECTED)
def test_type_rule_rejects_what_numpy_rejects(name, types, eager):
    with pytest.raises((TypeError, ValueError)):
        eval(eager, globals())
    with pytest.raises(OpTypeError):
        OPS[name].infer(types, {})


def test_out_arguments_are_not_supported():
    """out= would make every call a write; script code assigns the result instead."""
    with pytest.raises(OpTypeError, match="out="):
        OPS["numpy::exp"].infer([TENSOR, TENSOR, NoneType], {})


ACCEPTED = [
    ("numpy::zeros", [TupleType((IntType, IntType)), DTypeType, StrType]),
    ("numpy::zeros", [VarTupleType(IntType), StrType, StrType]),
    ("numpy::sum", [TENSOR, TupleType((IntType, IntType)), DTypeType, NoneType, BoolType,
                    NoneType, BoolType]),
    ("numpy::exp", [ListType(FloatType), NoneType, NoneType]),
    ("numpy::add", [IntType, TENSOR, NoneType, StrType]),
    ("ndarray::item", [TENSOR]),
]


@pytest.mark.parametrize("name, types", ACCEPTED)
def test_type_rule_accepts(name, types):
    OPS[name].infer(types, {})


# -- parameters are NumPy's --

# NumPy defaults that are "no value" sentinels, and the explicit value standing for them.
NO_VALUE_STAND_INS = {"keepdims": False, "initial": None, "where": True, "a_min": None,
                      "a_max": None, "min": None, "max": None, "prepend": None, "append": None}
SAME_BEHAVIOUR_DEFAULTS = {("eye", "dtype"): (float, None)}   # np.eye(dtype=None) is float64
_KIND = inspect.Parameter


def _check_parameters(op: OpDef, theirs: list[inspect.Parameter], label: str) -> None:
    """Our parameters are NumPy's, in NumPy's order, bound the same way; the ones we leave
    out are keyword-only (leaving them out shifts no positional argument).  Parameters
    NumPy takes through **kwargs (ndarray.sum's keepdims) are checked on the function;
    positional-only ones match by position (ndarray.dot's `other` is our `b`)."""
    takes_kwargs = any(q.kind == _KIND.VAR_KEYWORD for q in theirs)
    theirs = [q.replace(name=op.params[i].name) if q.kind == _KIND.POSITIONAL_ONLY else q
              for i, q in enumerate(theirs) if q.kind != _KIND.VAR_KEYWORD]
    names = [q.name for q in theirs]
    positions = []
    for p in op.params:
        if p.name not in names and takes_kwargs:
            continue
        assert p.name in names, f"{label}: NumPy has no parameter {p.name}"
        q = theirs[names.index(p.name)]
        positions.append(names.index(p.name))
        kind = _KIND.KEYWORD_ONLY if p.kwonly else _KIND.VAR_POSITIONAL if p.variadic else None
        assert kind == q.kind if kind else q.kind in (
            _KIND.POSITIONAL_ONLY, _KIND.POSITIONAL_OR_KEYWORD), f"{label}: kind of {p.name}"
        default = None if p.default is NO_DEFAULT else p.default
        if q.default is np._NoValue:
            assert default == NO_VALUE_STAND_INS[p.name], f"{label}: {p.name}"
        elif (label, p.name) in SAME_BEHAVIOUR_DEFAULTS:
            assert (q.default, default) == SAME_BEHAVIOUR_DEFAULTS[label, p.name]
        elif not p.variadic:
            assert (q.default is _KIND.empty) == (p.default is NO_DEFAULT), f"{label}: {p.name}"
            assert q.default is _KIND.empty or default == q.default, \
                f"{label}: default of {p.name} is {default!r}, NumPy's is {q.default!r}"
    assert positions == sorted(positions), f"{label}: parameters out of NumPy's order"
    for q in theirs:
        assert q.name in {p.name for p in op.params} or q.kind == _KIND.KEYWORD_ONLY, \
            f"{label}: {q.name} left out"


def test_function_parameters_match_numpy():
    from tsjit.ops.registry import BY_PYTHON_OBJECT
    checked = 0
    for obj, op in BY_PYTHON_OBJECT.values():
        if op.name in NUMPY_OPS:
            _check_parameters(op, list(inspect.signature(obj).parameters.values()),
                              obj.__name__)
            checked += 1
    assert checked == len({id(o) for o, op in BY_PYTHON_OBJECT.values() if op.name in NUMPY_OPS})


# ndarray.view(dtype=None, type=None) is documented but not introspectable (*args, **kwargs).
@pytest.mark.parametrize("name", sorted(n.split("::")[1] for n in NUMPY_OPS
                                        if n.startswith("ndarray::") and n != "ndarray::view"
                                        and inspect.isroutine(getattr(np.ndarray,
                                                                      n.split("::")[1]))))
def test_method_parameters_match_numpy(name):
    """ndarray methods bind like ndarray's (the receiver aside)."""
    theirs = list(inspect.signature(getattr(np.ndarray, name)).parameters.values())
    op = NUMPY_OPS[f"ndarray::{name}"]
    _check_parameters(OpDef(op.name, op.params[1:], None, ""), theirs[1:], name)


# -- promotion against NumPy, every dtype pair --

DTYPES = [np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                "uint32", "uint64", "float16", "float32", "float64")]


def _operand_forms():
    """(value, type) for arrays and NumPy scalars of every dtype, and weak Python scalars."""
    forms = []
    for d in DTYPES:
        forms.append((np.ones(2, d), TensorType(d.name, (2,), None, True)))
        forms.append((np.ones((), d)[()], TensorType(d.name, (), None, False)))
    forms += [(1, IntType), (1.0, FloatType), (True, BoolType)]
    return forms


FORMS = _operand_forms()


def _numpy_dtype(fn, values) -> np.dtype | None:
    try:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*values)).dtype
    except TypeError:
        return None


@pytest.mark.parametrize("kind", sorted(KERNEL_UFUNCS))
def test_result_dtype_matches_numpy(kind):
    ufunc = KERNEL_UFUNCS[kind]
    for combo in itertools.product(FORMS, repeat=ufunc.nin):
        values, types = zip(*combo)
        assert result_dtype(kind, types) == _numpy_dtype(ufunc, values), (kind, types)


def test_where_dtype_matches_numpy():
    cond = np.array([True, False])
    for (x, tx), (y, ty) in itertools.product(FORMS, repeat=2):
        expected = np.where(cond, x, y).dtype
        assert result_dtype("where", [TENSOR, tx, ty]) == expected, (tx, ty)
        assert loop_dtypes("where", [TENSOR, tx, ty]) == ((np.dtype(bool), expected, expected),
                                                           expected)


def test_np_clip_type_matches_numpy():
    """np.clip makes `a` an array first (a strong operand), unlike the clip ufunc."""
    op = lookup_python(np.clip)
    for (a, ta), (lo, tlo), (hi, thi) in itertools.product(FORMS, repeat=3):
        try:
            with np.errstate(all="ignore"):
                expected = np.clip(a, lo, hi)
        except TypeError:
            continue
        inferred = op.infer([ta, tlo, thi, NoneType, NoneType, NoneType], {})
        assert _describes(inferred, expected), (ta, tlo, thi, inferred)


def test_every_ufunc_type_rule_matches_numpy():
    """The ufunc ops' refined result types on every dtype pair, scalars and arrays."""
    for ufunc in numpy_elementwise.UFUNCS:
        op = lookup_python(ufunc)
        for combo in itertools.product(FORMS, repeat=ufunc.nin):
            values, types = zip(*combo)
            try:
                with np.errstate(all="ignore"):
                    expected = ufunc(*values)
            except TypeError:
                continue
            inferred = op.infer(list(types) + [NoneType, NoneType], {})
            assert _describes(inferred, expected), (ufunc.__name__, types, inferred)


def test_loop_dtypes_give_the_fusers_casts():
    assert loop_dtypes("add", [TensorType("int32"), TensorType("float32")]) == (
        (np.dtype("float64"), np.dtype("float64")), np.dtype("float64"))
    assert loop_dtypes(np.fabs, [TensorType("int16")]) == (
        (np.dtype("float32"),), np.dtype("float32"))
    assert loop_dtypes("left_shift", [TensorType("uint8"), IntType]) == (
        (np.dtype("uint8"), np.dtype("uint8")), np.dtype("uint8"))
    assert result_dtype("add", [TENSOR, IntType]) is None


def test_elementwise_ops_name_their_kernel():
    kernels = {op.attrs["kernel"] for op in NUMPY_OPS.values() if op.elementwise}
    assert kernels >= set(KERNEL_UFUNCS) | {"where", "cast"}
    for op in NUMPY_OPS.values():
        if op.elementwise and "ufunc" in op.attrs:
            assert KERNEL_UFUNCS.get(op.attrs["kernel"]) in (op.attrs["ufunc"], np.absolute,
                                                              np.power)
