"""A row kernel's sum of computed operands (layer norm's ``(x - mu) ** 2``) adds them as it
computes them where the row's tree ends in equal blocks (``reduction_tree``: rows of 136
to 1024 elements in multiples of 16, 32 or 64, and the nodes of longer rows), without
NaN selects: it must give NumPy's pairwise-sum bits, and where an operand is NaN, the
buffered pass's NaN bits and the flags of one exact pass (overflow warned once, raised
under ``errstate``)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from _differential import assert_same

import tsjit


def variance(x):
    mu = x.mean(-1, keepdims=True)
    return ((x - mu) ** 2).mean(-1)


def layer_norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    v = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(v + 1e-5) * g + b


def products(x):
    return ((x - 1.5) * (x + 2.0)).sum(-1) + (-(x * x)).sum(-1)


def negated_squares(x):
    """LLVM folds ``(-x) * (-x)`` to ``x * x``: a NaN's sign is lost without NumPy's NaN
    selects (``element_ops._self_product``), which only the exact pass has."""
    return ((-x) ** 2).sum(-1)


def pair_products(x, y):
    return (x * y).sum(-1) + (y - x).sum(-1) + (x + y).sum(-1)


def scripted_warmed(fn, args):
    scripted = tsjit.script(fn)
    for _ in range(3):
        scripted(*[np.zeros_like(a) for a in args])
    return scripted


def outcome_and_warnings(fn, args) -> tuple[object, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [str(w.message) for w in caught]


# 1024, 768: eight blocks; 512, 384: four; 256, 136: two; 1000, 2050: the buffered path
# at some nodes (not a multiple of the lanes of equal blocks); 5000: a tree above NODE.
@pytest.mark.parametrize("n", [136, 256, 384, 512, 768, 1000, 1024, 2050, 5000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [variance, layer_norm, products], ids=lambda f: f.__name__)
def test_bits_are_numpys(fn, dtype, n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((5, n)) * 3 + 1).astype(dtype)
    g, b = rng.standard_normal((2, n)).astype(dtype)
    args = (x, g, b) if fn is layer_norm else (x,)
    scripted = scripted_warmed(fn, args)
    assert_same(scripted(*args), fn(*args))
    assert scripted.stats()["kernel_launches"] > 0


@pytest.mark.parametrize("n", [256, 1024, 5000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [products, negated_squares], ids=lambda f: f.__name__)
def test_a_nan_operand_gives_the_exact_passes_bits(fn, dtype, n):
    words = np.dtype(f"u{np.dtype(dtype).itemsize}")
    x = np.random.default_rng(1).standard_normal((4, n)).astype(dtype)
    payload = np.array([0xFFF80000000000AB if dtype == np.float64 else 0xFFC000AB],
                       dtype=words).view(dtype)[0]
    x[1, n // 3] = payload       # a negative NaN with a payload: its bits must survive
    x[2, 5], x[2, n - 1] = np.inf, -np.inf
    scripted = scripted_warmed(fn, (x,))
    (got, got_warned), (want, want_warned) = (outcome_and_warnings(f, (x,))
                                              for f in (scripted, fn))
    assert got_warned == want_warned
    assert np.array_equal(got.view(words), want.view(words))


@pytest.mark.parametrize("n", [256, 1024])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_two_nans_meet_as_in_numpy(dtype, n):
    """Where two NaNs of different bits meet in an op, NumPy's loop picks one by operand
    order, which the vectors (without selects) need not keep."""
    words = np.dtype(f"u{np.dtype(dtype).itemsize}")
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((2, 4, n)).astype(dtype)
    for row, (first, second) in enumerate([(0xAB, 0xCD), (0x12, 0x34)]):
        bits = [(0xFFF8000000000000 if dtype == np.float64 else 0xFFC00000) + p
                for p in (first, second)]
        x[row, n // 2], y[row, n // 2] = np.array(bits, dtype=words).view(dtype)
    scripted = scripted_warmed(pair_products, (x, y))
    assert np.array_equal(scripted(x, y).view(words), pair_products(x, y).view(words))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_overflow_is_reported_as_numpy_reports_it(dtype):
    x = np.full((3, 1024), np.finfo(dtype).max / 4, dtype=dtype)
    x[:, ::2] *= -1       # mean 0, squares overflow to inf, their sum inf
    scripted = scripted_warmed(variance, (x,))
    (got, got_warned), (want, want_warned) = (outcome_and_warnings(f, (x,))
                                              for f in (scripted, variance))
    assert want_warned and got_warned == want_warned
    assert_same(got, want)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        scripted(x)
