"""Accuracy and vectorization of the inline math library (tsjit.codegen.vmath).

Each function runs through a real JIT-compiled, vectorized loop (tests/_llvm_harness.py) and
is compared against a higher-precision reference rounded to the tested dtype: for float32,
NumPy's float64 function (math.erf for erf); for float64, NumPy's 80-bit long double
function (glibc's long double libm; a long double series for erf). The error is the number
of floats between the result and that correctly rounded reference, counted on the integer
views of the two (sign-aware: -0 and +0 are 0 apart, and crossing zero counts every float
in between); NaN must meet NaN.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from _llvm_harness import MathKernels, arity
from llvmlite import binding as llvm
from llvmlite import ir

from tsjit.codegen import vmath, vmath_poly, vmath_trig

MAX_ULP = 4
DTYPES = (np.float32, np.float64)
LONG_PI = np.longdouble("3.14159265358979323846264338327950288")


@dataclass(frozen=True)
class Case:
    """How to check one function: its reference and the interval where it varies most."""

    reference: Callable[..., np.ndarray]
    interval: dict[type, tuple[float, float]]
    numpy_specials: bool = True  # special values must agree with NumPy's own function


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _erf(x: np.ndarray) -> np.ndarray:
    """erf in the precision of x: math.erf for float64 input. For long double, between
    2**-20 and 3 the series 2/sqrt(pi) exp(-x^2) sum 2^n x^(2n+1) / (2n+1)!! (all terms
    positive; 55 terms reach 1e-21 at 3); below, its first two terms; above 3, 1 - erfc with
    erfc < 2.3e-5 from math.erfc, whose error is then far below an ulp of the result."""
    if x.dtype == np.float64:
        return np.vectorize(math.erf, otypes=[np.float64])(x)
    ax = np.abs(x)
    result = 2 / np.sqrt(LONG_PI) * ax * (1 - ax * ax / 3)
    large = ax >= 3
    erfc = np.vectorize(math.erfc, otypes=[np.float64])(ax[large].astype(np.float64))
    result[large] = 1 - erfc.astype(np.longdouble)
    middle = (ax >= 2.0**-20) & ~large
    term = total = ax[middle]
    for n in range(1, 56):
        term = term * (2 * ax[middle] ** 2) / (2 * n + 1)
        total = total + term
    result[middle] = 2 / np.sqrt(LONG_PI) * np.exp(-ax[middle] ** 2) * total
    return np.copysign(result, x)


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
    "sin": Case(np.sin, {np.float32: (-1e4, 1e4), np.float64: (-1e4, 1e4)}),
    "cos": Case(np.cos, {np.float32: (-1e4, 1e4), np.float64: (-1e4, 1e4)}),
    "tan": Case(np.tan, {np.float32: (-1e4, 1e4), np.float64: (-1e4, 1e4)}),
    "arctan": Case(np.arctan, {np.float32: (-5, 5), np.float64: (-5, 5)}),
    "arctan2": Case(np.arctan2, {np.float32: (-5, 5), np.float64: (-5, 5)}),
    "pow": Case(np.power, {np.float32: (-20, 20), np.float64: (-20, 20)}),
    # NumPy has no erf; SciPy's float32 erf is not within 4 ulp, so only the reference.
    "erf": Case(_erf, {np.float32: (-5, 5), np.float64: (-7, 7)}, False),
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
    step = int(np.array(info.max, dtype).view(unsigned)) // count
    positive = np.append((np.arange(count, dtype=unsigned) * unsigned(step)).view(dtype), info.max)
    return np.concatenate([positive, -positive])


def special_values(dtype: type) -> np.ndarray:
    info = np.finfo(dtype)
    tiny = info.smallest_subnormal
    values = [0.0, np.inf, np.nan, 1.0, 0.5, 2.0, 3.0, 10.0, tiny, 2 * tiny, info.smallest_normal,
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


def names_of_arity(n: int) -> list[str]:
    return [name for name in CASES if arity(name) == n]


@pytest.mark.parametrize("name", names_of_arity(1))
def test_dense_sweep_of_the_interesting_interval(kernels: MathKernels, name: str) -> None:
    lo, hi = CASES[name].interval[kernels.dtype.type]
    assert_accurate(kernels, name, np.linspace(lo, hi, 300_001, dtype=kernels.dtype))


@pytest.mark.parametrize("name", names_of_arity(1))
def test_sweep_of_every_binade(kernels: MathKernels, name: str) -> None:
    assert_accurate(kernels, name, all_magnitudes(kernels.dtype.type, 200_000))


@pytest.mark.parametrize("name", sorted(CASES))
def test_random_bit_patterns(kernels: MathKernels, name: str) -> None:
    dtype = kernels.dtype.type
    inputs = [random_bits(dtype, 200_000, seed=len(name) + k) for k in range(arity(name))]
    assert_accurate(kernels, name, *inputs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_special_values_agree_with_numpy(kernels: MathKernels, name: str) -> None:
    """Every special value (every pair of them for two-argument functions): NaN exactly
    where NumPy's own function gives NaN; exact infinities and signed zeros."""
    values = special_values(kernels.dtype.type)
    inputs = tuple(g.ravel() for g in np.meshgrid(*[values] * arity(name)))
    assert_accurate(kernels, name, *inputs)
    got = kernels(name, *inputs)
    want = reference(name, *inputs)
    if CASES[name].numpy_specials:
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(np.isnan(got), np.isnan(CASES[name].reference(*inputs)))
    exact = np.isinf(want) | (want == 0)
    np.testing.assert_array_equal(got[exact], want[exact])
    np.testing.assert_array_equal(np.signbit(got[exact]), np.signbit(want[exact]))


