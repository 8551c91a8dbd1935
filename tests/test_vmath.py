"""Accuracy and vectorization of the inline math library (tsjit.codegen.vmath).

Each function runs through a real JIT-compiled, vectorized loop (tests/_llvm_harness.py) and
is compared against a higher-precision reference: float32 results against NumPy's float64
function rounded to float32, float64 results against NumPy's 80-bit long double. The error
measure is the distance in units in the last place between the result and the rounded
reference, counted on the integer views of the two floats (sign-aware, so -0 and +0 are 0
apart and crossing zero counts every float in between). Rounding the reference can add half
an ulp to the measured distance: the 4-ulp bound asserted here is stricter than 4 ulp.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from _llvm_harness import MathKernels, arity
from llvmlite import ir

from tsjit.codegen import vmath

MAX_ULP = 4
DTYPES = (np.float32, np.float64)


@dataclass(frozen=True)
class Case:
    """How to check one function: its reference and the interval where it varies most."""

    reference: Callable[..., np.ndarray]
    interval: dict[type, tuple[float, float]]
    numpy_specials: bool = True  # special values must agree with NumPy's own function


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


CASES: dict[str, Case] = {
    "exp": Case(np.exp, {np.float32: (-105, 90), np.float64: (-746, 710)}),
    "expm1": Case(np.expm1, {np.float32: (-20, 90), np.float64: (-40, 710)}),
    "log": Case(np.log, {np.float32: (0, 4), np.float64: (0, 4)}),
    "log2": Case(np.log2, {np.float32: (0, 4), np.float64: (0, 4)}),
    "log10": Case(np.log10, {np.float32: (0, 4), np.float64: (0, 4)}),
    "log1p": Case(np.log1p, {np.float32: (-1, 3), np.float64: (-1, 3)}),
    "tanh": Case(np.tanh, {np.float32: (-10, 10), np.float64: (-20, 20)}),
    # sigmoid follows the formula's exact value, not NumPy's float32 evaluation of it (which
    # flushes to 0 where exp(-x) overflows while the true value is still a denormal).
    "sigmoid": Case(_sigmoid, {np.float32: (-105, 20), np.float64: (-746, 40)}, False),
    "sqrt": Case(np.sqrt, {np.float32: (0, 10), np.float64: (0, 10)}),
}


@pytest.fixture(scope="module", params=DTYPES, ids=lambda d: np.dtype(d).name)
def kernels(request) -> MathKernels:
    return MathKernels(request.param, sorted(vmath.SUPPORTED))


def reference(name: str, *inputs: np.ndarray) -> np.ndarray:
    """The function's value in higher precision, rounded to the inputs' dtype."""
    dtype = inputs[0].dtype
    wide = np.float64 if dtype == np.float32 else np.longdouble
    with np.errstate(all="ignore"):
        return CASES[name].reference(*(a.astype(wide) for a in inputs)).astype(dtype)


def ulp_distance(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Number of representable floats between got and want (0 when both are NaN, inf when
    only one is)."""
    signed = np.int32 if got.dtype == np.float32 else np.int64
    unsigned = np.uint32 if got.dtype == np.float32 else np.uint64
    magnitude_mask = np.iinfo(signed).max

    def ordered(a: np.ndarray) -> np.ndarray:  # monotone map float -> integer, -0 == +0
        bits = a.view(signed)
        return np.where(bits < 0, -(bits & magnitude_mask), bits)

    g, w = ordered(got), ordered(want)
    # The difference of two ordered keys may not fit the signed type; its magnitude fits
    # the unsigned one, where wrap-around subtraction of the smaller key is exact.
    distance = np.where(g >= w, g.view(unsigned) - w.view(unsigned),
                        w.view(unsigned) - g.view(unsigned)).astype(np.float64)
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    distance[nan_got & nan_want] = 0.0
    distance[nan_got ^ nan_want] = np.inf
    return distance


def assert_accurate(kernels: MathKernels, name: str, *inputs: np.ndarray) -> None:
    got = kernels(name, *inputs)
    want = reference(name, *inputs)
    distance = ulp_distance(got, want)
    worst = int(np.argmax(distance))
    assert distance[worst] <= MAX_ULP, (
        f"{name}{tuple(a[worst] for a in inputs)} = {got[worst]!r}, reference {want[worst]!r}: "
        f"{distance[worst]} ulp"
    )


