"""Reductions over axes other than the last: which fuse (graph_for, stats), and that every
call (fused, bailed out on a layout, an empty axis) gives NumPy's result or error."""
from __future__ import annotations

import logging
import re
import warnings

import numpy as np
import pytest
from _differential import assert_same

import tsjit
from tsjit.codegen.kernel_spec import KernelInput, KernelOp
from tsjit.codegen.reduction_launch import compile_row_kernel
from tsjit.codegen.reduction_spec import RowKernelSpec


def _scripted(fn, *args, calls: int = 3):
    scripted = tsjit.script(fn)
    for _ in range(calls):
        got = scripted(*args)
    return scripted, got


def _group(scripted, *args) -> str:
    """The first fusion group's ops, as graph_for prints them."""
    text = str(scripted.graph_for(*args))
    assert "with prim::FusionGroup_0" in text, text
    return text[text.index("with prim::FusionGroup_0"):].split("with prim::FallbackGraph")[0]


def standardized_columns(x):
    return (x - x.mean(axis=0)) / x.std(axis=0)


def column_stats(x, w):
    y = x * w
    return y.sum(axis=0), y.max(axis=0, keepdims=True), np.min(y, 0), np.any(y > 1, axis=0)


def middle_and_pairs(x):
    y = np.abs(x) + 1.0
    return y.sum(axis=1), y.mean(axis=(0, 1)), np.max(y, axis=(1, 2), keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_reductions_fuse_with_producers_and_consumers(dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 70)).astype(dtype)
    scripted, got = _scripted(standardized_columns, x)
    assert_same(got, standardized_columns(x), ulps=0)
    group = _group(scripted, x)
    for op in ("ndarray::mean", "ndarray::std", "aten::sub", "aten::truediv"):
        assert op in group, op
    stats = scripted.stats()
    assert stats["kernel_launches"] >= 1 and stats["bailouts"] == 0, stats


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_column_and_middle_axis_reductions_match_numpy(dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((40, 3, 33)) * 5).astype(dtype)
    w = (rng.standard_normal(33) * 3).astype(dtype)
    for fn, args in ((column_stats, (x[0], w)), (column_stats, (x.reshape(120, 33), w)),
                     (middle_and_pairs, (x,))):
        scripted, got = _scripted(fn, *args)
        assert_same(got, fn(*args), fn.__name__)
        assert "prim::FusionGroup" in str(scripted.graph_for(*args))
        stats = scripted.stats()
        assert stats["kernel_launches"] >= 1 and stats["bailouts"] == 0, (fn.__name__, stats)


def weighted_columns(x, w):
    y = x * w
    return (y.sum(axis=0), y.mean(axis=0, keepdims=True), np.max(y, axis=0),
            np.min(y - w, axis=0))


def weighted_column_spread(x, w):
    y = x * w
    return np.var(y, axis=0), y - y.mean(axis=0), np.argmin(y, axis=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_columns_of_values_weighted_per_row_run_natively(dtype):
    """``(x * w).sum(axis=0)`` with ``w`` of shape (m, 1): NumPy adds the rows of the
    C-ordered product one after another, as the column kernel does, reading ``w`` once per
    reduced row.  Kept axes after the reduced one, ties of max/min at zero (their search
    reads ``w`` too), and a Fortran-ordered ``x`` (its transposed kernel sums pairwise;
    argmin's index order has no transposed kernel: left to NumPy).  A NaN: max/min's
    invalid flag, which NumPy does not raise, sends the call to NumPy (a bailout)."""
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((300, 70)) * 4).astype(dtype)
    w = (rng.standard_normal((300, 1)) * 2).astype(dtype)
    cases = [(x, w), (x[:, :5], w), (x.reshape(30, 10, 70), w[:30].reshape(30, 1, 1))]
    if np.dtype(dtype).kind == "f":
        signed = x.copy()
        signed[:, :20] = -np.abs(signed[:, :20])
        signed[::3, :20] = -0.0
        cases += [(signed, np.abs(w)), (signed, -np.abs(w))]
        signed = signed.copy()
        signed[7, 30] = np.nan
        cases.append((signed, w))
    for fn in (weighted_columns, weighted_column_spread):
        fortran = [(np.asfortranarray(x), w)] if fn is weighted_columns else []
        for args in cases + fortran:
            scripted, got = _scripted(fn, *args)
            assert_same(got, fn(*args), f"{fn.__name__}{[a.shape for a in args]}")
            stats = scripted.stats()
            nan = np.isnan(args[0]).any() and fn is weighted_columns
            assert stats["kernel_launches"] >= 1 and (nan or stats["bailouts"] == 0), stats


