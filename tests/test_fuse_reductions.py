"""The reduction fuser: which reductions join a fusion group with the elementwise work
around them, what graph_for shows, what the fuser's log says, and that every call (fused,
bailed out on a layout or a short row, refused at fusion) gives NumPy's result or error."""
from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest
from _differential import assert_same

import tsjit


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    v = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(v + 1e-5) * g + b


def logsumexp(x):
    m = np.max(x, axis=-1, keepdims=True)
    return m[..., 0] + np.log(np.sum(np.exp(x - m), axis=-1))


def mse(a, b):
    return np.mean((a - b) ** 2)


def stats_of_rows(x):
    y = x * 2.0
    return y.sum(-1), y.max(-1), y.min(-1, keepdims=True), np.var(y, -1), np.std(y, -1, ddof=2)


def ints(x):
    return np.sum(x * 3, axis=-1), np.max(x - 1, axis=-1), np.min(x + 2)


def _scripted(fn, *args, calls: int = 3):
    scripted = tsjit.script(fn)
    for _ in range(calls):
        got = scripted(*args)
    return scripted, got


def test_softmax_is_one_group_with_both_reductions():
    x = np.random.default_rng(0).standard_normal((8, 50)).astype(np.float32)
    scripted, got = _scripted(softmax, x)
    assert_same(got, softmax(x), ulps=4)
    text = str(scripted.graph_for(x))
    assert text.count("prim::FusionGroup_0(") == 1
    group = text[text.index("with prim::FusionGroup_0"):]
    for op in ("ndarray::max", "numpy::exp", "ndarray::sum", "aten::truediv"):
        assert op in group.split("with prim::FallbackGraph")[0]
    assert scripted.stats()["bailouts"] == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_programs_match_numpy(dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 300)).astype(dtype)
    g, b = rng.standard_normal(300).astype(dtype), rng.standard_normal(300).astype(dtype)
    for fn, args, ulps in ((layer_norm, (x, g, b), 0), (logsumexp, (x,), 4),
                           (mse, (x, x[::-1].copy()), 0), (stats_of_rows, (x,), 0)):
        scripted, got = _scripted(fn, *args)
        assert_same(got, fn(*args), fn.__name__, ulps=ulps)
        stats = scripted.stats()
        assert stats["kernel_launches"] >= 1 and stats["bailouts"] == 0, (fn.__name__, stats)


def test_integer_reductions_are_exact():
    x = np.random.default_rng(2).integers(-2**31, 2**31, (5, 70), dtype=np.int64)
    for dtype in (np.int64, np.int32, np.uint8):
        y = x.astype(dtype)
        scripted, got = _scripted(ints, y)
        assert_same(got, ints(y))


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_nan_and_infinities_follow_numpy():
    x = np.random.default_rng(3).standard_normal((4, 20))
    x[0, 3], x[1, 0], x[2, 19], x[3, 5] = np.nan, np.inf, -np.inf, np.nan
    x[3, 6] = np.inf
    scripted, got = _scripted(stats_of_rows, x)
    assert_same(got, stats_of_rows(x))


def centered(x):
    return x - x.mean()


