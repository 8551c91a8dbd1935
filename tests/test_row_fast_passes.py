"""Row kernels' fast passes leave out the NaN selects (``operand_nans``) of ops whose NaN
reaches a value they check (``row_fast_blocks``, ``reduction_tree``): a NaN there sends
the pass to its exact one, so NaN results keep NumPy's bits, payload and sign, wherever
they come from (an input of the row, a per-column operand, inf - inf; softmax's and
logsumexp's sums of exp's fast form, checked by whether the sum is NaN)."""
from __future__ import annotations

import numpy as np
import pytest
from _differential import assert_same

import tsjit


def layer_norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    v = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(v + 1e-5) * g + b


def layer_norm_operands_first(x, g, b):
    mu = x.mean(-1, keepdims=True)
    v = ((x - mu) ** 2).mean(-1, keepdims=True)
    return b + g * ((x - mu) / np.sqrt(v + 1e-5))


def softmax(x, g, b):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def logsumexp(x, g, b):
    m = x.max(axis=-1, keepdims=True)
    return m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def nan(dtype: type, negative: bool, payload: int):
    """A quiet NaN of ``dtype`` with this sign and payload."""
    info = np.finfo(dtype)
    bits = np.dtype(f"u{info.bits // 8}").type
    word = (bits(negative) << bits(info.bits - 1)) | \
        (((bits(1) << bits(info.nexp)) - bits(1)) << bits(info.nmant)) | \
        (bits(1) << bits(info.nmant - 1)) | bits(payload)
    return np.array([word]).astype(bits).view(dtype)[0]


def rows_with_nans(dtype: type, n: int) -> tuple[np.ndarray, ...]:
    """Rows and per-column operands with NaNs of distinct bits: in g and b (one column
    NaN in both), in a row's x (that row all NaN), +inf next to -inf (a NaN mean), +inf
    alone."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, n)).astype(dtype)
    g, b = rng.standard_normal((2, n)).astype(dtype)
    g[5], b[5], b[9] = nan(dtype, True, 0x123), nan(dtype, False, 0x77), nan(dtype, False, 0x45)
    x[1, 9], x[3, n - 1] = nan(dtype, True, 0x99), nan(dtype, False, 0x5)
    x[2, 3], x[2, 4], x[4, n // 2] = np.inf, -np.inf, np.inf
    return x, g, b


@pytest.mark.parametrize("fn, ulps", [(layer_norm, 0), (layer_norm_operands_first, 0),
                                      (softmax, 4), (logsumexp, 4)],   # exp: the contract's
                         ids=lambda f: getattr(f, "__name__", ""))
@pytest.mark.parametrize("n", [37, 1024, 5000])   # 5000: past the scratch buffers
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_results_have_numpys_bits(fn, ulps, n, dtype):
    x, g, b = rows_with_nans(dtype, n)
    scripted = tsjit.script(fn)
    for _ in range(3):
        scripted(np.zeros_like(x), g, b)
    with np.errstate(all="ignore"):
        want, got = fn(x, g, b), scripted(x, g, b)
    assert scripted.stats()["kernel_launches"] > 0
    assert scripted.stats()["bailouts"] == 0
    assert_same(got, want, ulps=ulps)
    words = np.dtype(f"u{np.dtype(dtype).itemsize}")
    nans = np.isnan(want)
    assert nans.any()
    assert np.array_equal(got[nans].view(words), want[nans].view(words))