def test_a_value_per_row_and_a_column_reduction_fuse_in_one_kernel():
    """One kernel; later calls with ``w`` of other shapes (a full matrix, a row, one
    value per row of a 3-D ``x`` that varies along its kept axes) give NumPy's results:
    by the kernel that walks them, or (the last) by NumPy after a bailout."""
    def weighted_sum(x, w):
        return (x * w).sum(axis=0)

    rng = np.random.default_rng(12)
    x = rng.standard_normal((64, 48))
    w = np.linspace(0.5, 2.0, 64).reshape(64, 1)
    scripted, _ = _scripted(weighted_sum, x, w)
    group = _group(scripted, x, w)
    assert "aten::mul" in group and "ndarray::sum" in group, group
    for other in (rng.standard_normal((64, 48)), rng.standard_normal(48), w[::-1], w):
        assert_same(scripted(x, other), weighted_sum(x, other))
    assert scripted.stats()["bailouts"] == 0
    x3, w3 = rng.standard_normal((8, 5, 6)), rng.standard_normal((8, 5, 1))
    assert_same(scripted(x3, w3), weighted_sum(x3, w3))


def test_a_value_per_row_varying_along_kept_axes_is_not_fused(caplog):
    def weighted_sum(x, w):
        return (x * w).sum(axis=0)

    rng = np.random.default_rng(13)
    x, w = rng.standard_normal((8, 5, 6)), rng.standard_normal((8, 5, 1))
    with caplog.at_level(logging.DEBUG, logger="tsjit.fuser"):
        scripted, got = _scripted(weighted_sum, x, w)
    assert_same(got, weighted_sum(x, w))
    assert scripted.stats()["kernel_launches"] == 0
    assert "varies along the kept axes after them" in caplog.text


def test_other_layouts_and_empty_axes_give_numpys_results_and_errors():
    """A reversed run makes NumPy walk another order: the group's ops run in NumPy (a
    bailout); a Fortran-ordered operand runs transposed.  An empty reduced axis: 0 for a
    sum, a warning and NaN for a mean, ValueError for a max."""
    def column_sum(x):
        return (x * 2.0).sum(axis=0)

    def column_mean(x):
        return (x * 2.0).mean(axis=0)

    def column_max(x):
        return (x * 2.0).max(axis=0)

    x = np.random.default_rng(2).standard_normal((50, 20))
    scripted, _ = _scripted(column_sum, x)
    for other in (np.asfortranarray(x), x[::2], np.zeros((0, 20)), x[:, :0]):
        assert_same(scripted(other), column_sum(other))
    assert scripted.stats()["bailouts"] == 0
    assert_same(scripted(x[:, ::-1]), column_sum(x[:, ::-1]))
    assert scripted.stats()["bailouts"] == 1
    scripted, _ = _scripted(column_mean, x)
    reports = []
    for fn in (scripted, column_mean):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reports.append((fn(np.zeros((0, 3))), [str(w.message) for w in caught]))
    assert_same(reports[0][0], reports[1][0])
    assert reports[0][1] == reports[1][1] and "Mean of empty slice" in reports[1][1]
    scripted, _ = _scripted(column_max, x)
    with pytest.raises(ValueError, match="zero-size array"):
        scripted(np.zeros((0, 3)))


