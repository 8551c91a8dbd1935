"""Regressions found by a robustness sweep of tsjit.trace and save/load."""
from __future__ import annotations

import warnings

import numpy as np
from _differential import assert_same

import tsjit
from tsjit.api.tracer import TracerWarning

RNG = np.random.default_rng(7)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


# ---- trace

WEIGHT = rand(3, 3)


def closed_over_weight_times_input(x):
    return WEIGHT @ x + np.matmul(x, WEIGHT)


def test_matmul_with_an_untraced_left_operand_is_recorded():
    """ndarray @ tracer reaches the tracer as the gufunc np.matmul, which has an op but no
    elementwise ufunc form: it was refused as unsupported."""
    traced = tsjit.trace(closed_over_weight_times_input, rand(3, 3))
    for _ in range(3):
        x = rand(3, 3)
        assert_same(traced(x), closed_over_weight_times_input(x))


def divmod_both_ways(x):
    q, r = divmod(x, 2.0)
    q2, r2 = divmod(3.0, x)
    return q + r2, r * q2


def test_divmod_of_a_traced_array_is_recorded():
    traced = tsjit.trace(divmod_both_ways, rand(5))
    x = rand(5)
    assert_same(traced(x), divmod_both_ways(x))


def round_of_a_sum(x):
    return x * round(x.sum(), 1)


def test_round_of_a_traced_scalar_is_recorded():
    traced = tsjit.trace(round_of_a_sum, rand(4))
    x = rand(4)
    assert_same(traced(x), round_of_a_sum(x))


def fill_a_copy(x):
    y = x.copy()
    y.fill(2.0)
    return y + x


def test_in_place_method_returning_none_freezes_nothing():
    """x.fill() returns None: it warned that a value computed from arrays was frozen."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracerWarning)
        traced = tsjit.trace(fill_a_copy, rand(4))
    x = rand(4)
    assert_same(traced(x), fill_a_copy(x))
