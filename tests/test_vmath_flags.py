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
from test_nan_bits import (
    cos_,
    exp_,
    expm1_,
    log1p_,
    log2_,
    log10_,
    log_,
    power_three_halves,
    sin_,
    tanh_,
)

import tsjit
from tsjit.codegen import numpy_flags


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


def values_from(dtype, *kinds: str) -> np.ndarray:
    """Arguments of both signs: "denormal" (the smallest, a third of the smallest normal),
    "tiny" (normal numbers at which r^2 or 1/x would leave the normal range), "huge"."""
    info = np.finfo(dtype)
    tiny, top = float(info.tiny), float(info.max)
    pools = {"denormal": [float(info.smallest_subnormal), tiny / 3],
             "tiny": [tiny, tiny * 1.5, tiny * 2**20, 2.0**-70 if dtype == np.float32 else 1e-160],
             "huge": [top, top / 2, top / 2**20]}
    magnitudes = [v for kind in kinds for v in pools[kind]]
    return np.array(magnitudes + [-v for v in magnitudes], dtype)


def scripted_warm(fn, dtype):
    scripted = tsjit.script(fn)
    for _ in range(3):
        scripted(np.ones(37, dtype))
    return scripted


def reports_as_eagerly(fn, scripted, x, errstate) -> bool:
    """Assert the scripted call's result, warnings, handler calls and FloatingPointError
    are eager's; returns whether eager raised no error."""
    want = outcome(fn, (x.copy(),), errstate)
    got = outcome(scripted, (x.copy(),), errstate)
    assert want[1:] == got[1:], x[0]
    if isinstance(want[0], tuple):
        assert got[0] == want[0], x[0]
        return False
    with np.errstate(invalid="ignore"):  # (the ulp tolerance of an infinite result)
        assert_same(got[0], want[0], ulps=4)
    return not want[1] and not want[2]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [tanh_, log_, log2_, log10_, log1p_], ids=lambda f: f.__name__)
def test_tiny_and_huge_arguments_raise_what_numpy_raises(fn, dtype):
    """tanh's expm1(2|x|) raised underflow at tiny |x| (r^2) and overflow at the largest
    floats (LLVM doubled |x| before the saturating select); the log family divided every
    lane by x for log(0)'s divide-by-zero, which underflowed at the largest floats; log1p of
    a denormal missed the underflow NumPy's loop raises (where it does: numpy_flags)."""
    scripted = scripted_warm(fn, dtype)
    for value in values_from(dtype, "denormal", "tiny", "huge"):
        x = np.full(37, value, dtype)
        before = scripted.stats()["bailouts"]
        if reports_as_eagerly(fn, scripted, x, {"all": "raise"}):  # NumPy quiet: no re-run
            assert scripted.stats()["bailouts"] == before, value
    assert scripted.stats()["kernel_launches"] > 0


def quiet_at_denormals(name: str, dtype) -> bool:
    return not numpy_flags.underflows_at_denormals(name, np.dtype(dtype).name)


EXP_FAMILY = [(exp_, "exp"), (expm1_, "expm1"), (sigmoid_, "exp")]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn, name", EXP_FAMILY, ids=lambda p: getattr(p, "__name__", ""))
def test_tiny_arguments_of_the_exp_family_report_as_numpy(fn, name, dtype):
    """Denormal and tiny arguments: the scripted call reports exactly NumPy's errors, and
    where NumPy's loop is quiet at denormals (numpy_flags) no normal argument raises a flag
    (exp's r^2 underflowed below 2**-63 float32 / 2**-511 float64)."""
    scripted = scripted_warm(fn, dtype)
    for value in values_from(dtype, "denormal", "tiny"):
        x = np.full(37, value, dtype)
        before = scripted.stats()["bailouts"]
        quiet = reports_as_eagerly(fn, scripted, x, {"all": "raise"})
        reports_as_eagerly(fn, scripted, x, {"under": "warn"})
        if quiet and quiet_at_denormals(name, dtype) and abs(value) >= np.finfo(dtype).tiny:
            assert scripted.stats()["bailouts"] == before, value


def inverse_cube(a): return a ** -3.0 * 1.0


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("fn", [sin_, cos_, power_three_halves, inverse_cube],
                         ids=lambda f: f.__name__)
def test_zeros_infinities_and_huge_arguments_of_pow_and_trig_raise_what_numpy_raises(fn, dtype):
    """sin and cos reduced huge arguments inline too (a result thrown away, but its
    overflow and invalid flags stayed); pow took log(0)'s divide by zero for every power
    of 0 and y * log|x| - p gave inf - inf at 0 and inf (invalid); 0 ** negative keeps
    its divide by zero."""
    scripted = scripted_warm(fn, dtype)
    special = np.array([0.0, -0.0, np.inf, -np.inf, 2.0], dtype)
    for value in np.concatenate([special, values_from(dtype, "huge")]):
        x = np.full(37, value, dtype)
        before = scripted.stats()["bailouts"]
        if reports_as_eagerly(fn, scripted, x, {"all": "raise"}):
            assert scripted.stats()["bailouts"] == before, value
    assert scripted.stats()["kernel_launches"] > 0
