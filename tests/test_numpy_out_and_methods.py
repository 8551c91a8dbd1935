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


def test_out_call_fuses_into_a_kernel_writing_into_out():
    """The check sits before the kernel; the kernel computes the sum and writes it into c
    (an operand computed by another op would have to pass the check, which may raise, so
    it stays out of the kernel: see the report on fusing through ufunc::out_check)."""
    a, b, c = np.ones(64, F32), np.full(64, 0.5, F32), np.zeros(64, F32)
    scripted = check_calls(add_into, (a, b, c))
    graph = scripted.graph_for(a, b, c)
    FileCheck().check("ufunc::out_check").check("prim::FusionGroup_0(%a, %b, %c)") \
        .check("return (%c)").check("with prim::FusionGroup_0").check("numpy::add(%a, %b") \
        .check("aten::__setitem__(%c,").run(graph)
    assert scripted(a, b, c) is c
    assert scripted.stats()["kernel_launches"] > 0
