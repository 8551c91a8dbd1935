"""Regressions found by differential fuzzing of the fused native path: each function runs
eagerly and scripted on equal fresh arguments, for the profiling call, optimized calls and
a call whose guard fails, and every result and argument must match NumPy bitwise (the
sign of zero included; NaN where NumPy has NaN, of any sign)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_fuzz_fusion import run

import tsjit


def assert_bitwise(got: np.ndarray, want: np.ndarray) -> None:
    assert type(got) is type(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    assert np.array_equal(got, want, equal_nan=True), (got, want)
    numbers = ~np.isnan(want) if want.dtype.kind == "f" else np.ones(want.shape, bool)
    assert np.array_equal(np.signbit(got)[numbers], np.signbit(want)[numbers]), (got, want)


def check_calls(fn, *make_args) -> dict:
    """Compare `fn` eager and scripted: each argument builder three times (profiling,
    optimized, optimized), the first again after the others (their guards failed it)."""
    scripted = tsjit.script(fn)
    for make in [*(m for m in make_args for _ in range(3)), make_args[0]]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want, got = fn(*make()), scripted(*make())
        assert_bitwise(got, want)
    return scripted.stats()


SIGNED_ZEROS = [-0.0, 0.0, np.nan, 2.0, -3.0, -np.inf, 0.25]


def zeros_and_nans(dtype, n: int = 37) -> np.ndarray:
    return np.resize(np.array(SIGNED_ZEROS, dtype), n)


def clip_to_unit(x: tsjit.Tensor) -> tsjit.Tensor:
    return np.clip(x * 1.0, 0.0, 1.0)


def clip_from_negative_zero(x: tsjit.Tensor) -> tsjit.Tensor:
    return np.clip(x + 0.0, -0.0, 0.0)


def clip_by_scalar_arguments(x: tsjit.Tensor, lo: float, hi: float) -> tsjit.Tensor:
    return (x * 1.0).clip(lo, hi)


def clip_by_arrays(x: tsjit.Tensor, lo: tsjit.Tensor, hi: tsjit.Tensor) -> tsjit.Tensor:
    return np.clip(x * 1.0, lo, hi)


@pytest.mark.parametrize("fn", [clip_to_unit, clip_from_negative_zero])
def test_clip_with_scalar_bounds_keeps_x_on_signed_zero_ties(fn):
    """NumPy's clip loop with two scalar bounds keeps x when x equals a bound
    (clip(-0.0, 0.0, 1.0) is -0.0); the kernel gave the bound."""
    stats = check_calls(fn, lambda: [zeros_and_nans(np.float64)],
                        lambda: [zeros_and_nans(np.float32)],
                        lambda: [zeros_and_nans(np.float32, 3)[::-1]])
    assert stats["kernel_launches"] > 0


def test_clip_with_scalar_arguments_as_bounds():
    stats = check_calls(clip_by_scalar_arguments,
                        lambda: [zeros_and_nans(np.float64), 0.0, -0.0],
                        lambda: [zeros_and_nans(np.float32).reshape(1, -1), -0.0, 0.0],
                        lambda: [zeros_and_nans(np.float64), 1.0, 0.0])
    assert stats["kernel_launches"] > 0


def test_clip_with_bound_arrays_gives_the_bound_on_ties():
    """With bound arrays NumPy's other loop gives the bound on ties: both loops coexist."""
    def arguments():
        x = zeros_and_nans(np.float64)
        return [x, np.resize(np.array([0.0, -0.0]), x.size), np.full(x.size, 0.0)]
    stats = check_calls(clip_by_arrays, arguments)
    assert stats["kernel_launches"] > 0


def augmented_bitwise_ints(a: int, b: int) -> int:
    a &= b
    a |= 12
    a ^= b
    return a


def augmented_bitwise_arrays(x: tsjit.Tensor, y: tsjit.Tensor) -> tsjit.Tensor:
    x &= y
    x |= y
    x ^= y
    return x


