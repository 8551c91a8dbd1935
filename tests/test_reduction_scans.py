"""prod, argmax and argmin in fused kernels: NumPy's order (a product element after
element), its first index (ties, the first NaN), its errors, over rows, columns and all
axes, and that the native kernel ran."""
from __future__ import annotations

import numpy as np
import pytest
from _differential import assert_same

import tsjit
from tsjit import runtime


def _native(fn, *args):
    scripted = tsjit.script(fn)
    for _ in range(3):
        got = scripted(*args)
    stats = scripted.stats()
    assert stats["kernel_launches"] >= 1 and stats["bailouts"] == 0, stats
    text = str(scripted.graph_for(*args))
    group = text[text.index("with prim::FusionGroup_0"):].split("with prim::FallbackGraph")[0]
    return got, group


def row_scans(x):
    y = x * 1.5
    return np.argmax(y, axis=-1), y.argmin(axis=-1, keepdims=True), y.max(axis=-1)


def column_scans(x):
    y = x - 0.5
    return y.argmax(axis=0), np.argmin(y, axis=0, keepdims=True), y.prod(axis=0)


def flat_argmax(x):
    return np.argmax(x * 2)


def row_products(x):
    return np.prod(x * 1.0001, axis=-1), (x - 0.0001).prod(axis=-1, keepdims=True)


def full_product(x):
    return (x * 1.0001).prod()


def integer_products(x):
    return np.prod(x * 3, axis=-1), (x - 2).prod(axis=0, keepdims=True), (x + 1).prod()


def _with_specials(x: np.ndarray, rng) -> np.ndarray:
    """Ties, infinities and NaN where argmax must find the first of them."""
    x = x.copy()
    x[:, 5] = x[:, 2]              # a tie with an earlier element
    x[1] = np.inf
    x[2] = -np.inf                 # every element the search's start value
    x[3, 7], x[3, 9] = np.nan, np.nan
    x[4, 0] = np.nan
    x[5, :] = 0.0
    x[5, 3] = -0.0
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_arg_reductions_find_numpys_first_index(dtype):
    rng = np.random.default_rng(0)
    x = _with_specials(rng.standard_normal((8, 300)), rng).astype(dtype)
    for fn, arg in ((row_scans, x), (column_scans, x.T.copy()), (flat_argmax, x),
                    (flat_argmax, x[3:5].copy())):
        with np.errstate(all="ignore"):
            got, group = _native(fn, arg)
            assert_same(got, fn(arg), fn.__name__)
        assert "argm" in group


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_])
def test_integer_and_bool_arg_reductions(dtype):
    x = np.random.default_rng(1).integers(0, 3, (9, 40)).astype(dtype)

    def bools(x):
        return (x > 0).argmax(axis=-1), np.argmin(x != 1, axis=0), np.argmax(x == 7)

    for fn in (bools, column_scans, row_scans) if dtype != np.bool_ else (bools,):
        got, _ = _native(fn, x)
        assert_same(got, fn(x), fn.__name__)


def test_empty_arg_reductions_raise_numpys_error():
    scripted = tsjit.script(row_scans)
    for _ in range(2):
        scripted(np.ones((2, 3)))
    with pytest.raises(ValueError, match="empty sequence"):
        scripted(np.ones((2, 0)))
    assert_same(scripted(np.ones((0, 3))), row_scans(np.ones((0, 3))))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_products_are_numpys_bits(dtype):
    """NumPy multiplies in order from 1 (no pairwise tree): a float32 product of 3000
    factors near 1 shows any other order in its last bits."""
    rng = np.random.default_rng(2)
    if dtype in (np.float32, np.float64):
        x = (1 + rng.standard_normal((4, 3000)) * 0.001).astype(dtype)
        cases = ((row_products, x), (full_product, x), (column_scans, x.T.copy()))
    else:   # products that wrap around
        x = rng.choice(np.array([-1, 1, 3], dtype), (4, 3000))
        cases = ((integer_products, x), (integer_products, x.T.copy()))
    for fn, arg in cases:
        got, group = _native(fn, arg)
        assert_same(got, fn(arg), fn.__name__)
        assert "prod" in group


def first_indices_of_both(x):
    return np.argmax(x), np.argmin(x)


def test_full_arg_reductions_of_a_transposed_view_are_c_order_indices():
    """A Fortran-ordered operand is not walked transposed when the group reads indices:
    the memory order gave argmin 3 where NumPy's C-order flat index is 7."""
    a = np.array([[1.0, 5.0, 5.0, -2.0], [5.0, 0.0, -2.0, 3.0], [4.0, 4.0, 1.0, 1.0]])
    scripted = tsjit.script(first_indices_of_both)
    for x in (a, a, a.T, a.T, np.asfortranarray(a), a[:, ::-1]):
        assert_same(scripted(x), first_indices_of_both(x))


def sums_beside_scans(x):
    y = x * 1.0001
    return y.sum(axis=-1), np.prod(y, axis=-1), y.mean(axis=-1, keepdims=True), \
        np.argmax(y, axis=-1)


def full_sum_beside_product(x):
    y = x - 0.0001
    return np.sum(y), y.prod()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pairwise_sums_and_scans_of_one_value_share_a_kernel(dtype, threads):
    """A sum (pairwise) and a product or argmax (element after element) of the same
    value run as two passes of one kernel, each in NumPy's order."""
    rng = np.random.default_rng(3)
    x = (1 + rng.standard_normal((5, 3001)) * 0.001).astype(dtype)
    long = (1 + rng.standard_normal(400_003) * 0.0001).astype(dtype)   # split over threads
    before = runtime.get_num_threads()
    tsjit.set_num_threads(threads)
    try:
        for fn, arg in ((sums_beside_scans, x), (full_sum_beside_product, x),
                        (full_sum_beside_product, long)):
            got, group = _native(fn, arg)
            assert_same(got, fn(arg), fn.__name__)
            assert "sum" in group and "prod" in group, group
    finally:
        tsjit.set_num_threads(before)
