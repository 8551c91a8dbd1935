"""Programs the fuzzers found where a fused reduction differed from NumPy, kept as tests."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _differential import assert_same, check
from _subprocess import child_environment

import tsjit


def compare_with_full_max(x0, x1):
    return x1 - x0.max()


def compare_with_full_sum(x0, x1):
    return x1 < x0.sum()


def minus_row_max(x0, x1):
    return x1 - x0.max(axis=1, keepdims=True)


@pytest.mark.parametrize("fn,x0,x1", [
    (compare_with_full_max, (3, 4), (1, 4)),
    (compare_with_full_sum, (3, 4), (1, 4)),
    (compare_with_full_sum, (2, 3, 4), (2, 1, 4)),
    (minus_row_max, (3, 4), (3, 1)),
    (minus_row_max, (3, 4), (1, 1)),
    (compare_with_full_max, (3, 4), (3, 4)),
])
def test_an_element_result_smaller_than_the_reduced_operand_keeps_numpys_shape(fn, x0, x1):
    """Where an operand read only by a reduction is larger than the values its result
    meets, the element-level result has their (NumPy's) shape: x1 - x0.max() of x1 (1, 4)
    and x0 (3, 4) is (1, 4). The row kernel iterated over the broadcast of every operand
    and gave (3, 4) (test_fuzz_tensor_programs, seed 2)."""
    a = np.arange(np.prod(x0), dtype=np.float64).reshape(x0) % 7
    b = np.linspace(-3.0, 3.0, int(np.prod(x1))).reshape(x1)
    scripted = check(fn, (a, b), (a, b), (a, b))
    if x0 == x1:         # shapes that agree stay with the kernel
        assert scripted.stats()["kernel_launches"] > 0


def test_an_empty_element_result_beside_an_empty_reduced_operand_does_not_crash():
    """x1 < x0.sum() of x1 (1, 0) and x0 (3, 0): the row kernel divided by zero (SIGFPE
    killed the process) on the optimized call. Run in a child process, which would die."""
    program = textwrap.dedent('''
        import numpy as np, tsjit
        from test_fuzz_regressions_reductions import compare_with_full_sum as fn
        x0, x1 = np.ones((3, 0)), np.ones((1, 0))
        scripted = tsjit.script(fn)
        for _ in range(3):
            got = scripted(x0, x1)
            assert got.shape == (1, 0) and got.dtype == bool, got
        print("ok")
    ''')
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=300, cwd=__file__.rsplit("/", 1)[0],
                          env=child_environment(TSJIT_BACKGROUND_COMPILE="0"))
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode,
                                                                   done.stderr[-2000:])


def plus_full_sum(x):
    return x + x.sum(axis=None, keepdims=True)


def minus_row_max_of_itself(x):
    return x - x.max(axis=-1, keepdims=True)


def exp_minus_first_axis_max(x):
    return np.exp(x - x.max(axis=0, keepdims=True))


def doubled_sums(x):
    return (x * 2.0).sum(axis=-1, keepdims=True), (x * 2.0).sum(axis=0)


@pytest.mark.parametrize("fn", [plus_full_sum, minus_row_max_of_itself,
                                exp_minus_first_axis_max, doubled_sums])
@pytest.mark.parametrize("shape", [(1, 2, 2), (2, 1, 3), (3, 2, 1), (1, 1, 3), (1, 4), (4, 1),
                                   (2, 3, 4)])
@pytest.mark.parametrize("dtype", [np.int8, np.float32])
def test_row_kernel_results_of_fortran_operands_lie_as_numpys(fn, shape, dtype):
    """A row kernel's results of Fortran-ordered operands lie as NumPy's, axes of length 1
    included: x + x.sum(axis=None, keepdims=True) of a bool or int8 Fortran (1, 2, 2) x has strides
    (32, 8, 16), where the kernel's result was np.empty(order="F"): (8, 8, 16)
    (test_fuzz_tensor_programs, seed 5 x 250). NumPy's iterator puts an axis of length 1
    where C order has it, a reduction lays its result out in its operand's order, and
    np.exp of a contiguous temporary takes the trivial loop: (C or) Fortran order."""
    x = np.asfortranarray((np.arange(np.prod(shape)) % 5 - 2).astype(dtype).reshape(shape))
    scripted = tsjit.script(fn)
    want = fn(x)
    for _ in range(3):
        got = scripted(x)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            assert_same(g, w, ulps=4)
            assert (g.strides, g.flags.c_contiguous, g.flags.f_contiguous) == \
                (w.strides, w.flags.c_contiguous, w.flags.f_contiguous)
    if shape[-1] > 1:    # else x is taken for one value per row: nothing to fuse
        assert scripted.stats()["kernel_launches"] > 0


def half_mean_of_first_axis(x):
    v = x[1:, :-1]
    return (v * 0.5).mean(axis=0, keepdims=True)


def deviation_of_rows(x):
    return np.std(x * 1, axis=-1, keepdims=True, ddof=1)


def mean_of_rows(x):
    return (x * 1).mean(axis=-1)


def _same_values_and_strides(fn, shape, dtype):
    """Calls ``fn`` scripted 3 times on a Fortran-ordered array of ``shape`` and checks
    its results' values and strides against eager's; returns the scripted function."""
    x = np.asfortranarray((np.arange(np.prod(shape)) % 5 + 1).astype(dtype).reshape(shape))
    scripted = tsjit.script(fn)
    want = fn(x)
    for _ in range(3):
        got = scripted(x)
        assert_same(got, want, ulps=4)
        assert got.strides == want.strides
    return scripted


@pytest.mark.parametrize("fn", [half_mean_of_first_axis, deviation_of_rows, mean_of_rows])
@pytest.mark.parametrize("shape", [(9, 3), (2, 1, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mean_and_std_keep_the_layout_of_their_sums(fn, shape, dtype):
    """np.mean, np.var and np.std divide the sum by the count (std: take its root) in
    place, so the result keeps the sum's layout: (v * 0.5).mean(axis=0, keepdims=True) of
    a Fortran-ordered (8, 2) view has strides (8, 8); the row kernel's was C-ordered,
    (16, 8), the layout model laying the division out as a fresh ufunc's (a probe of
    reductions on views, seed 1 x 200)."""
    scripted = _same_values_and_strides(fn, shape, dtype)
    assert scripted.stats()["kernel_launches"] > 0


def half_mean_of_rows(x):
    return (x * 0.5).mean(axis=-1, keepdims=True)


def root_of_a_sum(x):
    return np.sqrt((x * x).sum(axis=-1, keepdims=True))


@pytest.mark.parametrize("fn", [half_mean_of_first_axis, half_mean_of_rows, mean_of_rows,
                                deviation_of_rows, root_of_a_sum])
@pytest.mark.parametrize("shape", [(9, 3), (2, 1, 3), (5, 4, 3)])
def test_float16_means_and_roots_of_sums_lie_as_numpys(fn, shape):
    """A float16 mean is its float32 mean copied (np.float16(ret): astype's layout, C where
    the float32 result is C-contiguous), and a float16 sum is a float16 array whose sqrt
    takes the trivial loop: the results' axes of length 1 had other strides
    ((x * 0.5).mean(axis=0, keepdims=True) of a Fortran (9, 3) array: (2, 2) for (6, 2);
    np.sqrt of a Fortran (5, 4, 3) array's sum over the last axis: (2, 10, 2) for
    (2, 10, 40)), found by last session's layout sweep."""
    scripted = _same_values_and_strides(fn, shape, np.float16)
    if fn is not half_mean_of_first_axis or len(shape) == 2:   # (a 3-D view: NumPy's calls)
        assert scripted.stats()["kernel_launches"] > 0