def test_augmented_bitwise_operators_run():
    """`&=`, `|=` and `^=` named operator.iand_ (no such function): every call raised
    AttributeError, except the array calls a kernel served."""
    scripted = tsjit.script(augmented_bitwise_ints)
    assert scripted(5, 3) == augmented_bitwise_ints(5, 3)
    for x, y in [(np.array([True, False, True]), np.array([True, True, False])),
                 (np.arange(5), np.arange(5)[::-1].copy())]:
        want_x, got_x = x.copy(), x.copy()
        want = augmented_bitwise_arrays(want_x, y)
        got = tsjit.script(augmented_bitwise_arrays)(got_x, y)
        assert got is got_x
        assert_bitwise(got, want)
        assert_bitwise(got_x, want_x)


def fmax_of_magnitude(x: tsjit.Tensor, y: tsjit.Tensor) -> tsjit.Tensor:
    return np.fmax(np.abs(x), y)


def fmin_of_magnitude(x: tsjit.Tensor, y: tsjit.Tensor) -> tsjit.Tensor:
    return np.fmin(np.abs(x), y)


@pytest.mark.parametrize("fn", [fmax_of_magnitude, fmin_of_magnitude])
def test_fmax_fmin_ties_of_signed_zeros_follow_numpy(fn):
    """fmax(+0.0, -0.0): NumPy's float/double SIMD loops give the second operand, its half
    loop the first (found by the fuser's fuzzer: np.fmax(np.abs(x), x) with x = -0.0).  The
    sizes are ones where NumPy makes the same choice at every position."""
    def zeros(dtype, n):
        return [np.zeros(n, dtype), np.resize(np.array([-0.0, np.nan, 0.0, 1.0], dtype), n)]
    stats = check_calls(fn, lambda: zeros(np.float32, 64), lambda: zeros(np.float64, 64),
                        lambda: [a.reshape(4, 16) for a in zeros(np.float32, 64)],
                        lambda: zeros(np.float16, 37))
    assert stats["kernel_launches"] > 0


def half_to_uint32(x: tsjit.Tensor) -> tsjit.Tensor:
    return (x * 1).astype(np.uint32)


def test_half_to_uint32_cast_truncates_a_64_bit_conversion():
    """NumPy's float16 -> uint32 loop converts to int64 and keeps the low 32 bits (NaN and
    infinities give 0, -1.5 gives 2**32 - 1); the kernel used the float32 SIMD sequence
    (2**31 for NaN and infinities)."""
    values = np.array([-np.inf, np.nan, np.inf, -1.5, -65504, -0.5, 3.5, 1e4, 65504],
                      np.float16)
    stats = check_calls(half_to_uint32, lambda: [values], lambda: [np.resize(values, 40)])
    assert stats["kernel_launches"] > 0


def test_clip_with_zero_dimensional_bounds_keeps_x_on_signed_zero_ties():
    """0-d bound arrays are read at stride 0 as Python numbers are: NumPy's clip takes its
    loop of scalar bounds (clip(-0.0, 0.0, 0.5) is -0.0); the kernel took the bounds for
    arrays and gave the bound."""
    def arguments(lo: float, hi: float, dtype=np.float32):
        return [zeros_and_nans(dtype), np.array(lo, dtype), np.array(hi, dtype)]
    stats = check_calls(clip_by_arrays, lambda: arguments(0.0, 0.5),
                        lambda: arguments(-0.0, -0.0, np.float64))
    assert stats["kernel_launches"] > 0


def power_by_array(x: tsjit.Tensor, e: tsjit.Tensor) -> tsjit.Tensor:
    return x ** e * 1.0


@pytest.mark.parametrize("exponent", [0.5, 1.0, 2.0, -1.0])
def test_power_by_a_zero_dimensional_exponent_is_numpys_scalar_loop(exponent):
    """A 0-d exponent array is read at stride 0: NumPy's power loop computes 0.5 as sqrt
    ((-0.0) ** 0.5 is -0.0, (-inf) ** 0.5 NaN), 1 as x (a NaN's sign kept); the kernel took
    pow of arrays (+0.0, +inf)."""
    values = np.array([-0.0, -np.inf, np.inf, 4.0, 2.0, -np.nan, -3.0, 0.25, 9.0])
    with np.errstate(all="ignore"):   # (else their NaNs and inf send the call to NumPy)
        stats = check_calls(power_by_array, lambda: [values, np.array(exponent)],
                            lambda: [values.astype(np.float32), np.array(exponent, np.float32)])
    assert stats["kernel_launches"] > 0 and stats["bailouts"] == 0


