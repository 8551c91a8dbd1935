"""Fused max and min give NumPy's exact bits where equal values differ: the sign of a zero
result and a NaN's sign and payload (codegen/reduction_ties.py, following the order
codegen/numpy_minmax.py measures of NumPy on this machine), over rows, whole arrays and
leading axes, for float16/32/64 and every thread count; float16 max, min, argmax, argmin
and prod fuse.

Each function multiplies by 1.0 first so that the reduction is fused with a producer (a
reduction alone stays a NumPy call); eager NumPy on the same expression is the reference,
compared bit for bit, and every check asserts that the kernel ran without a bailout.
Products with NaN operands are compared as NaN (the contract's rule for arithmetic; which
of two NaN operands NumPy's float16 product keeps is not followed).  NaN inputs run under
``errstate(invalid="ignore")``: x86's max raises the invalid flag
for a NaN, which under NumPy's default error state sends the group to NumPy again (also
checked); ignored, the kernel's own result is returned.
"""
from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
import pytest
from _differential import assert_same

import tsjit
from tsjit import runtime
from tsjit.codegen import fp_status, numpy_minmax

_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}
_NANS = {2: (0x7E03, 0xFE05), 4: (0x7FC00123, 0xFFC00456),
         8: (0x7FF8000000000123, 0xFFF8000000000456)}
DTYPES = (np.float16, np.float32, np.float64)


def rows(x):
    y = x * 1.0
    return np.max(y, axis=-1), np.min(y, axis=-1, keepdims=True)


def whole(x):
    y = x * 1.0
    return np.max(y), y.min()


def columns(x):
    y = x * 1.0
    return y.max(axis=0), np.min(y, axis=0, keepdims=True)


def middle_axis(x):
    y = x.reshape(2, -1, x.shape[-1]) * 1.0
    return np.max(y, axis=1), y.min(axis=1)


def half_rows(x):
    y = x * 1.0
    return np.argmax(y, axis=-1), y.argmin(axis=-1), np.prod(y, axis=-1)


def half_columns(x):
    y = x * 1.0
    return y.argmax(axis=0), np.argmin(y, axis=0), y.prod(axis=0)


def half_whole(x):
    return (x * 1.0).prod(), np.max(x * 1.0)


HALF_SCANS = (half_rows, half_columns, half_whole)


def _lengths(dtype) -> list[int]:
    """Lengths around NumPy's vector width here, its blocks of eight vectors and the
    scalar rest (float16: NumPy's loop is scalar; the float32 width's lengths).  A row of
    one is not fused (a last size of 1 is read as one value per row)."""
    order = numpy_minmax.row_order(np.dtype(dtype).name)
    lanes = order.lanes or 8
    block = 8 * lanes
    return [2, 3, lanes - 1, lanes, lanes + 1, lanes + 2, 2 * lanes + 1, block,
            block + 1, block + 2, block + lanes + 1, block + lanes + 3, 2 * block + 1,
            2 * block + lanes // 2 + 3, 1000, 4099]


def _signed_zeros(rng, shape, dtype, far: float) -> np.ndarray:
    """Mostly zeros of either sign, some values on the far side of zero."""
    return rng.choice(np.array([0.0, -0.0, 0.0, -0.0, far], dtype), size=shape)


def _with_nans(rng, x: np.ndarray) -> np.ndarray:
    """A NaN of each sign (with payloads) at random places in every row."""
    x = x.copy()
    flat = x.reshape(-1, x.shape[-1])
    for payload in _NANS[x.dtype.itemsize]:
        for row in flat:
            row[rng.integers(0, row.size)] = np.array(payload, _UINT[x.dtype.itemsize]) \
                .view(x.dtype)
    return x


def _assert_bits(got, want, where: str, nan_bits: bool = True) -> None:
    """Bitwise equal results; ``nan_bits=False``: NaN where NumPy gives NaN (a product's
    NaN: the contract asks no more of arithmetic, see the module docstring)."""
    assert_same(got, want, where)   # types, dtypes, shapes, values, zero signs
    for i, (g, w) in enumerate(zip(got, want)):
        if not nan_bits:
            break
        g, w = np.asarray(g), np.asarray(w)
        if w.dtype.kind == "f":
            uint = _UINT[w.dtype.itemsize]
            assert np.array_equal(g.view(uint), w.view(uint)), \
                f"{where}[{i}] bits: {g.view(uint)!r} != {w.view(uint)!r}"


def _check(fn, x, where: str, nan_bits: bool = True) -> None:
    scripted = tsjit.script(fn)
    for _ in range(2):
        got = scripted(x)
    stats = scripted.stats()
    assert stats["bailouts"] == 0 and stats["kernel_launches"] >= 1, (where, stats)
    _assert_bits(got, fn(x), where, nan_bits)


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    before = runtime.get_num_threads()
    tsjit.set_num_threads(request.param)
    yield request.param
    tsjit.set_num_threads(before)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [rows, whole])
