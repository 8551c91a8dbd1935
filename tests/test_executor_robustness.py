"""The executor under conditions a sweep found wrong: profiles that disagree, settings
changed between calls, threads, mutated arguments, exceptions in optimized code.  Every
call is compared with the plain function."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from _differential import assert_same

import tsjit


def multiply_add(x: tsjit.Tensor, y: tsjit.Tensor):
    return x * y + 1.0


pytestmark = pytest.mark.usefixtures("default_settings")


@pytest.mark.parametrize("runs", [2, 5])
def test_profiles_that_disagree_on_the_dtype_still_specialize(runs):
    # The profiled types were merged: float32 and float64 gave a Tensor of no dtype,
    # nothing fused, and the function stayed in the interpreter for good.
    tsjit.set_profiling_runs(runs)
    scripted = tsjit.script(multiply_add)
    a32, a64 = np.arange(4, dtype=np.float32), np.arange(5.0)
    profiled = ([a32, a64] * runs)[:runs]
    for x in profiled + [a64, a32] * (runs + 1):
        assert_same(scripted(x, x), multiply_add(x, x))
    stats = scripted.stats()
    assert stats["specializations"] == 2 and stats["kernels_compiled"] == 2
    for x in (a32, a64):     # each dtype now has a kernel
        before = scripted.stats()["kernel_launches"]
        assert_same(scripted(x, x), multiply_add(x, x))
        assert scripted.stats()["kernel_launches"] == before + 1


def test_profiles_that_differ_in_sizes_only_merge_into_one_specialization():
    tsjit.set_profiling_runs(3)
    scripted = tsjit.script(multiply_add)
    for n in (3, 4, 5, 6, 7):
        x = np.arange(n, dtype=np.float32)
        assert_same(scripted(x, x), multiply_add(x, x))
    stats = scripted.stats()
    assert stats["specializations"] == 1 and stats["guard_failures"] == 0
    assert stats["kernel_launches"] == 2


def test_threads_profiling_at_once_with_different_dtypes_match_eager():
    # Each profiled call records a run of its own: calls from several threads profile
    # at once, and every one of them (profiling, optimized or not) gives NumPy's result.
    tsjit.set_profiling_runs(2)
    scripted = tsjit.script(multiply_add)
    dtypes = [np.float32, np.float64, np.int64, np.int32]
    barrier = threading.Barrier(len(dtypes))
    mismatches: list = []

    def calls(dtype) -> None:
        barrier.wait()
        for n in range(1, 12):
            x = np.arange(n).astype(dtype)
            got, want = scripted(x, x), multiply_add(x, x)
            if got.dtype != want.dtype or not np.array_equal(got, want):
                mismatches.append((dtype, n, got, want))

    threads = [threading.Thread(target=calls, args=(d,)) for d in dtypes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads) and not mismatches
    # (calls are not compared: a direct entry replaced by a racing thread loses its
    # count, a known fault of ScriptFunction's bookkeeping, not of the results)
    assert 1 <= scripted.stats()["specializations"] <= 8


def test_calls_through_a_direct_entry_stay_counted_when_it_is_dropped():
    scripted = tsjit.script(multiply_add)
    x = np.arange(16, dtype=np.float32)
    for _ in range(3):
        assert_same(scripted(x, x), multiply_add(x, x))
    tsjit.set_fusion_enabled(False)     # drops every direct entry
    assert_same(scripted(x, x), multiply_add(x, x))
    tsjit.set_fusion_enabled(True)
    for _ in range(2):
        assert_same(scripted(x, x), multiply_add(x, x))
    assert scripted.stats()["calls"] == 6


def test_a_first_call_with_zero_d_arrays_does_not_leave_the_function_interpreted():
    # 0-d arrays are not fused: "nothing to compile" used to mean the interpreter for
    # good, with no guard, so later (3, 4) arrays never reached a kernel.
    scripted = tsjit.script(multiply_add)
    zero_d = np.ones((), np.float32)
    assert_same(scripted(zero_d, zero_d), multiply_add(zero_d, zero_d))
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for _ in range(3):
        assert_same(scripted(x, x), multiply_add(x, x))
    assert_same(scripted(zero_d, zero_d), multiply_add(zero_d, zero_d))
    assert scripted.stats()["kernel_launches"] >= 2
