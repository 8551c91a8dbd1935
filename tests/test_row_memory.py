"""Row kernels of large jobs prefetch each next row and write element-level outputs of at
least ``row_memory.STREAM_BYTES`` with non-temporal stores through L1 chunk buffers
(``codegen/row_memory.py``): the same bits as the same kernel's ordinary stores (a job
below the thresholds: the rows in pieces), and NumPy's where the ops are sums, for rows
whose starts are not 32-byte aligned, several outputs, a bool output, an operand
broadcast over the rows, with 1 and 2 threads; a strided kernel's rows do neither."""
from __future__ import annotations

import numpy as np
import pytest
from _differential import assert_same

import tsjit
from tsjit import runtime
from tsjit.codegen.row_memory import STREAM_BYTES


def centered_and_above(x):
    centered = x - x.mean(axis=-1, keepdims=True)
    return centered, centered > 0


def softmax_and_exp(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True), e


def scaled_softmax(x, w):
    e = np.exp(x * w - (x * w).max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("fn", [centered_and_above, softmax_and_exp, scaled_softmax])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_streamed_outputs_are_the_kernels_cached_ones(threads, fn, dtype):
    n = 1001                                   # rows start 4 or 8 bytes off alignment
    rows = STREAM_BYTES // (np.dtype(dtype).itemsize * n) + 3
    x = np.random.default_rng(0).standard_normal((rows, n)).astype(dtype)
    w = np.linspace(0.5, 1.5, n).astype(dtype)
    args = (x, w) if fn is scaled_softmax else (x,)
    previous = runtime.get_num_threads()
    tsjit.set_num_threads(threads)
    try:
        scripted = tsjit.script(fn)
        for _ in range(2):
            scripted(*(a[:64] if a.ndim == 2 else a for a in args))
        got = scripted(*args)
        assert "!nontemporal" in scripted.inspect_llvm(*args)
        # below the thresholds, in pieces: ordinary stores, no prefetch
        pieces = [scripted(*(a[k:k + 64] if a.ndim == 2 else a for a in args))
                  for k in range(0, rows, 64)]
        if isinstance(got, tuple):
            for j, result in enumerate(got):
                assert_same(result, np.concatenate([piece[j] for piece in pieces]))
        else:
            assert_same(got, np.concatenate(pieces))
        if fn is centered_and_above:            # a mean: NumPy's bits
            assert_same(got, fn(x))
        assert scripted.stats()["bailouts"] == 0
    finally:
        tsjit.set_num_threads(previous)


@pytest.mark.parametrize("step", [-1, 2])
@pytest.mark.parametrize("fn", [centered_and_above, softmax_and_exp])
def test_a_large_job_of_strided_rows(step, fn):
    """Rows read at another element stride (a strided kernel: reversed rows, every other
    element) neither prefetch nor stream; the results are those of the rows in pieces, and
    NumPy's where the ops are sums."""
    n = 1001
    rows = STREAM_BYTES // (4 * n) + 3
    x = np.random.default_rng(1).standard_normal((rows, 2 * n)).astype(np.float32)
    x = x[:, ::-1][:, :n] if step == -1 else x[:, ::2]
    scripted = tsjit.script(fn)
    for _ in range(2):
        scripted(x[:64])
    got = scripted(x)
    pieces = [scripted(x[k:k + 64]) for k in range(0, rows, 64)]
    for j, result in enumerate(got):
        assert_same(result, np.concatenate([piece[j] for piece in pieces]))
    if fn is centered_and_above:
        assert_same(got, fn(x))
    assert scripted.stats()["bailouts"] == 0
