"""A large row kernel job streams element-level outputs of plain float arithmetic (layer
norm's, softmax's division by the sum) from vectors with non-temporal stores
(``codegen/row_vectors.py``: no L1 buffer to copy out), where a row's outputs start
32-byte aligned; a NaN output sends the range to the exact path.  The bits, the NaN bits
of NaN operands (two meeting in one op) and the warnings are NumPy's (softmax's bits: the
kernel's ordinary stores', in pieces below the thresholds), with 1 and 2 threads;
unaligned rows take the L1 buffers."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import tsjit
from tsjit import runtime
from tsjit.codegen.row_memory import STREAM_BYTES


def layer_norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    v = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(v + 1e-5) * g + b


def softmax(x, g, b):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def centered_and_above(x, g, b):
    centered = x - x.mean(-1, keepdims=True)
    return centered, centered > 0


def streamed_job(n: int, dtype, seed: int = 0) -> tuple:
    rows = STREAM_BYTES // (np.dtype(dtype).itemsize * n) + 3
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, n)) * 2 + 1).astype(dtype)
    g, b = rng.standard_normal((2, n)).astype(dtype)
    return x, g, b


def scripted_warmed(fn, args):
    scripted = tsjit.script(fn)
    for _ in range(2):
        scripted(*(np.ones_like(a[:64] if a.ndim == 2 else a) for a in args))
    return scripted


def run_recorded(fn, args) -> tuple[object, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [str(w.message) for w in caught]


def same_bits(got, want) -> bool:
    words = np.dtype(f"u{want.dtype.itemsize}")
    return got.dtype == want.dtype and np.array_equal(got.view(words), want.view(words))


@pytest.mark.parametrize("fn, vectors", [(layer_norm, True), (softmax, True),
                                         (centered_and_above, False)],
                         ids=["layer_norm", "softmax", "bool_output"])
def test_plain_arithmetic_streams_from_vectors(fn, vectors):
    args = streamed_job(1024, np.float32)
    scripted = scripted_warmed(fn, args)
    text = scripted.inspect_llvm(*args)
    assert "!nontemporal" in text
    from_vectors = re.search(r"store <\d+ x float> [^\n]*!nontemporal", text)
    assert bool(from_vectors) == vectors


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("where", ["rows", "columns", "invalid"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_outputs_have_numpys_bits_and_warnings(dtype, where, threads):
    """Layer norm (softmax's NaN rows go to NumPy: its max): rows, a few rows' outputs are
    NaN (NaN operands' payloads); columns, every row's are, where NaNs of g and b meet;
    invalid, inf - inf and an overflow, whose warnings send the call to NumPy (the kernel
    must report them)."""
    fn = layer_norm
    words = np.dtype(f"u{np.dtype(dtype).itemsize}")
    x, g, b = streamed_job(1024, dtype)
    nan = np.array([0xFFF80000000000AB if dtype == np.float64 else 0xFFC000AB,
                    0x7FF80000000000CD if dtype == np.float64 else 0x7FC000CD],
                   dtype=words).view(dtype)
    if where == "rows":
        x[5, 100], x[300, 0], x[301, 1023] = nan[0], nan[1], nan[0]
    elif where == "columns":
        g[700], b[700] = nan[1], nan[0]
    else:
        x[9, 3] = np.inf
        x[11, 700] = np.finfo(dtype).max
    previous = runtime.get_num_threads()
    tsjit.set_num_threads(threads)
    try:
        scripted = scripted_warmed(fn, (x, g, b))
        (got, got_warned), (want, want_warned) = (run_recorded(f, (x, g, b))
                                                  for f in (scripted, fn))
        bailed = scripted.stats()["bailouts"] > 0
    finally:
        tsjit.set_num_threads(previous)
    assert got_warned == want_warned
    assert same_bits(got, want)
    assert bailed == (where == "invalid")


@pytest.mark.parametrize("n", [1000, 1001, 1004, 1020])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [layer_norm, softmax], ids=lambda f: f.__name__)
def test_rows_of_any_alignment(fn, dtype, n):
    """Rows of 1000 float32 start 32-byte aligned; 1001, 1004 and 1020 take turns (the
    L1 buffers where they are not); float64 rows of 1004 and 1020 too.  Layer norm gives
    NumPy's bits; softmax (exp within 4 ulp of NumPy's) the kernel's ordinary stores', in
    pieces below the thresholds."""
    args = streamed_job(n, dtype, seed=n)
    scripted = scripted_warmed(fn, args)
    got = scripted(*args)
    want = fn(*args) if fn is layer_norm else np.concatenate(
        [scripted(args[0][k:k + 64], *args[1:]) for k in range(0, len(args[0]), 64)])
    assert same_bits(got, want)
    assert scripted.stats()["bailouts"] == 0
