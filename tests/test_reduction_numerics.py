"""Fused float sums and means are NumPy's own bits (its pairwise order: blocks of 128 with
eight accumulators, halves above; `codegen/pairwise.py`), for every length class, along
the last axis and over a whole C-contiguous array, with every thread count.

Each function multiplies by 1.5 first so that the reduction is fused with a producer (a
reduction alone stays a NumPy call); NumPy runs the same expression as the reference.
Every check also asserts that the kernel ran (no bailout), so a test that passed through
the interpreter would fail.
"""
from __future__ import annotations

import numpy as np
import pytest
from _differential import assert_same

import tsjit
from tsjit import runtime

# around the block size, subtrees of 2, 4 and 8 equal blocks (144, 320, 1024: reduced
# interleaved, pairwise.run_reducer), several blocks, odd splits, and a run long enough for
# the parallel split of a full reduction (codegen/reduction_split.py: PARALLEL_RUN)
LENGTHS = (2, 7, 8, 9, 127, 128, 129, 144, 320, 1000, 1024, 4096, 8191, 8193, 20_011,
           300_007)


def row_sum(x):
    return np.sum(x * 1.5, axis=-1)


def row_mean_kept(x):
    return (x * 1.5).mean(axis=-1, keepdims=True)


def full_sum(x):
    return np.sum(x * 1.5)


def full_mean(x):
    return np.mean(x - 0.25)


def row_var_std(x):
    return np.var(x * 1.5, axis=-1), (x * 1.5).std(axis=-1, ddof=1)


def row_centered(x):
    return x - x.mean(axis=-1, keepdims=True)   # the mean reads the input row itself


def _run_native(fn, *args):
    scripted = tsjit.script(fn)
    for _ in range(2):
        got = scripted(*args)
    stats = scripted.stats()
    assert stats["bailouts"] == 0 and stats["kernel_launches"] >= 1, stats
    return got


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [row_sum, row_mean_kept, full_sum, full_mean, row_var_std,
                                row_centered])