def power_by_argument(x: tsjit.Tensor, e: float) -> tsjit.Tensor:
    return x ** e * 1.0


def np_power_by_argument(x: tsjit.Tensor, e: int) -> tsjit.Tensor:
    return np.power(x, e) - 0.0


@pytest.mark.parametrize("exponent", [0.5, 1.0, 2.0, -1.0, 1.5])
def test_power_by_a_scalar_exponent_is_exact_where_numpy_is(exponent):
    """NumPy's power loop with one exponent computes 1, 2, -1 and 0.5 exactly (0.5 as sqrt:
    -inf ** 0.5 is NaN, -0.0 ** 0.5 is -0.0); the kernel's pow gave inf, +0.0 and results
    one ulp off.  Other exponents stay within the contract's 4 ulp (1.5 here is exact on
    these values)."""
    values = np.array([-0.0, -np.inf, np.inf, 4.0, 2.0, np.nan, -3.0, 0.25, 9.0])
    check_calls(power_by_argument, lambda: [values, exponent],
                lambda: [values.astype(np.float32), exponent])
    if exponent.is_integer():
        stats = check_calls(np_power_by_argument, lambda: [values, int(exponent)])
        assert stats["kernel_launches"] > 0


def cube(x: tsjit.Tensor) -> tsjit.Tensor:
    return x ** 3 + 0.0


def test_float32_cube_overflows_where_numpys_pow_does():
    """float32 `x ** 3` is x*x*x in float64, rounded once: in float32 the products
    overflowed to inf at x = cbrt(largest float32), where NumPy's pow on AVX2 gives the
    largest float (its correctly rounded value)."""
    edge = np.cbrt(np.finfo(np.float32).max)
    x = np.array([edge, -edge, np.nextafter(edge, np.float32(0)),
                  np.nextafter(edge, np.float32(np.inf)), 1.5, -3e-15, 1e-13, 7.0], np.float32)
    scripted = tsjit.script(cube)
    with np.errstate(all="ignore"):   # (a flag NumPy reports makes the kernel re-run in NumPy)
        for _ in range(3):
            got = scripted(x)
        want = cube(x)
    assert scripted.stats()["kernel_launches"] > 0
    assert np.array_equal(np.isfinite(got), np.isfinite(want)), (got, want)
    finite = np.isfinite(want)
    ulps = np.abs(got[finite].view(np.int32).astype(np.int64)
                  - want[finite].view(np.int32).astype(np.int64))
    assert ulps.max() <= 4   # the contract's bound for pow
    with warnings.catch_warnings(record=True) as got_warnings:
        warnings.simplefilter("always")
        scripted(x)
    with warnings.catch_warnings(record=True) as want_warnings:
        warnings.simplefilter("always")
        cube(x)
    assert [str(w.message) for w in got_warnings] == [str(w.message) for w in want_warnings]


def float_plus_its_int32(x: tsjit.Tensor) -> tsjit.Tensor:
    return x + x.astype(np.int32)


def scaled_to_uint32(x: tsjit.Tensor) -> tsjit.Tensor:
    return (x * 1).astype(np.uint32)


def scaled_to_uint64(x: tsjit.Tensor) -> tsjit.Tensor:
    return (x * 1).astype(np.uint64)


def scaled_to_int8(x: tsjit.Tensor) -> tsjit.Tensor:
    return (x * 1).astype(np.int8)


def scaled_to_int64(x: tsjit.Tensor) -> tsjit.Tensor:
    return (x * 1).astype(np.int64)


CAST_VALUES = (np.nan, np.inf, -np.inf, 3e9, 5e9, -3e9, 1e19, 2e19, -1e19, 40000.0, -1.5)


