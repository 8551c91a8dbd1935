"""NaN bits as NumPy's (issue 8, item 5): where NumPy's result is NaN, a fused kernel gives
the same bits as NumPy on the running machine. Which NaN that is depends on the loops NumPy
dispatched for the CPU (tsjit.codegen.numpy_nans asks NumPy): an invalid operation's default
NaN (sign bit set on x86; some loops clear it: float64 log on AVX2, log10), the NaN
argument itself (sign and payload), or the positive default NaN for a NaN argument (float32
log, exp, tanh, sin, cos; float64 tanh). Compared as integers (.view), and through
np.signbit.
"""
from __future__ import annotations

import numpy as np
import pytest

import tsjit

UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}
# a quiet NaN with a payload, and its negation, per dtype
PAYLOAD_NANS = {np.float16: (0x7E03, 0xFE03), np.float32: (0x7FC00123, 0xFFC00123),
                np.float64: (0x7FF8000000000123, 0xFFF8000000000123)}


def log_(a): return np.log(a) * 1.0
def log1p_(a): return np.log1p(a) * 1.0
def log2_(a): return np.log2(a) * 1.0
def log10_(a): return np.log10(a) * 1.0
def power_three_halves(a): return a ** 1.5 * 1.0
def power_half(a): return a ** 0.5 * 1.0
def cube(a): return a ** 3 * 1.0   # multiplied in the kernel, pow in NumPy
def cube_of_abs(a): return np.abs(a) ** 3 * 1.0
def cube_of_negated(a): return (-a) ** 3 * 1.0
def sqrt_(a): return np.sqrt(a) * 1.0
def tanh_(a): return np.tanh(a) * 1.0
def exp_(a): return np.exp(a) * 1.0
def sin_(a): return np.sin(a) * 1.0
def cos_(a): return np.cos(a) * 1.0
def expm1_(a): return np.expm1(a) * 1.0


def abs_squared(a): return np.abs(a) ** 2 * 1.0
def negated_squared(a): return (-a) * (-a) * 1.0


def abs_times_itself(a):
    t = np.abs(a)
    return t * t + 0.0


def norm_of_abs(a):   # a row kernel: sqrt(sum(|a| * |a|)), one NaN pattern per row
    return np.linalg.norm(np.abs(a).reshape(13, -1), axis=-1) * 1.0


FUNCTIONS = [log_, log1p_, log2_, log10_, power_three_halves, power_half, sqrt_, tanh_, exp_,
             sin_, cos_, expm1_, abs_squared, negated_squared, abs_times_itself]


def arguments(dtype) -> np.ndarray:
    positive, negative = PAYLOAD_NANS[dtype]
    nans = np.array([positive, negative], dtype=UINT[np.dtype(dtype).itemsize]).view(dtype)
    values = np.array([-2.0, -1.0, -0.5, -np.inf, np.inf, 0.0, -0.0, 1.5], dtype=dtype)
    return np.tile(np.concatenate([values, nans]), 13)   # vector loop and tail


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_nan_results_have_numpys_bits(fn, dtype):
    check_nan_bits(fn, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_row_kernels_nans_have_numpys_bits(dtype):
    """LLVM rewrites fabs(y) * fabs(y) as y * y, which keeps a NaN y's sign."""
    check_nan_bits(norm_of_abs, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [cube, cube_of_abs, cube_of_negated])
def test_a_cube_has_the_nan_of_numpys_pow(fn, dtype):
    """x ** 3 is x * x * x in the kernel, which keeps a NaN's sign; NumPy's pow clears it
    (glibc's, on this machine: asked of NumPy). Found by the fusion fuzzer. Where it does,
    the products are plain and one select sets the NaN: LLVM may take the NaN of
    |y| * |y| or -y * -y from y, which the select overrides."""
    check_nan_bits(fn, dtype)


def check_nan_bits(fn, dtype):
    x = arguments(dtype)
    with np.errstate(all="ignore"):
        scripted = tsjit.script(fn)
        for _ in range(3):
            got = scripted(x)
        want = fn(x)
    assert scripted.stats()["kernel_launches"] > 0
    assert got.dtype == want.dtype
    bits = UINT[want.dtype.itemsize]
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got.view(bits)[nan], want.view(bits)[nan]), \
        [hex(v) for v in got.view(bits)[nan][:10]]
    assert np.array_equal(np.signbit(got), np.signbit(want))


def test_numpys_nans_are_part_of_the_disk_cache_key():
    """Kernels copy NumPy's NaNs, so an entry compiled under another NumPy (or CPU
    dispatch) that answers differently must not be loaded."""
    from tsjit.codegen import numpy_nans
    from tsjit.codegen.engine import get_engine

    assert f"numpy_nans={numpy_nans.fingerprint()}" in get_engine().host_key