def test_matrix_norms_are_not_read_as_vector_norms(caplog):
    def matrix_norm(x):
        return np.linalg.norm(x * 2.0, ord=1, axis=(0, 1))

    x = np.random.default_rng(3).standard_normal((6, 5))
    with caplog.at_level(logging.DEBUG, logger="tsjit.fuser"):
        scripted, got = _scripted(matrix_norm, x)
    assert_same(got, matrix_norm(x))
    assert "prim::FusionGroup" not in str(scripted.graph_for(x))
    assert "numpy::linalg_norm" in caplog.text and "two axes (a matrix norm)" in caplog.text


def test_the_log_says_why_a_reduction_is_not_fused(caplog):
    def masked(x, m):
        return (x * 2.0).sum(where=m)

    x = np.random.default_rng(3).standard_normal((6, 5))
    with caplog.at_level(logging.DEBUG, logger="tsjit.fuser"):
        scripted, got = _scripted(masked, x, x > 0)
    assert_same(got, masked(x, x > 0))
    assert "ndarray::sum at" in caplog.text and "where= is given" in caplog.text


def test_a_group_keeps_one_set_of_reduced_axes(caplog):
    def two_axes(x):
        y = x * 2.0
        return y.sum(axis=0), y.sum(axis=1)

    x = np.random.default_rng(4).standard_normal((6, 5))
    with caplog.at_level(logging.DEBUG, logger="tsjit.fuser"):
        scripted, got = _scripted(two_axes, x)
    assert_same(got, two_axes(x))
    assert "reduces other axes than the group's reductions" in caplog.text


def fortran_programs(x, w):
    y = x * w
    return y.sum(axis=0), y.mean(axis=-1, keepdims=True), np.var(y, axis=0), y.max()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fortran_ordered_operands_run_transposed_with_numpys_bits_and_layout(dtype):
    """NumPy walks a Fortran-ordered array (and the temporaries made from it) in memory
    order: axis 0 is the inner one.  Its sums along axis 0 are then pairwise, along the
    last axis one element after another, and its results are Fortran-ordered."""
    rng = np.random.default_rng(5)
    for shape in ((300, 70), (7, 3000), (40, 3, 50)):
        x = np.asfortranarray(rng.standard_normal(shape).astype(dtype))
        w = dtype(1.5)
        scripted = tsjit.script(fortran_programs)
        for _ in range(3):
            got = scripted(x, w)
        want = fortran_programs(x, w)
        assert_same(got, want, ulps=0)
        for g, r in zip(got, want):
            assert np.ndim(g) == 0 or (g.strides == r.strides and g.base is None)
        stats = scripted.stats()
        assert stats["kernel_launches"] >= 1 and stats["bailouts"] == 0, stats


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_a_column_max_stores_whole_vectors(dtype):
    """A column kernel's max/min follows NumPy's rule at every step, a select between the
    value so far (loaded from its lane) and the next row's: it stores every lane back,
    never a masked store (``vmaskmovps`` is microcoded on AMD's cores; a masked AVX-512
    store is ``{%k}``), which LLVM makes of such a select unless the loaded value is
    frozen."""
    t = np.dtype(dtype)
    spec = RowKernelSpec((KernelInput(t, 2, False), KernelInput(t, 0, True)),
                         (KernelOp("mul", (0, 1), t), KernelOp("reduce_max", (2,), t),
                          KernelOp("reduce_min", (2,), t)),
                         (3, 4), (1, 1), full=False, column=(0, 1))
    asm = compile_row_kernel(spec).asm
    stores = [line for line in asm.splitlines() if "vmaskmov" in line or
              (re.search(r"\{%k\d\}", line) and re.match(r"\s*vmov", line))]
    assert not stores, stores
    x = -np.abs(np.random.default_rng(14).standard_normal((50, 20))).astype(dtype)
    x[::7] = 0.0
    got = compile_row_kernel(spec).call(x, dtype(1.5))
    want = np.max(x * dtype(1.5), axis=0), np.min(x * dtype(1.5), axis=0)
    assert_same(got, want, "column max/min")