def warnings_of(fn, x: np.ndarray) -> tuple[object, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(x)
    return result, [str(w.message) for w in caught]


@pytest.mark.parametrize("fn", [float_plus_its_int32, scaled_to_uint32, scaled_to_uint64,
                                scaled_to_int8, scaled_to_int64])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_to_int_cast_warns_invalid_where_numpy_does(fn, dtype):
    """A cast's "invalid value encountered in cast" was taken from the conversion's flag,
    but LLVM assumes no floating-point exceptions: in the loop's remainder it branched
    around the conversion of NaN and out-of-range values (x + x.astype(np.int32) with a
    NaN x warned eagerly, not in the kernel: the fusion fuzzer). And uint32/uint64
    converted both halves of their two-range sequence, flagging invalid for [2**31, 2**32)
    that NumPy converts silently: the kernel's result was thrown away and NumPy ran again
    (a bailout). Values whose warning NumPy's own loops disagree on (its scalar tail
    converts uint32 in 64 bits) are not compared."""
    scripted = tsjit.script(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            scripted(np.ones(67, dtype))
    assert scripted.stats()["kernel_launches"] > 0
    for value in CAST_VALUES:
        with np.errstate(all="ignore"):
            filled = {n: np.full(n, value, dtype) for n in (1, 4, 67)}
        eager = {n: warnings_of(fn, x)[1] for n, x in filled.items()}
        if eager[1] != eager[67]:
            continue
        for n, x in filled.items():
            bailouts = scripted.stats()["bailouts"]
            got, got_warnings = warnings_of(scripted, x)
            assert got_warnings == eager[n], (value, n)
            if not eager[n]:   # the kernel's result stood
                assert scripted.stats()["bailouts"] == bailouts, (value, n)
                assert_bitwise(got, fn(x))


def add_scaled_as_uint32(x: tsjit.Tensor, total: tsjit.Tensor) -> tsjit.Tensor:
    total += (x * 1).astype(np.uint32)
    return total


@pytest.mark.parametrize("errstate", ["ignore", "warn"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_to_uint32_values_numpys_loop_makes_by_place_are_numpys(dtype, errstate):
    """NumPy's float -> uint32 cast is a vectorized loop whose body and scalar tail give
    NaN and values outside [-2**31, 2**32) different values (-1.4e10: 2147483648 in the
    body, 3179869184 in the tail, where it does not even warn): the kernel gave the body's
    everywhere, which stood where the error state ignores invalid (the cast fuzzer: sizes 7
    and 2**16 + 3) and, written in place, under "warn" too. Where such a cast flags invalid,
    NumPy computes the call."""
    values = np.array([-1.4e10, 8e9, np.nan, 3.0, -5e9, 1e19, -1.5, 2.0**32, 7.0], dtype)
    scripted = tsjit.script(scaled_to_uint32)
    in_place = tsjit.script(add_scaled_as_uint32)
    for n in (1, 7, 9, 67, 67, 1, 7):
        x = np.resize(values, n)
        with np.errstate(invalid=errstate):
            want, got = warnings_of(scaled_to_uint32, x), warnings_of(scripted, x)
            assert_bitwise(got[0], want[0])
            assert got[1] == want[1]
            totals = [np.arange(n, dtype=np.uint32) for _ in range(2)]
            want = warnings_of(lambda x, t=totals[0]: add_scaled_as_uint32(x, t), x)
            got = warnings_of(lambda x, t=totals[1]: in_place(x, t), x)
            assert_bitwise(totals[1], totals[0])
            assert got[1] == want[1]
    assert scripted.stats()["kernel_launches"] > 0 and in_place.stats()["kernel_launches"] > 0


UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def assert_same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Every element's bits, NaNs' sign and payload included."""
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    bits = UINT[want.dtype.itemsize]
    differ = got.view(bits) != want.view(bits)
    assert not differ.any(), [(hex(g), hex(w)) for g, w in
                              zip(got.view(bits)[differ][:6], want.view(bits)[differ][:6])]


def negated_plus(x: tsjit.Tensor, y: tsjit.Tensor) -> tsjit.Tensor:
    return -x + y


def minus_negated(x: tsjit.Tensor, y: tsjit.Tensor) -> tsjit.Tensor:
    return y - (-x)


def product_of_negated(x: tsjit.Tensor, y: tsjit.Tensor) -> tsjit.Tensor:
    return (-x) * (-y)


def negated_quotient(x: tsjit.Tensor, y: tsjit.Tensor) -> tsjit.Tensor:
    return -(x / y)


# (x, y) pairs, never both NaN (NumPy's choice between two NaNs is its loop's: see below):
# a NaN (of either sign, with a payload) beside a number, and invalid operations of numbers
PAYLOAD = float(np.array(0x7FF8000000000123, np.uint64).view(np.float64))
ONE_NAN_PAIRS = [(np.nan, 1.5), (-np.nan, 2.0), (PAYLOAD, -3.0), (-PAYLOAD, np.inf),
                 (1.0, np.nan), (2.0, -np.nan), (-0.5, -PAYLOAD), (0.0, 0.0), (-0.0, 0.0),
                 (np.inf, np.inf), (-np.inf, np.inf), (0.0, np.inf), (np.inf, 0.0),
                 (-np.inf, -0.0), (1.5, -2.5)]


@pytest.mark.parametrize("fn", [negated_plus, minus_negated, product_of_negated,
                                negated_quotient])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sign_operations_keep_numpys_nan_through_arithmetic(fn, dtype):
    """LLVM treats a NaN's sign as unspecified and moved negations across arithmetic:
    (-x) + y became y - x, y - (-x) became y + x, (-x) * (-y) became x * y, so a NaN x
    came out with its own sign where NumPy gives -x's; -(x / y) became (-x) / y, which
    gives a NaN y's own sign and 0 / 0's default NaN unnegated. The kernel selects the
    NaN operand (quieted) or the default NaN itself (tsjit.codegen.operand_nans)."""
    x, y = (np.array(v, dtype) for v in zip(*ONE_NAN_PAIRS))
    scripted = tsjit.script(fn)
    with np.errstate(all="ignore"):
        for n in (67, 13, 1, 67):
            args = [np.resize(x, n), np.resize(y, n)]
            got, want = scripted(*args), fn(*args)
            assert_same_bits(got, want)
    assert scripted.stats()["kernel_launches"] > 0


def negated_plus_itself(x: tsjit.Tensor) -> tsjit.Tensor:
    return -x + x


def numpy_adds_nans_as_one_element(dtype, n: int) -> bool:
    """Whether NumPy's add of two contiguous arrays of ``n`` distinct NaNs gives, at every
    position, the NaN its one-element loop gives. x86 gives the first operand's, but its
    compiler commuted some loops: on AVX2 the float32/float64 vector loops' tails (and
    every element where the second operand is a broadcast scalar) and the float16 loop (the
    second operand's everywhere). The kernel gives the one-element loop's NaN."""
    bits = UINT[np.dtype(dtype).itemsize]
    first, second = np.full(n, -np.nan, dtype), np.full(n, np.nan, dtype)
    result = np.add(first, second).view(bits)
    return bool((result == result[0]).all() and result[0] == np.add(first[:1], second[:1])
                .view(bits)[0])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_commutative_op_of_two_nans_gives_numpys(dtype):
    """`-x + x` of a NaN x: NumPy's float32 add gives the first operand's NaN (-x's), but
    LLVM commutes fadd's operands (found by the fusion fuzzer: 0x7FC00000 where NumPy gave
    0xFFC00000); its float16 add gives the second's. Compared at the lengths where NumPy's
    loop gives the same NaN at every position (asked of NumPy)."""
    lengths = [n for n in (1, 5, 8, 13, 16) if numpy_adds_nans_as_one_element(dtype, n)]
    assert len(lengths) > 1   # at least NumPy's short arrays, taken by its scalar loop
    values = np.array([np.nan, -np.nan, PAYLOAD, -PAYLOAD, 1.5, -np.inf], dtype)
    scripted = tsjit.script(negated_plus_itself)
    with np.errstate(all="ignore"):
        for n in [lengths[-1], *lengths]:
            x = np.resize(values, n)
            assert_same_bits(scripted(x), negated_plus_itself(x))
    assert scripted.stats()["kernel_launches"] > 0


def log_then_bitwise_and(x0):   # unused values: kept for their exceptions and reports
    t0 = np.log(x0)
    t1 = x0 & x0                    # noqa: F841
    t2 = np.where(x0 > x0, x0, x0)  # noqa: F841
    t3 = ~x0                        # noqa: F841
    t4 = x0 + x0                    # noqa: F841
    return (t0,)


@pytest.mark.parametrize("errstate", ["warn", "raise", "call"])
def test_a_floating_point_report_comes_before_a_later_op_raises(errstate):
    """np.log(x) warns (divide by zero), then x & x of a float x raises TypeError: the
    fuser moved log down into a kernel with x > x, past the &, so the TypeError came
    without the warning, and under errstate "raise" instead of log's FloatingPointError
    (test_fuzz_fusion with unsigned and float16 dtypes, seed 11)."""
    scripted = tsjit.script(log_then_bitwise_and)
    for dtype in (bool, bool, np.float32, np.float32, bool):
        x = np.array([1.0, 0.0, 2.0]).astype(dtype)
        want = run(log_then_bitwise_and, [x.copy()], errstate)
        got = run(scripted, [x.copy()], errstate)
        assert got[2] == want[2], (dtype, got[2], want[2])
        if isinstance(want[0], type):
            assert got[0] is want[0], (dtype, got[0], want[0])


def interleaved_kernels(x, y):
    a1 = np.exp(x)       # overflow
    b1 = y * y           # underflow
    b2 = b1 + 1.0        # b1's kernel ends here
    a2 = a1 + 1.0        # a1's kernel would end here
    return a2, b2


@pytest.mark.parametrize("errstate", ["warn", "raise", "call"])
def test_two_kernels_whose_members_interleave_report_in_program_order(errstate):
    """np.exp(x) overflows, then y * y underflows: eager reports overflow, then underflow.
    The multiply's kernel ran first (at b2) and the exp's after it (at a2), so the
    reports came kernel by kernel: underflow, then overflow (test_fuzz_fusion with float16
    and int8 arguments, seed 14 x 400). The exp's group, whose member would pass the
    multiply that reports before it, now runs as NumPy's calls; the other stays a kernel."""
    scripted = tsjit.script(interleaved_kernels)
    for _ in range(3):
        x, y = np.array([1000.0, 1.0, 2.0]), np.array([1e-200, 1.0, 3.0])
        want = run(interleaved_kernels, [x.copy(), y.copy()], errstate)
        got = run(scripted, [x.copy(), y.copy()], errstate)
        assert got[2] == want[2], (got[2], want[2])
    if errstate == "raise":    # the exp's overflow, not the multiply's underflow
        with np.errstate(all="raise"), \
                pytest.raises(FloatingPointError, match="^overflow encountered in exp"):
            scripted(x, y)
    with np.errstate(all="ignore"):
        assert_bitwise(scripted(x, y)[1], interleaved_kernels(x, y)[1])
    assert scripted.stats()["kernel_launches"] > 0


def power_times_one(x, e):
    return (x ** e) * 1.0


def clip_times_one(x, lo, hi):
    return np.clip(x, lo, hi) * 1.0


def same_bits_on_every_call(fn, *calls: tuple) -> None:
    """fn scripted anew for each argument tuple of ``calls``: its profiling and optimized
    calls give eager's dtype, shape and bits (NaN payloads too)."""
    def bits(a: np.ndarray) -> list[int]:
        return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]).tolist()

    for args in calls:
        scripted = tsjit.script(fn)
        with np.errstate(all="ignore"):
            want = fn(*args)
            for _ in range(3):
                got = scripted(*args)
                assert (got.dtype, got.shape) == (want.dtype, want.shape)
                assert bits(got.ravel()) == bits(want.ravel())


@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.float64, np.float64),
                                    (np.float16, np.float64), (np.float32, np.float64)])
