"""NumPy idioms script code once rejected: ufunc calls with out=, ufunc methods
(np.add.reduce), and np.array of a list mixing Python ints, floats and bools.

Each function runs eagerly and scripted on fresh equal arguments, several times per
argument tuple (the profiling call, optimized calls, and calls whose guards fail when the
dtypes change): results, which argument a result *is*, argument side effects and raised
exception classes must match.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tsjit
from tests._differential import assert_same
from tsjit.ir.types import BoolType, DTypeType, FloatType, IntType, NoneType, TensorType, Type
from tsjit.ops.numpy_rules import CONSTANTS
from tsjit.ops.numpy_ufuncs import UFUNC
from tsjit.ops.registry import OPS
from tsjit.testing.filecheck import FileCheck


def _copies(args: tuple) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _identities(result: object, args: list) -> list:
    """For the result (or each item of a tuple result): the index of the argument it is."""
    items = result if isinstance(result, tuple) else (result,)
    return [next((k for k, a in enumerate(args) if item is a), None) for item in items]


def check_calls(fn, *argument_tuples, repeat: int = 3, ulps: int = 0):
    """Compare `fn` eager and scripted on copies of each argument tuple, `repeat` times
    each, in the order given (`ulps`: the contract's tolerance for transcendental
    functions); return the scripted function."""
    scripted = tsjit.script(fn)
    for args in argument_tuples:
        for _ in range(repeat):
            eager_args, script_args = _copies(args), _copies(args)
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                try:
                    want = fn(*eager_args)
                except Exception as e:      # noqa: BLE001  (the class is compared)
                    with pytest.raises(Exception) as got:
                        scripted(*script_args)
                    assert got.type is type(e), f"raised {got.type}, eager raised {type(e)}"
                    assert_same(script_args, eager_args, "arguments after the exception")
                    continue
                got = scripted(*script_args)
            assert_same(got, want, ulps=ulps)
            assert _identities(got, script_args) == _identities(want, eager_args)
            assert_same(script_args, eager_args, "arguments", ulps)
    return scripted


F32, F64, I64 = np.float32, np.float64, np.int64


def _arrays(dtype, *shape_and_values) -> tuple:
    return tuple(np.asarray(v, dtype) for v in shape_and_values)


# ---------------------------------------------------------------- out=

def add_into(a: tsjit.Tensor, b: tsjit.Tensor, c: tsjit.Tensor):
    return np.add(a, b, out=c)


def axpy_into(a: tsjit.Tensor, x: tsjit.Tensor, y: tsjit.Tensor, out: tsjit.Tensor):
    np.multiply(a, x, out=out)
    np.add(out, y, out=out)
    return out


def relu_in_place(x: tsjit.Tensor):
    r = np.maximum(x, 0.0, out=x)
    return r is x


def exp_into_tuple(x: tsjit.Tensor, y: tsjit.Tensor):
    return np.exp(x, out=(y,)), y


def positional_out(a: tsjit.Tensor, c: tsjit.Tensor):
    return np.subtract(a, 1, c)


def out_none(a: tsjit.Tensor):
    return np.sqrt(a, out=None), np.sqrt(a, out=(None,))


def with_dtype(a: tsjit.Tensor, c: tsjit.Tensor):
    return np.multiply(a, a, out=c, dtype=np.float32)


VECTOR = np.linspace(-2.0, 3.0, 7)


@pytest.mark.parametrize("fn, calls", [
    (add_into, [(VECTOR, VECTOR[::-1].copy(), np.zeros(7)),
                (VECTOR, VECTOR, np.zeros(7, F32)),              # float64 -> float32 out
                (VECTOR.astype(F32), 2.5 * VECTOR.astype(F32), np.zeros(7, F32)),
                (VECTOR, VECTOR, np.zeros(7, I64)),              # same_kind refuses
                (np.arange(7), np.arange(7), np.zeros(7, I64)),
                (np.arange(7), np.arange(7), np.zeros(7, np.int8)),
                (VECTOR[:3], VECTOR[3:6], np.zeros((2, 3))),     # out broadcasts the result
                (VECTOR.reshape(1, 7), VECTOR, np.zeros(7)),     # out of lower rank
                (VECTOR, VECTOR[:3], np.zeros(7)),               # operands do not broadcast
                (VECTOR, VECTOR, np.zeros(3))]),                 # out too small
    (axpy_into, [(VECTOR, VECTOR, VECTOR, np.zeros(7)),
                 _arrays(F32, VECTOR, VECTOR, VECTOR, np.zeros(7)),
                 (VECTOR, VECTOR, VECTOR, np.zeros(7, I64))]),
    (relu_in_place, [(VECTOR,), (VECTOR.astype(F32),), (np.arange(-3, 4),)]),
    (exp_into_tuple, [(VECTOR, np.zeros(7)), (VECTOR, np.zeros(7, F32)),
                      (VECTOR, np.zeros(7, I64))]),
    (positional_out, [(VECTOR, np.zeros(7)), (np.arange(7), np.zeros(7, np.uint8)),
                      (np.arange(7, dtype=np.uint8), np.zeros(7, np.uint8))]),
    (out_none, [(VECTOR,), (np.arange(4),)]),
    (with_dtype, [(VECTOR, np.zeros(7)), (VECTOR, np.zeros(7, np.float16)),
                  (VECTOR, np.zeros(7, I64))]),
])
def test_ufunc_out_matches_numpy(fn, calls):
    check_calls(fn, *calls, ulps=4 if fn is exp_into_tuple else 0)


def test_out_overlapping_an_operand_reads_the_operand_first():
    def shifted(x: tsjit.Tensor):
        return np.add(x[1:], x[:-1], out=x[:-1])

    def reversed_in_place(x: tsjit.Tensor):
        return np.multiply(x[::-1], 2.0, out=x)

    for fn in (shifted, reversed_in_place):
        check_calls(fn, (np.arange(8.0),), (np.arange(8.0).astype(F32),))


def test_out_of_the_wrong_type_is_a_compilation_error():
    def into_list(a: tsjit.Tensor, c: list[float]):
        return np.add(a, a, out=c)

    def two_outs_for_one(a: tsjit.Tensor, c: tsjit.Tensor):
        return np.add(a, a, out=(c, c))

    with pytest.raises(tsjit.CompilationError, match="out= must be an array"):
        tsjit.script(into_list)
    with pytest.raises(tsjit.CompilationError, match="one entry per ufunc output"):
        tsjit.script(two_outs_for_one)


def test_a_lone_out_call_is_numpys_own_call():
    """One ufunc call with out= is one op (ufunc::call_out): like any lone op it is not
    fused (a kernel for one op does not beat NumPy), and NumPy writes c. Chains of them
    fuse: see test_fuse_ufunc_out.py."""
    a, b, c = np.ones(64, F32), np.full(64, 0.5, F32), np.zeros(64, F32)
    scripted = check_calls(add_into, (a, b, c))
    graph = scripted.graph_for(a, b, c)
    FileCheck().check("ufunc::out_check").check("ufunc::call_out[ufunc=Py(numpy.add)](%c,") \
        .check_not("prim::FusionGroup").run(graph)
    assert scripted(a, b, c) is c


# ---------------------------------------------------------------- ufunc methods

MAXIMUM_REDUCE = np.maximum.reduce    # a bound method found by name


def reductions(x: tsjit.Tensor):
    return (np.maximum.reduce(x), np.add.reduce(x, axis=1), np.add.reduce(x, axis=None),
            np.multiply.reduce(x, 0, keepdims=True), np.add.reduce(x, axis=1, initial=1),
            np.logical_and.reduce(x > 0, axis=0), MAXIMUM_REDUCE(x, axis=None),
            np.add.reduce(x, dtype=np.float32))


def scans_and_outer(a: tsjit.Tensor, b: tsjit.Tensor):
    return (np.add.accumulate(a), np.minimum.accumulate(a), np.multiply.outer(a, b),
            np.subtract.outer(a, 2.0), np.add.outer(a[0], b[0]), np.add.accumulate([1, 2, 3]))


def scatter_add(x: tsjit.Tensor, idx: tsjit.Tensor):
    np.add.at(x, idx, 1)
    np.negative.at(x, idx[:1])
    return x


@pytest.mark.parametrize("fn, calls", [
    (reductions, [(np.arange(6.0).reshape(2, 3) - 2,), (np.arange(6).reshape(2, 3),),
                  (np.arange(6, dtype=np.uint8).reshape(3, 2),), (np.ones(3),)]),
    (scans_and_outer, [(VECTOR, VECTOR[:3]), (np.arange(5), np.arange(2.0)),
                       (VECTOR.astype(F32), VECTOR[:2].astype(F32)),
                       (np.float64(2.0), np.arange(2))]),
    (scatter_add, [(np.zeros(4), np.array([0, 0, 3])), (np.zeros(4, F32), np.array([1, 1])),
                   (np.zeros(4, I64), np.array([5]))]),
])
def test_ufunc_methods_match_numpy(fn, calls):
    check_calls(fn, *calls)


def test_ufunc_methods_numpy_rejects_are_compilation_errors():
    def unary_reduce(x: tsjit.Tensor):
        return np.negative.reduce(x)

    def no_such_method(x: tsjit.Tensor):
        return np.add.frobnicate(x)

    with pytest.raises(tsjit.CompilationError, match="np.negative.reduce|negative.reduce"):
        tsjit.script(unary_reduce)
    with pytest.raises(tsjit.CompilationError, match="has no attribute 'frobnicate'"):
        tsjit.script(no_such_method)


def _type_of(value: object) -> Type:
    if isinstance(value, np.ndarray):
        return TensorType(value.dtype.name, value.shape, None, True)
    if isinstance(value, np.generic):
        return TensorType(value.dtype.name, (), None, False)
    if isinstance(value, type):
        return DTypeType
    return {bool: BoolType, int: IntType, float: FloatType, type(None): NoneType}[type(value)]


@pytest.mark.parametrize("method, ufunc, args", [
    ("reduce", np.add, (np.arange(6, dtype=np.int8).reshape(2, 3), 1, None, None, True, None,
                        True)),
    ("reduce", np.maximum, (np.ones((2, 3), F32), None, None, None, False, None, True)),
    ("reduce", np.add, (np.ones(3, bool), 0, np.float32, None, False, None, True)),
    ("accumulate", np.multiply, (np.ones((2, 3), np.uint8), 1, None, None)),
    ("outer", np.multiply, (np.ones(3, F32), 2.0, None)),
    ("outer", np.add, (np.float32(1), np.ones((2, 2), np.int16), None)),
])
def test_method_type_rules_give_numpy_result_types(method, ufunc, args):
    """With refined argument types (and constant arguments known), the type rule gives the
    exact dtype, sizes and ndarray-ness of NumPy's result."""
    op = OPS[f"ufunc::{method}"]
    constants = {i: v for i, v in enumerate(args) if not isinstance(v, np.ndarray | np.generic)}
    inferred = op.infer([_type_of(v) for v in args], {UFUNC: ufunc, CONSTANTS: constants})
    kwargs = dict(zip([p.name for p in op.params], args))
    positional = [kwargs.pop(p.name) for p in op.params[:2 if method == "outer" else 1]]
    assert inferred == _type_of(getattr(ufunc, method)(*positional, **{
        k: v for k, v in kwargs.items() if v is not None or k == "axis"}))


# ---------------------------------------------------------------- np.array of mixed numbers

def mixed_number_arrays(b: int, x: float, t: bool):
    return (np.array([b, 1.5]), np.asarray([b, b + 1, 0.5]), np.array([t, b]),
            np.array([[b, x], [t, 2]]), np.array([t, x], dtype=np.float32),
            np.array(object=[b, x], dtype=np.int64), np.asarray(a=[t, 0.5]), np.array([b, b]))


def test_array_of_mixed_python_numbers_matches_numpy():
    check_calls(mixed_number_arrays, (1, 0.25, True), (2 ** 62 + 1, -0.0, False),
                (2 ** 60 + 2 ** 36 + 1, 1e300, True), (-7, float("nan"), False))


def test_mixed_list_outside_array_data_follows_list_rules():
    def list_variable(b: int):
        xs = [b, 1.5]
        return np.array(xs)

    def array_of_a_number_and_an_array(b: int, y: tsjit.Tensor):
        return np.array([b, y])

    for fn in (list_variable, array_of_a_number_and_an_array):
        with pytest.raises(tsjit.CompilationError, match="must have a single type"):
            tsjit.script(fn)
