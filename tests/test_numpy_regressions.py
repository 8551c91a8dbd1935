"""Regressions found by a differential sweep of NumPy usage in script code: each function
runs eagerly and scripted on fresh equal arguments (profiling call, optimized calls), and
results, argument side effects and raised exception classes must match."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tsjit
from tests._differential import assert_same


def check_calls(fn, *argument_tuples, repeat: int = 3) -> dict:
    """Compare `fn` eager and scripted on copies of each argument tuple, `repeat` times
    each; return the scripted function's stats()."""
    scripted = tsjit.script(fn)
    for args in argument_tuples:
        for _ in range(repeat):
            eager_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            script_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                try:
                    want = fn(*eager_args)
                except Exception as e:      # noqa: BLE001  (the class is compared)
                    with pytest.raises(type(e)):
                        scripted(*script_args)
                    continue
                got = scripted(*script_args)
            assert_same(got, want)
            assert_same(script_args, eager_args, "arguments")
    return scripted.stats()


def triangles_of_vector(x: tsjit.Tensor):
    t = np.tril(x)
    return t * 2.0 + np.triu(x, 1), t.shape


@pytest.mark.parametrize("x", [np.arange(1.0, 4.0), np.arange(1, 4)])
def test_tril_of_a_vector_is_a_matrix_and_its_guards_hold(x):
    """np.tril/np.triu of a 1-d array give the square matrix; the type rule said the
    vector's sizes, so every optimized call failed its guard and ran the fallback."""
    assert check_calls(triangles_of_vector, (x,), repeat=4)["guard_failures"] == 0


def nan_to_num_in_place(x: tsjit.Tensor):
    clean = np.nan_to_num(x * 2.0, nan=-1.0, posinf=9.0)
    return clean, np.nan_to_num(x, copy=False), x


def argmax_coordinates(x: tsjit.Tensor):
    r, c = np.unravel_index(x.argmax(), x.shape)
    return r, c, x[r, c]


def lookups(x: tsjit.Tensor, xp: tsjit.Tensor, fp: tsjit.Tensor):
    return (np.interp(x, xp, fp), np.interp(0.5, xp, fp), np.digitize(x, xp),
            np.isin(x, xp), np.polyval(fp, x), np.convolve(x, fp), np.cross(xp, fp))


def reshapes(x: tsjit.Tensor):
    left, right = np.hsplit(x, 2)
    return (np.rot90(x), np.pad(x, 1, mode="edge"), np.pad(x, (1, 0), constant_values=-1),
            np.resize(x, (3, 3)), np.insert(x, 1, 9), np.delete(x, 0, axis=0), left, right,
            np.tril_indices(x.shape[0]), np.logspace(0, 2, x.shape[1]))


def statistics(x: tsjit.Tensor):
    counts, edges = np.histogram(x, bins=3)
    v, ia, ib = np.intersect1d(x, x[::2], return_indices=True)
    return (counts, edges, np.cov(x), np.corrcoef(x, x * x), np.trapezoid(x, dx=0.5),
            np.partition(x, 1), np.argpartition(x, 0), np.union1d(x, x + 1), v, ia, ib,
            np.setdiff1d(x, x[:1]), np.select([x > 2], [x], default=-1), np.sinc(x))


@pytest.mark.parametrize("fn, argument_tuples", [
    (nan_to_num_in_place, [(np.array([np.nan, np.inf, -np.inf, 1.5]),),
                           (np.array([np.nan, 2.0], np.float32),), (np.arange(3),)]),
    (argmax_coordinates, [(np.array([[1.0, 9.0, 2.0], [4.0, 3.0, 0.0]]),),
                          (np.array([[1, 2], [7, 1]], np.int32),)]),
    (lookups, [(np.array([0.5, 1.5, 10.0]), np.arange(3.0), np.array([0.0, 10.0, 5.0])),
               (np.array([0, 1, 3]), np.arange(3), np.array([1, 2, 3], np.int8))]),
    (reshapes, [(np.arange(4.0).reshape(2, 2),), (np.arange(8).reshape(2, 4),)]),
    (statistics, [(np.array([3.0, 1.0, 2.5, 7.0]),), (np.array([1, 4, 3, 9]),)]),
])
def test_numpy_functions_that_were_not_supported(fn, argument_tuples):
    """np.nan_to_num, unravel_index, interp, digitize, isin, polyval, convolve, cross, rot90,
    pad, resize, insert, delete, hsplit, tril_indices, logspace, histogram, intersect1d,
    cov, corrcoef, trapezoid, partition, union1d, setdiff1d, select, sinc were rejected as
    unsupported in script code."""
    check_calls(fn, *argument_tuples)


def complex_bounds_and_operands(x: tsjit.Tensor):
    return (np.clip(x, 3j, 100), x.clip(1, 2j), np.maximum(x, 3j), np.add(x, 1j),
            np.minimum(3j, x) * 2, np.where(x > 1, 1j, x))


def test_a_python_complex_is_an_operand_of_numpy_functions():
    """np.clip(x, 3j, 100) (the tensor-program fuzzer) and np.maximum(x, 3j), np.add(x, 1j)
    compute complex results eagerly; script() refused them (a Python complex was not
    taken for an array or a number)."""
    check_calls(complex_bounds_and_operands, (np.array([1.0, 5.0, -2.0, 200.0, np.nan]),),
                (np.array([3, -1, 7], np.int16),), (np.array([0.5, 150.0], np.float32),))