def test_layouts_the_kernel_does_not_take_run_numpys_order():
    """A Fortran-ordered array runs transposed; other C-like layouts (a column slice,
    reversed rows, a 2-D slice reduced whole) in their logical order: NumPy's orders.
    Layouts NumPy walks otherwise run as NumPy's ops (a bailout): a strided array of
    Fortran order (its temporaries are Fortran-ordered: rows add element by element), a
    2-D slice that a reduction reads itself (NumPy sums it in buffers of whole rows)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((30, 40)).astype(np.float32)
    scripted, _ = _scripted(stats_of_rows, x)
    for other in (np.asfortranarray(x), x.T, x[:, ::2], x[::-1, ::-3]):
        assert_same(scripted(other), stats_of_rows(other))
    assert scripted.stats()["bailouts"] == 0
    f = np.asfortranarray(rng.standard_normal((60, 80)).astype(np.float32))
    assert_same(scripted(f[::2, ::2]), stats_of_rows(f[::2, ::2]))
    assert scripted.stats()["bailouts"] == 1
    full, _ = _scripted(mse, x, x)
    assert_same(full(f, f + 1), mse(f, f + 1))
    assert_same(full(x[::2], x[1::2]), mse(x[::2], x[1::2]))
    assert full.stats()["bailouts"] == 0
    direct, _ = _scripted(centered, x)
    wide = rng.standard_normal((300, 400)).astype(np.float32)[:, :300]
    assert_same(direct(wide), centered(wide))
    assert direct.stats()["bailouts"] == 1


def test_empty_rows_raise_or_warn_as_numpy_does():
    x = np.ones((3, 4))
    scripted, _ = _scripted(stats_of_rows, x)
    with pytest.raises(ValueError):
        stats_of_rows(np.ones((3, 0)))
    with pytest.raises(ValueError):
        scripted(np.ones((3, 0)))
    means, _ = _scripted(mse, x, x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_same(means(np.ones((0, 4)), np.ones((0, 4))), mse(np.ones((0, 4)), np.ones((0, 4))))
    assert_same(scripted(np.ones((0, 4))), stats_of_rows(np.ones((0, 4))))


def test_a_kept_row_value_from_outside_is_read_once_per_row():
    """logsumexp's max is read later through m[..., 0], so the group gets it as an input
    of last size 1 (guarded), broadcast over each row."""
    x = np.random.default_rng(5).standard_normal((9, 33))
    scripted, got = _scripted(logsumexp, x)
    assert_same(got, logsumexp(x), ulps=4)
    assert scripted.stats()["bailouts"] == 0
    assert "sizes=[*, 1]" in str(scripted.graph_for(x))


def test_reductions_over_axes_apart_are_logged_and_left_to_numpy(caplog):
    def outer_sums(x):
        return np.sum(x * 2.0, axis=(0, 2))

    x = np.arange(24.0).reshape(2, 3, 4)
    with caplog.at_level(logging.DEBUG, logger="tsjit.fuser"):
        scripted, got = _scripted(outer_sums, x)
    assert_same(got, outer_sums(x))
    assert "kernels reduce one block of adjacent axes" in caplog.text
    assert "prim::FusionGroup" not in str(scripted.graph_for(x))


def test_a_reduction_without_keepdims_is_not_broadcast_over_rows():
    def centered(x):
        return x - x.mean(axis=-1)     # NumPy aligns the means with the columns

    x = np.arange(16.0).reshape(4, 4)
    scripted, got = _scripted(centered, x)
    assert_same(got, centered(x))


def norms(x):
    return (np.linalg.norm(x * 1.0, axis=-1), np.linalg.norm(x, axis=1, keepdims=True, ord=1),
            x / np.linalg.norm(x, axis=-1, keepdims=True),
            np.linalg.norm(x - 1, ord=np.inf, axis=-1), np.linalg.norm(x + 1, ord=-np.inf, axis=-1))


def truths(x):
    return (np.any(x > 0.5, axis=-1), np.all(x < 2, axis=-1, keepdims=True), (x > 0).any(),
            np.count_nonzero(x * 2, axis=-1), (x - 1).all())


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_norms_any_all_and_count_nonzero(dtype):
    x = (np.random.default_rng(6).standard_normal((5, 300)) * 3).astype(dtype)
    if dtype != np.int32:
        x[1, 3], x[3, 7] = np.nan, np.inf
        x[2] = 0
    for fn in (norms, truths):
        scripted, got = _scripted(fn, x)
        assert_same(got, fn(x), fn.__name__)
        # a max over NaN raises x86's invalid flag: such calls run in NumPy (a bailout)
        assert scripted.stats()["kernel_launches"] >= 2, fn.__name__
        clean = np.where(x == 0, 1, np.nan_to_num(x, nan=1.0, posinf=2.0)).astype(dtype)
        scripted, got = _scripted(fn, clean)
        assert_same(got, fn(clean), fn.__name__)
        assert scripted.stats()["bailouts"] == 0, fn.__name__


def lone_norm(x):
    return np.linalg.norm(x, axis=-1)


def lone_l1_norm(x):
    return np.linalg.norm(x, ord=1, axis=0, keepdims=True)


def lone_count(x):
    return np.count_nonzero(x, axis=1)


@pytest.mark.parametrize("fn", [lone_norm, lone_l1_norm, lone_count])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_reductions_numpy_computes_in_passes_are_fused_alone(fn, dtype):
    """NumPy's norm and count_nonzero over an axis build a temporary (x * x, |x|, x != 0)
    and reduce it: alone they still become a kernel, with NumPy's bits."""
    x = (np.random.default_rng(9).standard_normal((7, 333)) * 3).astype(dtype)
    x[2, :40] = 0
    scripted, got = _scripted(fn, x)
    assert_same(got, fn(x), fn.__name__)
    assert "prim::FusionGroup" in str(scripted.graph_for(x))
    assert scripted.stats()["kernel_launches"] >= 1


def test_floating_point_errors_are_reported_as_numpy_reports_them():
    """An overflow in a row kernel (and in a full reduction split across threads) warns,
    or raises under np.errstate, as NumPy does: the group's ops then run in NumPy."""
    def row_overflow(x):
        return np.exp(x * 100.0).sum(-1)

    def full_invalid(x):
        return np.sum(np.log(x) * 2.0)

    rows = np.linspace(0, 10, 400).reshape(4, 100)
    long_run = np.random.default_rng(8).random(1 << 19) - 0.5
    for fn, x, message in ((row_overflow, rows, "overflow"), (full_invalid, long_run, "invalid")):
        scripted = tsjit.script(fn)
        for _ in range(3):
            with pytest.warns(RuntimeWarning, match=message):
                got = scripted(x)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                assert_same(got, fn(x))
        with np.errstate(all="raise"), pytest.raises(FloatingPointError):
            scripted(x)
        assert scripted.stats()["kernel_launches"] >= 1