def exp_and_its_min(x, e):
    t = np.exp(x * e)
    return t, t.min(axis=-1, keepdims=True)


def power_and_its_max(x, e):
    t = x ** 2.5
    return t, np.max(t, axis=-1)


def power_by_rows_and_its_min(x, e):
    t = x ** e
    return t, t.min(axis=-1, keepdims=True)


@pytest.mark.parametrize("fn", [exp_and_its_min, power_and_its_max,
                                power_by_rows_and_its_min])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 7), (5, 40), (7,)])
def test_a_cached_value_whose_max_comes_first_is_written(fn, dtype, shape):
    """A row kernel caches an expensive element value (exp, pow) in a scratch buffer when
    its first pass reduces it and a later one writes it; the first pass's max/min read that
    buffer as if it were filled already (reduction_extremes), so it was never written: the
    element result was the buffer's old memory (x ** e of a (3, 7) x and a (3, 1) e gave
    [8.5e-314, 4.7e-310, ...]; the tensor-program fuzzer, seed 7)."""
    x = (np.arange(np.prod(shape)).reshape(shape) % 11 / 4 + 0.5).astype(dtype)
    e = np.full(shape[:-1] + (1,), 2.0, dtype)
    scripted = tsjit.script(fn)
    want = fn(x, e)
    for _ in range(3):
        assert_same(scripted(x, e), want, ulps=4)
    # a 1-d x's exponent has shape (1,): NumPy reads it at stride 0 and takes its scalar
    # power loop, so the call runs in NumPy (elementwise_kernel.stride_zero_check)
    in_numpy = fn is power_by_rows_and_its_min and len(shape) == 1
    assert (scripted.stats()["kernel_launches"] == 0) == in_numpy