TRIG = ["sin", "cos", "tan"]


@pytest.mark.parametrize("name", TRIG)
def test_trig_near_multiples_of_half_pi(kernels: MathKernels, name: str) -> None:
    """The floats nearest to k*pi/2 stress the Cody-Waite reductions' cancellation (and
    reach into Payne-Hanek's range)."""
    k = np.unique(np.geomspace(1, 2.0**40, 20_000).astype(np.int64))
    nearest = (k * LONG_PI / 2).astype(kernels.dtype)
    neighbours = [np.nextafter(nearest, kernels.dtype.type(d)) for d in (-np.inf, np.inf)]
    assert_accurate(kernels, name, np.concatenate([nearest, *neighbours]))


def log_uniform_magnitudes(dtype: type, low: float, count: int, seed: int,
                           high: float | None = None) -> np.ndarray:
    """Random finite floats of both signs from ``low`` up to ``high`` (default: the
    largest), every exponent about equally often, random mantissas."""
    rng = np.random.default_rng(seed)
    info = np.finfo(dtype)
    top = info.maxexp if high is None else int(np.log2(high))
    exponents = rng.integers(int(np.log2(low)), top, count)
    mantissas = rng.uniform(1, 2, count)
    values = np.ldexp(mantissas, exponents).astype(dtype)
    values = np.where(np.isfinite(values), values, info.max).astype(dtype)
    return values * rng.choice(np.array([-1, 1], dtype=dtype), count)


@pytest.mark.parametrize("name", TRIG)
def test_trig_of_huge_arguments(kernels: MathKernels, name: str) -> None:
    """Beyond the inline Cody-Waite limit, up to the largest float."""
    limit = vmath_trig.LIMIT[kernels.dtype.name]
    assert_accurate(kernels, name, log_uniform_magnitudes(kernels.dtype.type, limit, 200_000, 3))


def test_float32_trig_between_the_cody_waite_limits() -> None:
    """float32 arguments that the out-of-line code reduces by Cody-Waite in float64: whole
    vectors of them (random exponents up to the largest rarely fill a vector with them)."""
    kernels = MathKernels(np.float32, TRIG)
    x = log_uniform_magnitudes(np.float32, vmath_trig.LIMIT["float32"], 100_000, 4, 2.0**37)
    for name in TRIG:
        assert_accurate(kernels, name, x)


