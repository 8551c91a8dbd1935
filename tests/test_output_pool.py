"""Fresh kernel outputs: ordinary arrays that own their memory (as eager NumPy's results),
never sharing memory with a live result, starting in the middle of a page (see
RESULT_PAGE_OFFSET), and whose memory goes back to the runtime's handler (and beyond its
small bound, to the OS) when they are dropped."""

from __future__ import annotations

import copy
import pickle
import threading

import numpy as np
import pytest

import tsjit
from tsjit.codegen.output_pool import (
    PAGE_BYTES,
    RESULT_PAGE_OFFSET,
    OutputPool,
    memory_stats,
    trim,
)

F32 = np.dtype("float32")
F64 = np.dtype("float64")
LARGE = 1 << 18  # float64 elements: 2 MiB, above the pool's threshold


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def test_live_results_never_share_memory_across_many_sizes():
    alloc = OutputPool(min_bytes=1024).allocator(F32, 2)
    rng = np.random.default_rng(0)
    live: list[np.ndarray] = []
    for step in range(300):
        rows = int(rng.integers(1, 6)) * 100
        layout = "F" if step % 3 == 0 else None
        result = alloc((rows, 1024), layout)
        assert _address(result) % PAGE_BYTES == RESULT_PAGE_OFFSET
        assert result.flags.f_contiguous if layout else result.flags.c_contiguous
        assert result.base is None and result.flags.owndata
        assert not any(np.shares_memory(result, other) for other in live)
        result[...] = step
        live.append(result)
        if len(live) > 4:  # results die in a shuffled order
            live.pop(int(rng.integers(0, len(live))))
    assert all((result == result.flat[0]).all() for result in live)  # nothing overwritten


def test_a_view_keeps_its_result_memory_alive():
    alloc = OutputPool(min_bytes=1024).allocator(F64, 1)
    before = memory_stats()["live_blocks"]
    first = alloc((LARGE,), None)
    first[...] = 1.0
    view = first[10:20]
    del first
    assert memory_stats()["live_blocks"] == before + 1  # the view holds it
    second = alloc((LARGE,), None)
    second[...] = 2.0
    assert not np.shares_memory(second, view) and (view == 1.0).all()
    del view
    assert memory_stats()["live_blocks"] == before + 1
    third = alloc((LARGE,), None)  # the freed pages come back
    assert third.flags.writeable and third.flags.c_contiguous and third.flags.owndata


def test_below_the_threshold_outputs_come_from_numpy():
    pool = OutputPool(min_bytes=1 << 20)
    stats = memory_stats()
    small = pool.allocator(F32, 1)((1000,), None)
    assert small.base is None and small.flags.owndata
    assert memory_stats()["live_blocks"] == stats["live_blocks"]
    large = pool.allocator(F32, 1)(((1 << 20) // 4,), None)
    assert large.base is None and large.flags.owndata
    assert memory_stats()["live_blocks"] == stats["live_blocks"] + 1
    assert _address(large) % PAGE_BYTES == RESULT_PAGE_OFFSET


def test_dropped_results_return_their_memory():
    """Results of ever-changing sizes, dropped: nothing stays held, what is kept for reuse
    stays within the handler's bound (8 mappings, 1 GiB), and trim() returns it all."""
    alloc = OutputPool().allocator(F64, 1)
    stats = memory_stats()
    for step in range(200):
        result = alloc(((step % 37 + 1) * LARGE,), None)
        result[::512] = step  # touch its pages
        del result
    after = memory_stats()
    assert after["live_blocks"] == stats["live_blocks"]
    assert after["live_bytes"] == stats["live_bytes"]
    assert after["free_blocks"] <= 8 and after["free_bytes"] <= 1 << 30
    trim()
    assert memory_stats()["free_blocks"] == 0 and memory_stats()["free_bytes"] == 0


def test_resizing_a_result_keeps_its_values():
    alloc = OutputPool().allocator(F64, 1)
    for new_size in (10, LARGE // 2, LARGE, 3 * LARGE):
        result = alloc((LARGE,), None)
        result[...] = np.arange(LARGE)
        result.resize((new_size,), refcheck=False)
        kept = min(new_size, LARGE)
        np.testing.assert_array_equal(result[:kept], np.arange(kept))
        if new_size > LARGE:
            assert (result[LARGE:] == 0).all()  # NumPy zero-fills what resize adds


def test_threads_allocating_at_once_get_distinct_memory():
    alloc = OutputPool().allocator(F64, 1)
    errors: list[str] = []

    def work(k: int) -> None:
        held = []
        for step in range(50):
            result = alloc((LARGE + 512 * (step % 3),), None)
            result[...] = k * 1000 + step
            held.append(result)
            if len(held) > 3:
                held.pop(0)
            if not all((h == h[0]).all() for h in held):
                errors.append(f"thread {k} step {step}: a result was overwritten")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def scaled_sum(x, y):
    return x * 2.0 + y


@pytest.mark.parametrize("shape,order", [((LARGE,), "C"), ((512, 512), "C"),
                                         ((512, 512), "F")])
def test_fused_results_are_ordinary_arrays(shape, order):
    """Above the pool's threshold a fused result is what eager NumPy returns: it owns its
    memory, resizes, pickles to the same bytes and deep-copies (it was a view of a pooled
    buffer: base not None, OWNDATA false, resize refused)."""
    scripted = tsjit.script(scaled_sum)
    x = np.asarray(np.random.default_rng(0).standard_normal(shape), order=order)
    y = np.asarray(np.random.default_rng(1).standard_normal(shape), order=order)
    eager = scaled_sum(x, y)
    for _ in range(3):
        result = scripted(x, y)
    assert scripted.stats()["kernel_launches"] > 0
    np.testing.assert_array_equal(result, eager)
    assert result.base is None and eager.base is None
    assert result.flags.owndata and result.flags.c_contiguous == eager.flags.c_contiguous
    assert result.flags.f_contiguous == eager.flags.f_contiguous
    assert _address(result) % PAGE_BYTES == RESULT_PAGE_OFFSET
    assert pickle.dumps(result) == pickle.dumps(eager)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(result)), eager)
    copied = copy.deepcopy(result)
    assert not np.shares_memory(copied, result)
    np.testing.assert_array_equal(copied, eager)
    size = result.size
    result.resize((size + 10,), refcheck=False)
    eager.resize((size + 10,), refcheck=False)
    np.testing.assert_array_equal(result, eager)
