"""The output pool: recycled buffers are never shared with a live result, whatever the mix
of sizes and orders, and pooled results start in the middle of a page (see
RESULT_PAGE_OFFSET)."""

from __future__ import annotations

import numpy as np

from tsjit.codegen.output_pool import PAGE_BYTES, RESULT_PAGE_OFFSET, OutputPool

F32 = np.dtype("float32")


def test_live_results_never_share_a_buffer_across_many_sizes():
    pool = OutputPool(max_buffers=3, min_bytes=1024)
    alloc = pool.allocator(F32, 2)
    rng = np.random.default_rng(0)
    live: list[np.ndarray] = []
    for step in range(300):
        rows = int(rng.integers(1, 6)) * 100
        like = np.empty((rows, 64), F32, order="F") if step % 3 == 0 else None
        result = alloc((rows, 64), like)
        assert result.__array_interface__["data"][0] % PAGE_BYTES == RESULT_PAGE_OFFSET
        assert result.flags.f_contiguous if like is not None else result.flags.c_contiguous
        assert not any(np.shares_memory(result, other) for other in live)
        result[...] = step
        live.append(result)
        if len(live) > 4:  # results die in a shuffled order
            live.pop(int(rng.integers(0, len(live))))
    assert all((result == result.flat[0]).all() for result in live)  # nothing overwritten


def test_below_the_threshold_outputs_are_plain_arrays():
    pool = OutputPool(min_bytes=1 << 20)
    small = pool.allocator(F32, 1)((1000,), None)
    assert small.base is None and small.flags.owndata
    large = pool.allocator(F32, 1)(((1 << 20) // 4,), None)
    assert large.base is not None
    assert large.__array_interface__["data"][0] % PAGE_BYTES == RESULT_PAGE_OFFSET
