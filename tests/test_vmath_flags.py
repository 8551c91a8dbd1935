"""Floating-point flags of the fused math functions (issue 8, item 4).

A value NumPy computes without an error raises no flag in the kernel: a spurious flag is
never a wrong report (the kernel's ops then re-run in NumPy, which reports what it raises)
but it costs that re-run. Every special value (zeros, infinities, NaNs, the ends of each
function's range) that NumPy computes quietly under errstate(all="raise") must run in the
kernel with no bailout, in vector lanes and in a loop's tail.

And where eager code does raise, the scripted call reports the same: the sigmoid written
out, 1 / (1 + exp(-x)), overflows in exp for x below about -89 (float32), -709 (float64)
or -11 (float16), which eager NumPy reports (a warning, FloatingPointError, the seterrcall
handler) even though the result, 0, is exact.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from _differential import assert_same
from test_nan_bits import exp_, expm1_, log1p_, log2_, log10_, log_, sin_, tanh_

import tsjit


def sigmoid_(a): return 1.0 / (1.0 + np.exp(-a))


FUNCTIONS = [exp_, expm1_, log_, log1p_, log2_, log10_, tanh_, sigmoid_, sin_]


def candidates() -> list[float]:
    """Zeros, infinities, NaNs of both signs, ordinary values and the ends of exp's range.
    Not yet denormals and the smallest normals (exp, tanh and sigmoid raise underflow in
    r*r), the largest floats (log's 1/x underflows) nor trig's huge arguments."""
    return [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 0.5, -2.0, 3.0,
            88.5, -88.5, 89.5, -103.0, -105.0, 700.0, -700.0, -745.0, 20.0, -20.0]


def quiet_values(fn, dtype) -> np.ndarray:
    """The candidates for which NumPy raises no floating-point error."""
    kept = []
    for value in candidates():
        with np.errstate(all="ignore"):
            x = np.array([value], dtype)
        try:
            with np.errstate(all="raise"):
                fn(x)
        except FloatingPointError:
            continue
        kept.append(x[0])
    return np.array(kept, dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_values_numpy_computes_quietly_raise_no_flag(fn, dtype):
    values = quiet_values(fn, dtype)
    x = np.resize(values, 16 * values.size + 3)   # every value in vector lanes and the tail
    scripted = tsjit.script(fn)
    for _ in range(3):
        scripted(np.ones(x.size, dtype))
    assert scripted.stats()["kernel_launches"] > 0
    before = scripted.stats()["bailouts"]
    with np.errstate(all="raise"):
        got = scripted(x)
    want = fn(x)
    assert scripted.stats()["bailouts"] == before, values
    assert got.dtype == want.dtype
    assert np.array_equal(np.isnan(got), np.isnan(want))


def fifth_power(a): return a ** 5 * 1.0


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_negative_bases_to_integer_powers_raise_no_flag(dtype):
    """pow made the invalid operation's NaN (sqrt of x) on every negative base and kept
    it only for non-integer exponents: (-2.0) ** 5 raised invalid."""
    x = np.resize(np.array([-2.0, -1.0, -0.5, -3.0, 1.5, 2.0], dtype), 37)
    scripted = tsjit.script(fifth_power)
    for _ in range(3):
        scripted(np.ones(x.size, dtype))
    with np.errstate(all="raise"):
        assert_same(scripted(x), fifth_power(x), ulps=4)
    assert scripted.stats()["kernel_launches"] > 0
    assert scripted.stats()["bailouts"] == 0


def sigmoid_into(x, out):
    out[:] = 1.0 / (1.0 + np.exp(-x))
    return out


# Below each threshold exp(-x) overflows; the others are ordinary values, -0.0 and -inf
# (exp(inf) is exact: no overflow).
SIGMOID_ARGUMENTS = {np.float16: [-11.5, -12.0, -100.0, -3.0, 5.0, -0.0, -np.inf, 11.0],
                     np.float32: [-89.5, -100.0, -1e30, -3.0, 5.0, -0.0, -np.inf, 88.0],
                     np.float64: [-710.0, -1e300, -1000.0, -3.0, 5.0, -0.0, -np.inf, 700.0]}
ERRSTATES = [{}, {"over": "raise"}, {"all": "raise"}, {"all": "ignore"}, {"over": "warn"},
             {"over": "call"}]


def outcome(fn, args, errstate):
    """fn's result (or FloatingPointError and its message's first line), its warnings and
    the seterrcall handler's calls."""
    calls = []
    with warnings.catch_warnings(record=True) as caught, \
            np.errstate(**errstate, call=lambda kind, flag: calls.append((kind, flag))):
        warnings.simplefilter("always")
        try:
            result = fn(*args)
        except FloatingPointError as error:
            result = (FloatingPointError, str(error).splitlines()[0])
    return result, [(w.category, str(w.message)) for w in caught], calls


@pytest.mark.parametrize("errstate", ERRSTATES, ids=lambda e: repr(e))
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("size", [1, 37, 1000])
def test_sigmoid_reports_the_overflow_of_exp_as_eagerly(size, dtype, errstate):
    values = np.resize(np.array(SIGMOID_ARGUMENTS[dtype], dtype), size)
    values[0] = SIGMOID_ARGUMENTS[dtype][0]   # an overflowing element in every size
    scripted = tsjit.script(sigmoid_)
    for _ in range(3):
        scripted(np.zeros(size, dtype))
    want = outcome(sigmoid_, (values.copy(),), errstate)
    got = outcome(scripted, (values.copy(),), errstate)
    assert scripted.stats()["kernel_launches"] > 0
    assert want[1:] == got[1:]
    assert want[1] or want[2] or isinstance(want[0], tuple) or errstate == {"all": "ignore"}
    if isinstance(want[0], tuple):
        assert got[0] == want[0]
    else:
        assert_same(got[0], want[0], ulps=4)


@pytest.mark.parametrize("errstate", [e for e in ERRSTATES if "raise" not in e.values()],
                         ids=lambda e: repr(e))
def test_sigmoid_into_an_array_reports_the_overflow_as_eagerly(errstate):
    """An in-place kernel cannot re-run in NumPy: its flags are reported on the first op,
    in eager order, that raises them (exp here)."""
    values = np.resize(np.array(SIGMOID_ARGUMENTS[np.float32], np.float32), 100)
    scripted = tsjit.script(sigmoid_into)
    for _ in range(3):
        scripted(np.zeros(100, np.float32), np.empty(100, np.float32))
    want = outcome(sigmoid_into, (values, np.empty(100, np.float32)), errstate)
    got = outcome(scripted, (values, np.empty(100, np.float32)), errstate)
    assert scripted.stats()["kernel_launches"] > 0
    assert want[1:] == got[1:]
    assert_same(got[0], want[0], ulps=4)