def hardest_trig_arguments(dtype: type) -> np.ndarray:
    """Floats x >= 1 of every binade that come nearest to a multiple of pi/2, with their
    neighbours. With x = M * 2**k (M an integer of p bits), x mod pi/2 is small when
    M * alpha is near an integer, alpha = frac(2**k * 2/pi). The denominators q of alpha's
    continued-fraction convergents make |q alpha - round(q alpha)| smallest for their size,
    so the first multiples of the last few q below 2**p in [2**(p-1), 2**p) are candidates
    (the worst double, 6381956970095103 * 2**797, is among them)."""
    p = np.finfo(dtype).nmant + 1
    words = vmath_poly.two_over_pi_words(21)
    bits = 64 * (len(words) - 1)
    two_over_pi = sum(w << (64 * (len(words) - 1 - i)) for i, w in enumerate(words))
    candidates = []
    for k in range(1 - p, np.finfo(dtype).maxexp - p + 1):
        # alpha = a / b, up to the truncation of 2/pi (hundreds of bits below 2**-2p)
        b = 1 << (bits + max(0, -k))
        a = (two_over_pi << max(0, k)) % b
        q_before, q = 0, 1
        denominators = []
        while a and q < 1 << p:
            denominators.append(q)
            whole, remainder = divmod(b, a)
            q_before, q = q, whole * q + q_before
            b, a = a, remainder
        for q in denominators[-4:]:
            m = -(-(1 << (p - 1)) // q) * q
            candidates += [math.ldexp(m + d, k) for d in (-1, 0, 1) if m < 1 << p]
    return np.array(candidates, dtype=dtype)


@pytest.mark.parametrize("name", TRIG)
def test_trig_of_the_hardest_arguments(kernels: MathKernels, name: str) -> None:
    x = hardest_trig_arguments(kernels.dtype.type)
    assert_accurate(kernels, name, np.concatenate([x, -x]))


@pytest.mark.parametrize("size", [1, 3, 17, 45])
def test_trig_of_huge_arguments_in_short_loops(kernels: MathKernels, size: int) -> None:
    """Loops shorter than a vector or with a remainder: the huge lanes go through the
    scalar function or the masked vector variants with a partial mask."""
    x = log_uniform_magnitudes(kernels.dtype.type, 1.0, size, size)
    for name in TRIG:
        assert_accurate(kernels, name, x)


def test_arctan2_sweep_of_angles_and_magnitudes(kernels: MathKernels) -> None:
    rng = np.random.default_rng(7)
    angle = rng.uniform(-np.pi, np.pi, 100_000)
    radius = np.exp(rng.uniform(-700, 700, 100_000)) if kernels.dtype == np.float64 else (
        np.exp(rng.uniform(-80, 80, 100_000)))
    y, x = (radius * np.sin(angle)).astype(kernels.dtype), (radius * np.cos(angle))
    assert_accurate(kernels, "arctan2", y, x.astype(kernels.dtype))


def test_pow_sweep(kernels: MathKernels) -> None:
    rng = np.random.default_rng(8)
    x = rng.uniform(0, 20, 200_000).astype(kernels.dtype)
    y = rng.uniform(-20, 20, 200_000).astype(kernels.dtype)
    assert_accurate(kernels, "pow", x, y)


def test_pow_near_overflow_and_underflow(kernels: MathKernels) -> None:
    """|y log x| near its limits, where the error of log x is multiplied most."""
    rng = np.random.default_rng(9)
    low, high = (-750, 712) if kernels.dtype == np.float64 else (-106, 90)
    x = rng.uniform(0.2, 3, 200_000).astype(kernels.dtype)
    y = (rng.uniform(low, high, 200_000) / np.log(x.astype(np.float64))).astype(kernels.dtype)
    assert_accurate(kernels, "pow", x, y)
    near_one = (1 + rng.uniform(-1e-3, 1e-3, 200_000)).astype(kernels.dtype)
    near_one[near_one == 1] = 2
    huge_y = (rng.uniform(low, high, 200_000) / np.log(near_one.astype(np.float64)))
    assert_accurate(kernels, "pow", near_one, huge_y.astype(kernels.dtype))


def test_pow_negative_bases(kernels: MathKernels) -> None:
    rng = np.random.default_rng(10)
    x = -rng.uniform(0, 4, 200_000).astype(kernels.dtype)
    integer_y = rng.integers(-300, 300, 200_000).astype(kernels.dtype)
    assert_accurate(kernels, "pow", x, integer_y)
    assert np.isnan(kernels("pow", x, integer_y + kernels.dtype.type(0.5))).all()


def test_loops_are_vectorized(kernels: MathKernels) -> None:
    """As many lanes as the host's widest registers hold (512 bits with AVX-512, else 256:
    the harness prefers 512 as the engine does), or 8 float32 lanes (float32 pow takes 8 on
    AVX-512)."""
    register_bits = 512 if llvm.get_host_cpu_features().get("avx512f", False) else 256
    full = register_bits // (kernels.dtype.itemsize * 8)
    element = "float" if kernels.dtype == np.float32 else "double"
    lanes = {f"<{full} x {element}>"} | ({"<8 x float>"} if element == "float" else set())
    for name in sorted(vmath.SUPPORTED):
        code = kernels.function_ir(name)
        assert any(t in code for t in lanes), f"{name} {kernels.dtype} not vectorized"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_trig_in_256_bit_loops(dtype: type) -> None:
    """Loops vectorized for 256-bit registers (AVX2 hosts) call the narrower variants."""
    narrow = MathKernels(dtype, TRIG, vector_bits=256)
    x = np.concatenate([log_uniform_magnitudes(dtype, 1.0, 50_001, 6),
                        random_bits(dtype, 50_000, 7)])
    for name in TRIG:
        assert re.search(rf"call [^\n]*<(4|8) x (float|double)> @tsjit_vmath_{name}_",
                         narrow.function_ir(name))
        assert_accurate(narrow, name, x)


@pytest.mark.parametrize("name", TRIG)
def test_huge_trig_lanes_take_a_vector_call(kernels: MathKernels, name: str) -> None:
    """The vector loop reaches the out-of-line code through a masked vector variant, once
    per vector, not through scalar calls; also with one trig function alone in a module,
    as a kernel usually has it (interprocedural constant propagation must not break the
    variants' signatures)."""
    alone = MathKernels(kernels.dtype, [name])
    for compiled in (kernels, alone):
        code = compiled.function_ir(name)
        assert re.search(rf"call [^\n]*<\d+ x (float|double)> @tsjit_vmath_{name}_", code)
    x = log_uniform_magnitudes(kernels.dtype.type, 1.0, 10_000, 8)
    assert_accurate(alone, name, x)


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