@pytest.mark.parametrize("shape", [(1,), (1, 1), ()])
@pytest.mark.parametrize("value", [0.5, 2.0, -1.0, 1.0, 0.0])
def test_an_exponent_of_one_element_broadcast_is_numpys_scalar_exponent(value, shape, dtypes):
    """NumPy's float and double power loops compute x ** 0.5, ** 2, ** -1, ** 1 and ** 0
    as sqrt(x), x * x, 1 / x, x and 1 wherever the exponent is read at stride 0: 0-d, but
    also an exponent of shape (1,) or (1, 1) broadcast to more elements, which the kernel
    computed by its pow ((-0.0) ** 0.5 was +0.0, (-inf) ** 0.5 +inf, nan ** 0 1). Such a
    call runs in NumPy now; an exponent that is not broadcast ((1,) beside (1,)) is pow's."""
    x_dtype, e_dtype = dtypes
    x = zeros_and_nans(x_dtype)
    e = np.full(shape, value, e_dtype)
    same_bits_on_every_call(power_times_one, (x, e), (x[:1], e))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1,), (1, 1), ()])
@pytest.mark.parametrize("bounds", [(0.0, 2.0), (-1.0, -0.0), (np.nan, 2.0), (-1.0, np.nan),
                                    (np.nan, -np.nan)])
