"""Pipelined row kernels (``codegen/row_pipeline.py``): a row's element outputs are
written by the next row's last pass, the task's last row's after its loop. A job's
results are those of its rows computed one job each (no row follows another there), bit
for bit, for rows shorter than a chunk, of whole and partial chunks, of two summation
nodes and of the longest that fit the scratch buffers; with NaN and infinite rows (the
following row's pass runs again exactly), several outputs, a bool output, a per-column
operand, float64 and float16, 1 and 2 threads, large jobs that stream (line-aligned rows or not),
and NumPy's warnings."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from _differential import assert_same

import tsjit
from tsjit import runtime
from tsjit.codegen.row_memory import STREAM_BYTES


def softmax(x, w):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_and_exp(x, w):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True), e


def scaled_softmax_above(x, w):
    e = np.exp(x * w - (x * w).max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    return p, p > 0.001


def logsumexp_and_softmax(x, w):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(axis=-1, keepdims=True)
    return e / s, m + np.log(s)


FUNCTIONS = [softmax, softmax_and_exp, scaled_softmax_above, logsumexp_and_softmax]


def rows_of(dtype: type, rows: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Rows with a NaN (row 2), +inf next to -inf (row 4), an all -inf row (row 5) and
    very spread values (row 6: exp underflows), and a per-column operand."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, n)).astype(dtype)
    w = np.linspace(0.5, 1.5, n).astype(dtype)
    if rows > 6:
        x[2, n // 3] = np.nan
        x[4, 0], x[4, n - 1] = np.inf, -np.inf
        x[5] = -np.inf
        x[6] *= 200
    return x, w


def kernel_pipelines(scripted, args) -> bool:
    return "rowcfollow" in scripted.inspect_llvm(*args)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n", [2, 7, 64, 100, 1024, 1500, 4096])
@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_a_jobs_rows_are_its_rows_alone(threads, n, fn, dtype):
    x, w = rows_of(dtype, 11, n)
    previous = runtime.get_num_threads()
    tsjit.set_num_threads(threads)
    try:
        scripted = tsjit.script(fn)
        with np.errstate(all="ignore"):
            for _ in range(2):
                scripted(x, w)
            got = scripted(x, w)
            alone = [scripted(x[k:k + 1], w) for k in range(len(x))]
        assert kernel_pipelines(scripted, (x, w))
        assert scripted.stats()["bailouts"] == 0
        got = got if isinstance(got, tuple) else (got,)
        alone = [a if isinstance(a, tuple) else (a,) for a in alone]
        for j, result in enumerate(got):
            assert_same(result, np.concatenate([a[j] for a in alone]), f"output {j}")
    finally:
        tsjit.set_num_threads(previous)


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_warnings_are_numpys(fn):
    x, w = rows_of(np.float32, 9, 300)
    scripted = tsjit.script(fn)
    with np.errstate(all="ignore"):
        for _ in range(2):
            scripted(*rows_of(np.float32, 9, 300, seed=1))
    with warnings.catch_warnings(record=True) as eager:
        warnings.simplefilter("always")
        fn(x, w)
    with warnings.catch_warnings(record=True) as native:
        warnings.simplefilter("always")
        scripted(x, w)
    assert kernel_pipelines(scripted, (x, w))
    assert sorted(str(m.message) for m in native) == sorted(str(m.message) for m in eager)
    assert sorted(str(m.message) for m in eager)   # the rows warn


@pytest.mark.parametrize("n", [1024, 1001])   # line-aligned rows, or rows 4 bytes apart
def test_a_streamed_job_is_its_rows_in_pieces(n):
    """A job large enough to stream its outputs (non-temporal stores of whole lines where
    the rows are line-aligned) against the same rows in jobs below the threshold."""
    rows = STREAM_BYTES // (4 * n) + 5
    x, w = rows_of(np.float32, rows, n)
    scripted = tsjit.script(softmax_and_exp)
    with np.errstate(all="ignore"):
        for _ in range(2):
            scripted(x[:64], w)
        got = scripted(x, w)
        pieces = [scripted(x[k:k + 64], w) for k in range(0, rows, 64)]
    assert kernel_pipelines(scripted, (x, w))
    for j, result in enumerate(got):
        assert_same(result, np.concatenate([piece[j] for piece in pieces]), f"output {j}")


def test_a_following_rows_pass_prefetches_the_next_row():
    """The next row's lines are asked for chunk by chunk in the pass that writes the
    previous row's outputs (the node of the last pass that follows a row), not all at
    once at the row's start (there they queue behind the core's few outstanding misses)."""
    import re

    x, w = rows_of(np.float32, 512, 1024)   # 2 MB: the job prefetches
    scripted = tsjit.script(softmax)
    with np.errstate(all="ignore"):
        for _ in range(3):
            scripted(x, w)
    text = scripted.inspect_llvm(x, w)
    bodies = {m.group(1): text[m.end():text.find("\n}\n", m.end())]
              for m in re.finditer(r"define [^@]*@(\S+)\(", text)}
    follows = [name for name in bodies if re.search(r"_node\d+cp$", name)]
    assert follows and all("llvm.prefetch" in bodies[name] for name in follows)