def reports(fn, args: tuple, errstate: str) -> tuple[object, list[str]]:
    """fn's result (or FloatingPointError's message) and its warnings' and seterrcall
    reports' texts under np.errstate(all=errstate)."""
    import warnings

    calls: list[str] = []
    with warnings.catch_warnings(record=True) as caught, \
            np.errstate(all=errstate, call=lambda kind, _flag: calls.append(kind)):
        warnings.simplefilter("always")
        try:
            result = fn(*args)
        except FloatingPointError as error:   # (tsjit adds the source line after the text)
            result = str(error).splitlines()[0]
    return result, [str(w.message) for w in caught] + calls


def assert_reports_as_eagerly(fn, argument_sets: list[tuple]) -> object:
    """Each argument set three times (profiling, optimized) under each error state."""
    scripted = tsjit.script(fn)
    for errstate in ("warn", "raise", "call", "ignore"):
        for args in argument_sets * 3:
            want, got = reports(fn, args, errstate), reports(scripted, args, errstate)
            assert got[1] == want[1], (errstate, args)
            assert_same(got[0], want[0])
    return scripted


def cube_of_max(x):
    t = x.max()
    return t * t * t + 1


def negated_min(x):
    return -x.min() + 1


def abs_of_min(x):
    return abs(x.min()) + 1


@pytest.mark.parametrize("fn", [cube_of_max, negated_min, abs_of_min])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int64, np.uint64])
def test_operators_on_a_full_reductions_integer_report_overflow_as_scalar_math(fn, dtype):
    """x.max() is a NumPy scalar: Python's operators on it are NumPy's scalar math, which
    reports integer overflow ("overflow encountered in scalar multiply"); the row kernel
    computed them as an array loop, which wraps silently (the reduction fuzzer, uint64
    x.sum(axis=0) * 2 under errstate raise)."""
    info = np.iinfo(dtype)
    edge = np.array([info.min, info.max, info.max // 2 + 1], dtype)
    calm = np.array([1, 2, 0], dtype)
    assert_reports_as_eagerly(fn, [(edge,), (calm,)])


def floor_quotient_of_min(x, d):
    return x.min(axis=1, keepdims=True) // d + x


def test_integer_errors_of_row_values_are_reported():
    """Ops on a row's reduced value (once per row) left out the errors the kernel computes
    for integer ops: MIN // -1 overflows (NumPy warns), the row kernel did not report it
    (the reduction fuzzer)."""
    x = np.array([[-128, 5, 7], [3, 2, 1]], np.int8)
    scripted = assert_reports_as_eagerly(floor_quotient_of_min,
                                         [(x, np.int8(-1)), (x, np.int8(2))])
    assert scripted.stats()["kernel_launches"] > 0


def to_uint32_below_max(x):
    return (x - x.max()).astype(np.uint32)


def test_a_row_kernels_uint32_cast_leaves_numpys_loop_dependent_values_to_numpy():
    """(x - x.max()).astype(np.uint32) of a NaN is 2147483648 in NumPy's vector body and 0
    in its scalar tail (kernel_spec.invalid_values_vary); under errstate ignore the row
    kernel gave the body's value everywhere."""
    x = np.array([1.0, np.nan, 3.0, -1.4e10, 2.0, 5.0, 7.0])
    assert_reports_as_eagerly(to_uint32_below_max, [(x,), (x[:3],), (np.arange(7.0),)])


def scaled_column_sums(x):
    return (x * 1.5).sum(axis=0)


def column_variances(x):
    return x.var(axis=0, keepdims=True)


@pytest.mark.parametrize("fn, dtype", [(scaled_column_sums, np.float32),
                                       (column_variances, np.float32),
                                       (column_variances, np.int8)])
def test_a_column_reduction_of_single_element_rows_sums_pairwise_as_numpy(fn, dtype):
    """Reducing axis 0 of shape (n, 1), NumPy's iterator drops the axis of length 1 and
    sums the n values as one run, pairwise; the column kernel added row after row (the
    int8 variance of 65539 values differed by 556 ulp: the reduction fuzzer)."""
    rng = np.random.default_rng(5)
    wide, tall = (rng.standard_normal((3, 1000)) * 100).astype(dtype), \
        (rng.standard_normal((65539, 1)) * 100).astype(dtype)
    scripted = check(fn, (wide,), (wide,), (tall,), (tall,), (wide,))
    assert scripted.stats()["kernel_launches"] > 0