def test_clip_bounds_of_one_element_broadcast_are_numpys_scalar_bounds(bounds, shape, dtype):
    """NumPy's float and double clip loops with both bounds read at stride 0 keep x at a
    tie (-0.0 clipped to [0, 2] stays -0.0) and give a NaN bound before a NaN x; with bound
    arrays a tie gives the bound and a NaN x wins. The kernel took the scalar path only for
    0-d bounds (where it gave the NaN x first) and the array path for (1,) and (1, 1)."""
    x = zeros_and_nans(dtype)
    lo, hi = (np.full(shape, b, dtype) for b in bounds)
    same_bits_on_every_call(clip_times_one, (x, lo, hi), (x[:1], lo, hi))


def division_of_a_self_comparison(x, y):
    return x / (x < x), (x < x) / y


def division_of_self_differences(x, y):
    return (x - x) / (x - x), x / (y - y)


@pytest.mark.parametrize("errstate", ["default", "raise", "call"])
@pytest.mark.parametrize("fn, dtype", [  # (NumPy has no subtract for bools)
    *((division_of_a_self_comparison, d) for d in (np.bool_, np.int8, np.uint32, np.int64)),
    *((division_of_self_differences, d) for d in (np.int8, np.uint32, np.int64))])
def test_a_division_of_ints_llvm_folds_reports_numpys_errors(fn, dtype, errstate):
    """x / (x < x) and (x - x) / (x - x) of ints divide by a zero LLVM knows: it folded the
    float division to inf or NaN with no divide or invalid flag, so eager NumPy warned
    and the scripted call did not (found by test_fuzz_tensor_programs, seed 7, 300
    examples). The kernel computes those two errors of a division of ints itself."""
    x = np.array([1, 0, 1, 1, 0] * 4, dtype)
    y = np.array([0, 0, 1, 0, 1] * 4, dtype)
    scripted = tsjit.script(fn)
    want = run(fn, [x.copy(), y.copy()], errstate)
    for _ in range(3):
        got = run(scripted, [x.copy(), y.copy()], errstate)
        assert got[2] == want[2]
        if isinstance(want[0], type):
            assert got[0] is want[0]
        else:
            for g, w in zip(got[0], want[0]):
                assert_bitwise(g, w)
    assert want[2] or want[0] is FloatingPointError
    assert scripted.stats()["kernel_launches"] > 0


def write_sum_into(x: np.ndarray) -> np.ndarray:
    np.add(x, np.square(x), out=x)
    return x


def test_a_numpy_scalar_as_out_raises_numpys_type_error():
    """A NumPy scalar passed for a Tensor and used as out=: NumPy refuses it before it
    resolves the loop, so the TypeError is its own, not the cast error an out array of
    that dtype gets (found by the round-trip fuzzer)."""
    scalar = np.array(True)[()]
    with pytest.raises(TypeError) as eager:
        write_sum_into(scalar)
    with pytest.raises(TypeError) as scripted:
        tsjit.script(write_sum_into)(scalar)
    assert type(scripted.value) is type(eager.value)
