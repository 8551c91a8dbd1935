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