def test_float_sums_and_means_are_numpys_bits(fn, dtype):
    rng = np.random.default_rng(7)
    for n in LENGTHS:
        rows = 3 if n < 10_000 else 1
        x = (rng.standard_normal((rows, n)) * 10.0 ** rng.integers(-3, 4, (rows, n)))
        x = x.astype(dtype)
        assert_same(_run_native(fn, x), fn(x), f"{fn.__name__} n={n}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_dimensional_runs(dtype):
    rng = np.random.default_rng(3)
    for n in (5, 130, 70_001, 1 << 20):
        x = rng.standard_normal(n).astype(dtype)
        assert_same(_run_native(full_sum, x), full_sum(x))
        assert_same(_run_native(full_mean, x), full_mean(x))


def softmax_and_exp(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True), e


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_sum_of_a_cached_value_is_numpys_sum_of_it(dtype):
    """exp is kept in a scratch row that the sum reads; its sum is NumPy's sum of the
    kernel's own exp values (exp itself is not NumPy's bits: vmath's, within 4 ulp)."""
    rng = np.random.default_rng(11)
    for n in (9, 129, 320, 1000, 1024, 4096):
        x = rng.standard_normal((3, n)).astype(dtype) * 4
        softmax, e = _run_native(softmax_and_exp, x)
        assert_same(softmax, e / e.sum(axis=-1, keepdims=True), f"n={n}")


def test_every_thread_count_gives_the_same_bits():
    x = np.random.default_rng(1).standard_normal(3_000_017).astype(np.float32)
    results = []
    before = runtime.get_num_threads()
    try:
        for threads in (1, 2, 3):
            tsjit.set_num_threads(threads)
            results.append(_run_native(full_sum, x))
    finally:
        tsjit.set_num_threads(before)
    for got in results:
        assert_same(got, full_sum(x))


@pytest.mark.parametrize("rows", [1, 15, 1001, 3001])
def test_rows_claimed_in_chunks_give_the_same_bits_for_every_thread_count(rows):
    """The pool cuts a job of many rows into several chunks per thread, which any thread
    may claim (runtime/thread_pool.c): a row's bits do not depend on the thread that
    computes it, for odd row counts too, softmax (exp, a cached row) and variance (sums:
    NumPy's bits)."""
    x = np.random.default_rng(6).standard_normal((rows, 257)).astype(np.float32)
    before = runtime.get_num_threads()
    results = []
    try:
        for threads in (1, 2, 3, 4):
            tsjit.set_num_threads(threads)
            results.append((_run_native(softmax_and_exp, x), _run_native(row_var_std, x)))
    finally:
        tsjit.set_num_threads(before)
    for (softmax, e), var_std in results:
        assert_same(softmax, results[0][0][0])
        assert_same(e, results[0][0][1])
        assert_same(var_std, row_var_std(x))


def test_a_single_long_row_splits_its_tree_across_threads():
    """The one row of a 1-D array (a loss) is cut into subtrees that the pool's threads
    compute, as a full reduction's run is; several long rows run one per thread, the split
    then inline.  Same bits for every thread count."""
    rng = np.random.default_rng(2)
    long_row = rng.standard_normal(1_000_003).astype(np.float32)
    long_rows = rng.standard_normal((3, 300_007)).astype(np.float32)
    scripted = tsjit.script(full_mean)
    for _ in range(2):
        scripted(long_row)
    assert "_subtrees0" in scripted.inspect_llvm(long_row)
    before = runtime.get_num_threads()
    try:
        for threads in (1, 2, 3):
            tsjit.set_num_threads(threads)
            assert_same(_run_native(full_mean, long_row), full_mean(long_row))
            assert_same(_run_native(row_sum, long_rows), row_sum(long_rows))
    finally:
        tsjit.set_num_threads(before)


def direct_centered(x):
    return x - x.mean()   # the mean of the input itself: NumPy walks the view as it is


def row_stats(x):
    y = x * 1.5
    return y.sum(axis=-1), np.max(y, axis=-1), np.argmin(y, axis=-1), np.prod(x, axis=-1)


def weighted_sum(x, w):
    return np.sum(x * w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strided_and_reversed_runs_are_numpys_bits(dtype):
    """NumPy sums a view whose reduced axes collapse into one stride (a 1-D slice, a
    reversed array, a column slice's rows) pairwise in its logical order, and the
    temporaries of elementwise ops on C-like views are C-ordered: the strided kernel reads
    the view so, piece by piece where it is not one stride (a 2-D slice or a broadcast
    operand reduced whole).  Sums, means, max, argmin and prod, the view itself or a value
    computed from it, every thread count."""
    rng = np.random.default_rng(17)
    run = (rng.standard_normal(600_011) * 10.0 ** rng.integers(-3, 4, 600_011)).astype(dtype)
    wide = rng.standard_normal((20, 3001)).astype(dtype)
    views = (run[::-1], run[::3], run[7::-2], run[::-5][:200])
    before = runtime.get_num_threads()
    try:
        for threads in (1, 2, 3):
            tsjit.set_num_threads(threads)
            for view in views:
                for fn in (full_sum, full_mean, direct_centered):
                    assert_same(_run_native(fn, view), fn(view), f"{fn.__name__} {view.strides}")
            reversed_whole = wide[::-1, ::-1]   # one stride: -itemsize
            for view in (reversed_whole, wide[:, ::2], wide[::3, 7:], wide[::-2, ::-5]):
                assert_same(_run_native(full_sum, view), full_sum(view), f"{view.strides}")
            assert_same(_run_native(weighted_sum, wide, wide[4]), weighted_sum(wide, wide[4]))
            for view in (reversed_whole, wide[:, ::2], wide[::-2, 5:]):
                assert_same(_run_native(row_stats, view), row_stats(view), f"{view.strides}")
    finally:
        tsjit.set_num_threads(before)


def weighted_means(x, w):
    return np.mean(x * w, axis=(-2, -1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_operand_of_last_size_1_in_a_reduction_of_several_axes(dtype):
    """``np.sum(x * w)`` with ``w`` of shape (rows, 1): the fuser reads ``w`` as any array
    broadcast along its last axis (one value per row only in a reduction of that axis), so
    the strided kernel sums NumPy's C-ordered temporary as one pairwise run; over a
    Fortran-ordered ``x`` NumPy's temporary is Fortran-ordered: the transposed operands,
    strided.  Every thread count."""
    rng = np.random.default_rng(23)
    x = (rng.standard_normal((700, 301)) * 10.0 ** rng.integers(-3, 4, (700, 301))).astype(dtype)
    w = rng.standard_normal((700, 1)).astype(dtype)
    cube = rng.standard_normal((3, 200, 101)).astype(dtype)
    before = runtime.get_num_threads()
    try:
        for threads in (1, 2):
            tsjit.set_num_threads(threads)
            for a, b in ((x, w), (x[::-1], w), (x[:, ::2], w[::-1]), (np.asfortranarray(x), w),
                         (np.asfortranarray(x)[::2, ::3], w[::2])):
                assert_same(_run_native(weighted_sum, a, b), weighted_sum(a, b),
                            f"{a.strides} {b.strides}")
            kept = cube[:, :, :1] + 0.5
            assert_same(_run_native(weighted_means, cube, kept), weighted_means(cube, kept))
    finally:
        tsjit.set_num_threads(before)


def max_and_min(x):
    return np.max(x * 2.0, axis=-1), np.min(x - 1.0)


def test_a_strided_max_of_zeros_and_nans_has_numpys_bits():
    """A max or min that is a zero or a NaN is NumPy's element (reduction_ties), walked
    one element at a time in a strided kernel too."""
    x = np.zeros((30, 1001))
    x[3, 7], x[5, 11] = -0.0, np.nan
    for view in (x[:, ::2], x[::-1, ::-3], x[::2, :400], x.ravel()[::-7]):
        got, want = _run_native(max_and_min, view), max_and_min(view)
        for g, w in zip(got, want):
            assert np.array_equal(np.asarray(g).view(np.int64), np.asarray(w).view(np.int64))


def test_rows_of_a_wider_array_and_broadcast_operands():
    """Rows need only a contiguous last axis: a column slice of a wider array, a 3-d
    array, an operand broadcast over the rows."""
    rng = np.random.default_rng(5)
    wide = rng.standard_normal((40, 300)).astype(np.float32)

    def scaled_sum(x, w):
        return np.sum(x * w, axis=-1)

    scripted = tsjit.script(scaled_sum)
    for x in (wide[:, 17:280], wide.reshape(4, 10, 300)[:, :, :250]):
        w = rng.standard_normal(x.shape[-1]).astype(np.float32)
        for _ in range(2):
            assert_same(scripted(x, w), scaled_sum(x, w))
    assert scripted.stats()["bailouts"] == 0


def _broadcast_inputs(dtype) -> list[np.ndarray]:
    """Inputs that are broadcast views only: one axis advancing (a row or a column
    repeated), a Fortran-ordered one repeated along a new middle axis."""
    rng = np.random.default_rng(11)
    wide = rng.standard_normal((40, 300)).astype(dtype)
    fortran = np.asfortranarray(wide[:37, :53])
    return [np.broadcast_to(wide[:1, :64], (2, 64)), np.broadcast_to(wide[:1, :53], (37, 53)),
            np.broadcast_to(wide[:37, :1], (37, 53)), np.broadcast_to(wide[:1, :200], (300, 200)),
            np.broadcast_to(fortran[:, None, :], (37, 3, 53))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [full_sum, full_mean, row_sum, row_var_std])
def test_reductions_of_broadcast_views_are_numpys_bits(fn, dtype):
    """NumPy lays the temporary of a broadcast view's elementwise op out C-ordered when
    one axis advances (a repeated row is not a Fortran-ordered array), and by its
    iterator's own rules where a broadcast axis lies between advancing ones: the kernel
    sums in the same order, or leaves the group to NumPy."""
    for x in _broadcast_inputs(dtype):
        scripted = tsjit.script(fn)
        for _ in range(2):
            assert_same(scripted(x), fn(x), f"{fn.__name__} {x.shape} {x.strides}")


def column_sum(x):
    return np.sum(x * 1.5, axis=0)


def middle_mean_kept(x):
    return (x * 1.5).mean(axis=1, keepdims=True)


def leading_pair_sum(x):
    return np.sum(x - 0.25, axis=(0, 1))


def trailing_pair_mean(x):
    return np.mean(x * 1.5, axis=(-2, -1))


def column_var_std(x):
    return np.var(x * 1.5, axis=0), (x * 1.5).std(axis=0, ddof=1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [column_sum, middle_mean_kept, leading_pair_sum,
                                trailing_pair_mean, column_var_std])
def test_sums_over_other_axes_are_numpys_bits(fn, dtype):
    """NumPy adds along a reduced axis that is not the inner one element by element, in
    order (``out[j] += x[i, j]``); over trailing axes it sums their one run pairwise."""
    rng = np.random.default_rng(11)
    for shape in ((1, 5, 3), (3, 1, 9), (7, 9, 3000), (2, 3001, 5), (300, 2, 40),
                  (5, 1000, 130)):
        x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(dtype)
        if fn is column_sum or fn is column_var_std:
            x = x.reshape(shape[0] * shape[1], shape[2])
        assert_same(_run_native(fn, x), fn(x), f"{fn.__name__} {x.shape}")


def test_column_sums_give_the_same_bits_for_every_thread_count():
    x = np.random.default_rng(4).standard_normal((3000, 700)).astype(np.float32)
    before = runtime.get_num_threads()
    try:
        for threads in (1, 2, 3):
            tsjit.set_num_threads(threads)
            assert_same(_run_native(column_var_std, x), column_var_std(x))
    finally:
        tsjit.set_num_threads(before)


def integer_means(x):
    return (x * 3).mean(axis=-1), np.mean(x + 1)


def sums_as_float64(x):
    return np.sum(x * 1.5, axis=-1, dtype=np.float64), (x - 0.5).sum(dtype="float64")


def half_sums_and_means(x):
    y = x * 2
    return y.sum(axis=-1), y.mean(axis=-1, keepdims=True)


def half_full_mean(x):
    return np.mean(x * 2)


def half_columns(x):
    y = x * 2
    return y.sum(axis=0), y.mean(axis=0)


def variances(x):
    y = x * 3
    return np.var(y, axis=-1), y.std(axis=-1, ddof=1, keepdims=True), np.var(y)


def column_variances(x):
    y = x * 3
    return y.var(axis=0, ddof=1), np.std(y, axis=0)


@pytest.mark.parametrize("fn, dtype", [
    (integer_means, np.int64), (integer_means, np.int32), (integer_means, np.bool_),
    (sums_as_float64, np.float32), (half_sums_and_means, np.float16),
    (half_full_mean, np.float16), (half_columns, np.float16),
    (variances, np.int64), (variances, np.bool_), (variances, np.uint8),
    (variances, np.float16), (column_variances, np.int32), (column_variances, np.float16)])
def test_sums_through_numpys_cast_buffers_are_its_bits(fn, dtype):
    """A sum whose operand NumPy casts (int -> float64 for a mean, dtype=, float16 ->
    float32 for a mean) is its pairwise sums of 8192-element buffers, added in order; a
    float16 sum is pairwise in float32, rounded once (along a leading axis: one half
    addition at a time); a float16 mean rounds its float64 quotient through float32 for
    an array, directly for a scalar. A variance of integers is one of float64 whose mean
    sums through the buffers; one of float16 rounds each step to float16."""
    rng = np.random.default_rng(13)
    for n in LENGTHS[:-1]:
        rows = 3 if n < 10_000 else 2
        if dtype == np.bool_:
            x = rng.random((rows, n)) < 0.3
        elif np.dtype(dtype).kind == "i":
            x = rng.integers(-2**40, 2**40, (rows, n)).astype(dtype)
        else:
            x = (rng.standard_normal((rows, n)) * 10.0 ** rng.integers(-2, 3, (rows, n)))
            x = x.astype(dtype)
        # invalid: LLVM's scalar float16 -> float32 conversion (vcvtph2ps of a whole
        # register) can raise x86's invalid flag from the register's other lanes, which
        # sends the call to NumPy (right, but not the kernel's bits under test)
        with np.errstate(over="ignore", invalid="ignore" if dtype == np.float16 else "warn"):
            assert_same(_run_native(fn, x), fn(x), f"{fn.__name__} n={n}")