def test_a_zero_result_has_numpys_sign_along_runs(fn, dtype, threads):
    rng = np.random.default_rng(5)
    for n in _lengths(dtype):
        for far in (-1.0, 1.0):   # a max (min) of zeros, of zeros and smaller (larger) values
            _check(fn, _signed_zeros(rng, (3, n), dtype, far), f"{fn.__name__} n={n}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [rows, whole])
def test_a_nan_result_has_numpys_bits_along_runs(fn, dtype, threads):
    rng = np.random.default_rng(6)
    for n in _lengths(dtype):
        x = _with_nans(rng, _signed_zeros(rng, (3, n), dtype, -1.0))
        with np.errstate(invalid="ignore"):
            _check(fn, x, f"{fn.__name__} n={n}")
        _assert_bits(tsjit.script(fn)(x), fn(x), f"{fn.__name__} n={n}, default errstate")


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_few_zeros_anywhere_in_long_rows(dtype, threads):
    """Rows of one to four zeros of either sign among non-zero values: the search for
    NumPy's zero (the last in its sequence: the rest, the top lane, the seed, the other
    lanes) finds it in any lane, vector, block of flags (1024 elements) or the rest;
    and one NaN of each sign anywhere.  Every row its own case; C rows, and reversed ones
    and every other element (the strided kernel's search, in its pieces)."""
    rng = np.random.default_rng(11)
    lanes = numpy_minmax.row_order(np.dtype(dtype).name).lanes or 8
    for n in (lanes + 3, 1025, 2 * 1024 + lanes + 2, 3 * 1024 + 5):
        x = np.where(rng.random((64, n)) < 0.5, -1.0, -2.0).astype(dtype)
        for row in x:
            count = rng.integers(1, 5)
            places = rng.integers(0, n, count)
            places[rng.random(count) < 0.3] = rng.integers(0, lanes + 1)   # the seed, a lane
            row[places] = rng.choice(np.array([0.0, -0.0], dtype), count)
        wide = np.repeat(x, 2, axis=-1)
        for view, name in ((x, "C"), (x[:, ::-1], "reversed"), (wide[:, ::2], "strided")):
            _check(rows, view, f"max n={n} {name}")
            _check(rows, -view, f"min n={n} {name}")
            with np.errstate(invalid="ignore"):
                _check(rows, _with_nans(rng, view), f"NaN n={n} {name}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_few_zeros_anywhere_in_long_columns(dtype, threads):
    """Columns of one to three zeros of either sign among non-zero values, and some of a
    NaN of each sign: each lane of a tile has its element at another reduced row, which
    the walk over the rows (from the last for float32/float64 zeros, from the first for
    NaNs and float16) finds for all of them at once."""
    rng = np.random.default_rng(12)
    for count, width in ((3, 5), (700, 37), (2500, 300)):
        x = np.where(rng.random((count, width)) < 0.5, -1.0, -2.0).astype(dtype)
        for column in x.T:
            places = rng.integers(0, count, rng.integers(1, 4))
            column[places] = rng.choice(np.array([0.0, -0.0], dtype), places.size)
        _check(columns, x, f"max count={count}")
        _check(columns, -x, f"min count={count}")
        _check(middle_axis, np.concatenate([x, -x]), f"middle count={count}")
        nans = x.copy()
        for column in nans.T[::2]:
            for payload in _NANS[x.dtype.itemsize]:
                column[rng.integers(0, count)] = np.array(payload, _UINT[x.dtype.itemsize]) \
                    .view(x.dtype)
        with np.errstate(invalid="ignore"):
            _check(columns, nans, f"NaN count={count}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [columns, middle_axis])
def test_leading_axes_keep_numpys_zero_and_nan(fn, dtype, threads):
    rng = np.random.default_rng(8)
    for count in (1, 2, 3, 9, 64):
        x = _signed_zeros(rng, (2 * count, 37), dtype, -1.0)
        _check(fn, x, f"{fn.__name__} rows={count}")
        with np.errstate(invalid="ignore"):
            _check(fn, _with_nans(rng, x.T.copy()).T.copy(), f"{fn.__name__} NaN rows={count}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [rows, columns, whole])
def test_fortran_ordered_operands_follow_numpys_memory_order(fn, dtype):
    """NumPy walks a Fortran-ordered operand in memory order: a row max is then its binary
    loop along the rows, a column max a contiguous run (the kernels of reversed axes)."""
    rng = np.random.default_rng(10)
    for shape in ((3, 40), (70, 5), (9, 300)):
        x = np.asfortranarray(_signed_zeros(rng, shape, dtype, -1.0))
        _check(fn, x, f"{fn.__name__} F-ordered {shape}")
        with np.errstate(invalid="ignore"):
            _check(fn, np.asfortranarray(_with_nans(rng, x)), f"{fn.__name__} F NaN {shape}")


def test_a_long_run_split_across_threads_keeps_numpys_zero(threads):
    rng = np.random.default_rng(9)
    x = np.full(300_007, -1.0, np.float32)
    places = rng.choice(x.size, 40, replace=False)
    x[places] = np.where(rng.random(40) < 0.5, 0.0, -0.0).astype(np.float32)
    _check(whole, x, "one long run")
    x[rng.integers(0, x.size)] = np.nan
    with np.errstate(invalid="ignore"):
        _check(whole, x, "one long run with a NaN")


def test_a_zero_found_through_a_computed_operand():
    """The walk for NumPy's zero computes the operand again (here exp and a product)."""
    def signed_zeros(x):
        e = np.exp(x) * (x * 0.0)   # a zero of x's sign
        return e.max(axis=-1), np.min(e, axis=-1)

    x = np.random.default_rng(2).standard_normal((4, 203)).astype(np.float32)
    _check(signed_zeros, x, "exp(x) * (x * 0)")


def test_float16_max_min_argmax_argmin_and_prod_fuse():
    rng = np.random.default_rng(4)
    for n in (2, 7, 33, 1000):
        signs = rng.choice([-1.0, 1.0], (6, n))   # products stay finite: values near 1
        x = (signs * (1.0 + 0.01 * rng.standard_normal((6, n)))).astype(np.float16)
        x[1] = _signed_zeros(rng, n, np.float16, -1.0)
        x[2, :: 3] = x[2, 0]                       # ties: the first index
        for fn in HALF_SCANS:
            _check(fn, x, f"{fn.__name__} n={n}")
            with np.errstate(invalid="ignore"):   # products: NaN, not its payload
                _check(fn, _with_nans(rng, x), f"{fn.__name__} NaN n={n}", nan_bits=False)


def test_a_float16_product_along_a_row_is_rounded_once():
    """NumPy multiplies a float16 row in float32 and rounds once; a column one half
    multiply after another (each rounded)."""
    x = np.full((3, 4000), 1.0004, np.float16)
    for fn in HALF_SCANS:
        _check(fn, x, f"{fn.__name__}: products near 1")


def test_the_measured_order_rejects_a_wrong_model():
    """The model is used only where NumPy agrees with it: the lanes reversed do not."""
    order = numpy_minmax.row_order("float32")
    wrong = numpy_minmax.RowOrder(order.lanes, order.lane_order[::-1], order.vector_nan)
    assert numpy_minmax._holds(order, np.dtype(np.float32))
    assert not numpy_minmax._holds(wrong, np.dtype(np.float32))


def minus_max(x):
    return x - x.max(axis=-1, keepdims=True)


def minus_max_and_min(x):
    return x - x.max(axis=-1, keepdims=True), x.min(axis=-1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_nan_anywhere_in_a_row_gives_the_exact_scans_bits(dtype):
    """A float row max/min of values in memory runs x86's maxps/minps, which drop a NaN
    but raise invalid for it; the row then runs the exact scan (reduction_extremes): a NaN
    at every position of a row of 45 (whole groups of vectors, then vectors up to the end,
    the last overlapping) gives NumPy's bits (x - max: the max's NaN's)."""
    n = 45
    scripted = tsjit.script(minus_max_and_min)
    for _ in range(3):
        scripted(np.zeros((3, n), dtype))
    for position in range(n):
        x = np.linspace(-2.0, 3.0, 3 * n).astype(dtype).reshape(3, n)
        x[1, position] = np.array(_NANS[x.dtype.itemsize][position % 2],
                                  _UINT[x.dtype.itemsize]).view(dtype)
        with np.errstate(invalid="ignore"):
            _assert_bits(scripted(x), minus_max_and_min(x), f"NaN at {position}")
    assert scripted.stats()["bailouts"] == 0
    if fp_status.supported() and llvm.get_host_cpu_features().get("avx", False) and \
            dtype != np.float16:   # (float16 values are not in memory as floats)
        assert "_extremes0" in scripted.inspect_llvm(x)


def test_an_earlier_rows_invalid_flag_stays_raised():
    """The max's pass clears the invalid flag to see whether its row has a NaN, and puts
    back what earlier rows raised: inf - inf in the first row still warns."""
    x = np.random.default_rng(8).standard_normal((4, 100)).astype(np.float32)
    x[0, 3] = np.inf
    scripted = tsjit.script(minus_max)
    for _ in range(3):
        scripted(np.zeros_like(x))
    with pytest.warns(RuntimeWarning, match="invalid value encountered in subtract"):
        got = scripted(x)
    with np.errstate(invalid="ignore"):
        assert_same(got, minus_max(x))


def read_as_is(x):
    """The reductions read ``x`` itself (NumPy reduces the view as it is), beside a
    product that fuses them."""
    return x * 1.0, np.max(x, axis=-1), x.min(axis=-1, keepdims=True)


def read_whole_as_is(x):
    return x * 1.0, np.max(x), np.min(x, keepdims=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_view_reduced_as_it_is_follows_numpys_unrolled_loop(dtype):
    """NumPy keeps a view's negative strides in a reduction: a reversed or every-other-
    element run goes to its scalar loop unrolled by eight (numpy_minmax), not the SIMD
    loop of contiguous runs. The first fuzz find: a float32 (3, 3) x[::-1, ::-1] whose NaN
    came out as NumPy's default NaN (the SIMD loop's) where NumPy keeps the NaN's bits."""
    rng = np.random.default_rng(13)
    assert dtype == np.float16 or numpy_minmax.unrolled_holds(np.dtype(dtype).name)
    for n in (2, 3, 8, 9, 10, 15, 16, 17, 18, 25, 33, 1000):   # around groups of eight
        x = _signed_zeros(rng, (4, 2 * n), dtype, -1.0)
        for view, name in ((x[:, ::-1], "reversed"), (x[:, ::2], "every other"),
                           (x[::-1, ::-1], "both reversed")):
            view = view[:, :n]
            _check(read_as_is, view, f"zeros n={n} {name}")
            _check(read_as_is, -view, f"min zeros n={n} {name}")
            _check(read_whole_as_is, view[0], f"whole zeros n={n} {name}")
            with np.errstate(invalid="ignore"):
                nans = _with_nans(rng, view)
                _check(read_as_is, nans, f"NaN n={n} {name}")
                _check(read_whole_as_is, nans[::-1, ::-1] if name == "reversed" else nans[0],
                       f"whole NaN n={n} {name}")


def test_the_unrolled_model_differs_from_the_contiguous_one():
    """The unrolled loop's model is measured, and NumPy's results for reversed runs are
    not those of its contiguous loop (which the kernels follow elsewhere)."""
    rng = np.random.default_rng(3)
    order = numpy_minmax.row_order("float32")
    x = _with_nans(rng, _signed_zeros(rng, (64, 24), np.float32, -1.0))[:, ::-1]
    with np.errstate(invalid="ignore"):
        want = np.max(x, axis=-1).view(np.uint32)
    contiguous = numpy_minmax._model_rows(order, np.ascontiguousarray(x), True)
    assert not np.array_equal(contiguous, want)
    assert np.array_equal(numpy_minmax._unrolled_model(np.ascontiguousarray(x), True), want)
