"""The shared elementwise driver's execution paths against NumPy, bitwise: block-split
parallel jobs for several thread counts, whole-row and chunked row iteration, streamed
(non-temporal) outputs with every alignment, and write-only in-place targets."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from tsjit import runtime
from tsjit.codegen.elementwise_driver import (
    PREFETCH_MIN_TOTAL,
    STREAM_MIN_OUTPUT,
    STREAM_MIN_TOTAL,
)
from tsjit.codegen.kernel_spec import KernelInput, KernelOp, KernelSpec
from tsjit.codegen.launch import compile_kernel

F32, F64 = np.dtype("float32"), np.dtype("float64")
# Float32 elements of each of three equal arrays (x, y, out) that make a streamed job.
STREAMED = max(STREAM_MIN_OUTPUT, STREAM_MIN_TOTAL // 3) // 4 + 1000


@pytest.fixture
def threads() -> Iterator[None]:
    before = runtime.get_num_threads()
    yield
    runtime.set_num_threads(before)


def triad(rank: int = 1, into_third: bool = False) -> KernelSpec:
    """a * x + y (a scalar); with ``into_third`` written into a third array input, which the
    computation never reads (``out[...] = a * x + y``)."""
    arrays = 3 if into_third else 2
    return KernelSpec(
        (KernelInput(F32, 0, True),) + (KernelInput(F32, rank, False),) * arrays,
        (KernelOp("mul", (0, 1), F32), KernelOp("add", (arrays + 1, 2), F32)),
        (arrays + 2,),
        (3,) if into_third else (),
    )


def expected_triad(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.float32(2.5) * x + y


def test_streamed_fresh_output_is_numpys(threads):
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(STREAMED).astype(np.float32) for _ in range(2))
    for num_threads in (1, 2, 3):
        runtime.set_num_threads(num_threads)
        (got,) = compile_kernel(triad())(2.5, x, y)
        np.testing.assert_array_equal(got, expected_triad(x, y))


@pytest.mark.parametrize("offset", [0, 1, 3, 15, 16])
def test_streamed_into_a_target_at_any_alignment(threads, offset):
    """Each chunk's copy has a partial line before and after its whole lines."""
    runtime.set_num_threads(2)
    rng = np.random.default_rng(offset)
    x, y = (rng.standard_normal(STREAMED).astype(np.float32) for _ in range(2))
    storage = np.full(STREAMED + 32, -7.0, np.float32)
    target = storage[offset:offset + STREAMED]
    (got,) = compile_kernel(triad(into_third=True))(2.5, x, y, target)
    assert got is target
    np.testing.assert_array_equal(target, expected_triad(x, y))
    assert (storage[:offset] == -7.0).all() and (storage[offset + STREAMED:] == -7.0).all()


