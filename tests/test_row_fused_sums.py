"""A row kernel's sum of computed operands (layer norm's ``(x - mu) ** 2``) in a pass after
the first that read its inputs adds them as it computes them where the row's tree ends in
equal blocks (``reduction_tree``: rows of 136 to 1024 elements in multiples of 16, 32 or
64, and the nodes of longer rows), without NaN selects: it must give NumPy's pairwise-sum
bits, and where an operand is NaN, the buffered pass's NaN bits and the flags of one
exact pass (overflow warned once, raised under ``errstate``).  A first pass, a full
reduction and a row too long to stay in the cache keep the buffered path."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from _differential import assert_same

import tsjit
from tsjit.codegen import reduction_launch
from tsjit.codegen.reduction import build_row_kernel_module


def variance(x):
    mu = x.mean(-1, keepdims=True)
    return ((x - mu) ** 2).mean(-1)


def layer_norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    v = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(v + 1e-5) * g + b


def products(x):
    mu = x.mean(-1, keepdims=True)
    return ((x - mu) * (x + 2.0)).sum(-1) + (-(x * x - mu)).sum(-1)


def negated_squares(x):
    """LLVM folds ``(-d) * (-d)`` to ``d * d``: a NaN's sign is lost without NumPy's NaN
    selects (``element_ops._self_product``), which only the exact pass has."""
    mu = x.mean(-1, keepdims=True)
    return ((-(x - mu)) ** 2).sum(-1)


def pair_products(x, y):
    m = x.mean(-1, keepdims=True) + y.mean(-1, keepdims=True)
    return (x * y + m).sum(-1) + (y - x - m).sum(-1) + (x + y * m).sum(-1)


def first_pass_squares(x):
    return ((x - 1.5) ** 2).sum(-1)


def mse_loss(a, b):
    return np.mean((a - b) ** 2)


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
# at some nodes (not a multiple of the lanes of equal blocks); 5000: a tree above NODE;
# 40000: rows above reduction_tree.FUSED_ROW_BYTES (the buffered path).
@pytest.mark.parametrize("n", [136, 256, 384, 512, 768, 1000, 1024, 2050, 5000, 40000])
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


def fused_passes(fn, args, monkeypatch) -> list[list[int]]:
    """Per row kernel ``fn`` launches: the passes whose sums have a fused tree."""
    specs = []
    compile_row_kernel = reduction_launch.compile_row_kernel

    def recording(spec):
        specs.append(spec)
        return compile_row_kernel(spec)

    monkeypatch.setattr(reduction_launch, "compile_row_kernel", recording)
    scripted_warmed(fn, args)(*args)
    assert specs
    names = [{f.name for f in build_row_kernel_module(spec, "k", True).functions}
             for spec in specs]
    return [[p for p in range(8) if f"k_node{p}f" in found] for found in names]


@pytest.mark.parametrize("fn, args, want", [
    (variance, (np.ones((64, 1024), np.float32),), [[1]]),
    (layer_norm, (np.ones((64, 1024), np.float32),) + (np.ones(1024, np.float32),) * 2,
     [[1]]),
    # the functions of the NaN tests above
    (products, (np.ones((64, 1024), np.float32),), [[1]]),
    (negated_squares, (np.ones((64, 1024), np.float32),), [[1]]),
    (pair_products, (np.ones((64, 1024), np.float32),) * 2, [[1]]),
    # read from memory by the sum itself: the buffered path's reads in order
    (first_pass_squares, (np.ones((64, 1024), np.float32),), [[]]),
    (mse_loss, (np.ones(1 << 16, np.float32), np.zeros(1 << 16, np.float32)), [[]]),
], ids=["variance", "layer_norm", "products", "negated_squares", "pair_products",
        "first_pass", "full"])
def test_only_sums_of_cached_inputs_fuse(fn, args, want, monkeypatch):
    """The fused sums read their operands at several places at once, which the hardware
    prefetchers do not follow: they only read inputs that an earlier pass brought into
    the cache (reduction_tree.fuses_in_cache; the loss of 16M float32 took 1.6x the
    buffered path's time)."""
    assert fused_passes(fn, args, monkeypatch) == want