def all_magnitudes(dtype: type, count: int) -> np.ndarray:
    """Evenly spaced bit patterns through every finite float of both signs (denormals and
    every binade included), plus the extremes."""
    info = np.finfo(dtype)
    bits = np.dtype(dtype).itemsize * 8
    unsigned = np.uint32 if bits == 32 else np.uint64
    top = int(np.array(info.max, dtype).view(unsigned))
    positive = np.linspace(0, top, count, dtype=np.float64).astype(unsigned).view(dtype)
    return np.concatenate([positive, -positive])


def special_values(dtype: type) -> np.ndarray:
    info = np.finfo(dtype)
    tiny = info.smallest_subnormal
    values = [0.0, np.inf, np.nan, 1.0, 0.5, 2.0, 10.0, tiny, 2 * tiny, info.smallest_normal,
              info.smallest_normal - tiny, info.eps, info.max, np.pi, 1e-3, 1e3]
    values += [float(np.nextafter(dtype(v), dtype(np.inf))) for v in (1.0, -1.0)]
    values += [float(np.nextafter(dtype(v), dtype(-np.inf))) for v in (1.0, -1.0)]
    values += [float(np.log(info.max)), float(np.log(tiny)), 88.72, 709.78, -745.13, -103.97]
    values = np.array(values, dtype=dtype)
    return np.concatenate([values, -values])


def random_bits(dtype: type, count: int, seed: int) -> np.ndarray:
    unsigned = np.uint32 if np.dtype(dtype).itemsize == 4 else np.uint64
    rng = np.random.default_rng(seed)
    return rng.integers(0, np.iinfo(unsigned).max, count, dtype=unsigned, endpoint=True).view(dtype)


def unary_names() -> list[str]:
    return [name for name in CASES if arity(name) == 1]


@pytest.mark.parametrize("name", unary_names())
def test_dense_sweep_of_the_interesting_interval(kernels: MathKernels, name: str) -> None:
    lo, hi = CASES[name].interval[kernels.dtype.type]
    assert_accurate(kernels, name, np.linspace(lo, hi, 300_001, dtype=kernels.dtype))


@pytest.mark.parametrize("name", unary_names())
def test_sweep_of_every_binade(kernels: MathKernels, name: str) -> None:
    assert_accurate(kernels, name, all_magnitudes(kernels.dtype.type, 200_000))


@pytest.mark.parametrize("name", unary_names())
def test_random_bit_patterns(kernels: MathKernels, name: str) -> None:
    assert_accurate(kernels, name, random_bits(kernels.dtype.type, 200_000, seed=len(name)))


@pytest.mark.parametrize("name", unary_names())
def test_special_values_agree_with_numpy(kernels: MathKernels, name: str) -> None:
    x = special_values(kernels.dtype.type)
    got = kernels(name, x)
    assert_accurate(kernels, name, x)
    want = reference(name, x)
    if CASES[name].numpy_specials:
        with np.errstate(all="ignore"):
            want = CASES[name].reference(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    exact = np.isinf(want) | (want == 0)
    np.testing.assert_array_equal(got[exact], want[exact])
    np.testing.assert_array_equal(np.signbit(got[exact]), np.signbit(want[exact]))


def test_float32_loop_is_vectorized(kernels: MathKernels) -> None:
    lanes = "<16 x float>" if kernels.dtype == np.float32 else "<8 x double>"
    for name in sorted(vmath.SUPPORTED):
        assert lanes in kernels.function_ir(name), f"{name} {kernels.dtype} not vectorized"


def test_every_supported_function_is_tested() -> None:
    assert set(CASES) == set(vmath.SUPPORTED)


def test_rejects_what_it_cannot_emit() -> None:
    signature = ir.FunctionType(ir.VoidType(), [ir.FloatType(), ir.IntType(32)])
    fn = ir.Function(ir.Module(), signature, "f")
    builder = ir.IRBuilder(fn.append_basic_block())
    with pytest.raises(TypeError):
        vmath.emit_math(builder, "exp", [fn.args[1]])
    with pytest.raises(ValueError):
        vmath.emit_math(builder, "exp", [fn.args[0], fn.args[0]])
    with pytest.raises(ValueError):
        vmath.emit_math(builder, "no_such_function", [fn.args[0]])