def test_streamed_outputs_of_different_alignments():
    """Two fresh outputs; the second's lines are cut differently from the first's."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal(STREAMED).astype(np.float32)
    spec = KernelSpec((KernelInput(F32, 1, False),),
                      (KernelOp("mul", (0, 0), F32), KernelOp("neg", (0,), F32)), (1, 2))
    storage = np.empty(2 * STREAMED + 64, np.float32)
    first, second = storage[:STREAMED], storage[STREAMED + 5:2 * STREAMED + 5]
    got = compile_kernel(spec)(x, out=(first, second))
    assert got[0] is first and got[1] is second
    np.testing.assert_array_equal(first, x * x)
    np.testing.assert_array_equal(second, -x)


def test_write_only_target_below_the_streaming_size(threads):
    runtime.set_num_threads(2)
    rng = np.random.default_rng(2)
    x, y = (rng.standard_normal(100_003).astype(np.float32) for _ in range(2))
    target = np.full_like(x, np.nan)
    compile_kernel(triad(into_third=True))(2.5, x, y, target)
    np.testing.assert_array_equal(target, expected_triad(x, y))


@pytest.mark.parametrize("num_threads", [1, 2, 3, 5])
def test_block_split_jobs_cover_every_element(threads, num_threads):
    runtime.set_num_threads(num_threads)
    rng = np.random.default_rng(num_threads)
    for n in (4096 * 3 + 1, 1_000_003):
        x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
        np.testing.assert_array_equal(compile_kernel(triad())(2.5, x, y)[0],
                                      expected_triad(x, y))


@pytest.mark.parametrize("num_threads", [1, 2, 3])
def test_rows_whole_and_chunked(threads, num_threads):
    """Broadcast rows and row slices run whole; a strided operand makes rows run in
    gathered chunks."""
    runtime.set_num_threads(num_threads)
    rng = np.random.default_rng(3)
    wide = rng.standard_normal((700, 4 * 333)).astype(np.float32)
    bias = rng.standard_normal(333).astype(np.float32)
    kernel = compile_kernel(triad(rank=2))
    for x, y in ((wide[:, 333:666], np.broadcast_to(bias, (700, 333))),
                 (wide[:, :333], wide[:, 999:]),
                 (wide[:, ::4], wide[:, 1::4])):
        np.testing.assert_array_equal(kernel(2.5, x, y)[0], expected_triad(x, y))


@pytest.mark.parametrize("num_threads", [1, 3])
def test_rows_of_rank_three_carry_across_dimensions(threads, num_threads):
    """Dimensions that do not collapse: the row odometer carries through two of them."""
    runtime.set_num_threads(num_threads)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((37, 23, 2 * 301)).astype(np.float32)[:, ::-1, ::2]
    y = rng.standard_normal((23, 1)).astype(np.float32)
    kernel = compile_kernel(triad(rank=3))
    for a, b in ((x, np.broadcast_to(y, x.shape)), (x, x.transpose(0, 1, 2).copy()),
                 (x[:, 1:-1:3], x[:, 2::3])):
        np.testing.assert_array_equal(kernel(2.5, a, b)[0], expected_triad(a, b))


@pytest.mark.parametrize("num_threads", [1, 2, 3])
def test_runs_of_whole_rows_stop_at_each_dimension(threads, num_threads):
    """Whole rows go to the body a run at a time, up to the end of the innermost outer
    dimension; thread blocks start and end inside runs. Reversed and sliced outer
    dimensions keep the runs short and the strides negative."""
    runtime.set_num_threads(num_threads)
    rng = np.random.default_rng(8)
    x = rng.standard_normal((41, 23, 301)).astype(np.float32)[:, ::-1]
    bias = rng.standard_normal((23, 1, 301)).astype(np.float32)[:, 0]
    kernel = compile_kernel(triad(rank=3))
    for a, b in ((x, np.broadcast_to(bias, x.shape)), (x[-2::-2, 1::3], x[1::2, 1::3]),
                 (x[:1], x[-1:]), (x[:, :1], x[:, -1:])):
        np.testing.assert_array_equal(kernel(2.5, a, b)[0], expected_triad(a, b))


def test_streamed_rows_whole_and_gathered(threads):
    """Row-path jobs whose output reaches the streaming size: broadcast rows, and rows
    with a strided operand (gathered while the output is streamed)."""
    runtime.set_num_threads(2)
    rng = np.random.default_rng(5)
    rows = STREAM_MIN_TOTAL // 2 // 4 // 1000 + 1  # x and the output: the broadcast row is small
    x = rng.standard_normal((rows, 1000)).astype(np.float32)
    bias = np.broadcast_to(rng.standard_normal(1000).astype(np.float32), x.shape)
    kernel = compile_kernel(triad(rank=2))
    np.testing.assert_array_equal(kernel(2.5, x, bias)[0], expected_triad(x, bias))
    strided = rng.standard_normal((rows, 2000)).astype(np.float32)[:, ::2]
    np.testing.assert_array_equal(kernel(2.5, strided, x)[0], expected_triad(strided, x))


def test_pooled_outputs_start_on_a_cache_line():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((STREAMED // 1000 + 1, 1000)).astype(np.float32)
    (got,) = compile_kernel(triad(rank=2))(2.5, x, x)
    assert got.ctypes.data % 64 == 0
    np.testing.assert_array_equal(got, expected_triad(x, x))


@pytest.mark.parametrize("num_threads", [1, 3])
def test_rows_that_prefetch_their_next_row(threads, num_threads):
    """A compute-bound kernel over slices of a wide array, large enough to prefetch
    (PREFETCH_MIN_TOTAL): the blocked, prefetching loop gives NumPy's results."""
    runtime.set_num_threads(num_threads)
    rng = np.random.default_rng(7)
    width = 1000  # not a multiple of the 64-element blocks: each row ends in the masked loop
    rows = PREFETCH_MIN_TOTAL // (3 * 4 * width) + 1
    wide = rng.standard_normal((rows, 4 * width)).astype(np.float32)
    x, y = wide[:, width:2 * width], wide[:, 3 * width:]
    spec = KernelSpec(
        (KernelInput(F32, 2, False),) * 2,
        (KernelOp("mul", (0, 0), F32), KernelOp("sqrt", (2,), F32),
         KernelOp("truediv", (3, 1), F32), KernelOp("add", (4, 0), F32)),
        (5,))
    (got,) = compile_kernel(spec)(x, y)
    np.testing.assert_array_equal(got, np.sqrt(x * x) / y + x)
