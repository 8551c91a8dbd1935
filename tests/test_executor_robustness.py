"""The executor under conditions a sweep found wrong: profiles that disagree, settings
changed between calls, threads, mutated arguments, exceptions in optimized code.  Every
call is compared with the plain function."""
from __future__ import annotations

import numpy as np
import pytest

import tsjit


def same(got, want) -> None:
    """Indistinguishable: type, dtype, shape, values, bitwise."""
    assert type(got) is type(want)
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
        return
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def multiply_add(x: tsjit.Tensor, y: tsjit.Tensor):
    return x * y + 1.0


@pytest.fixture(autouse=True)
def default_settings():
    yield
    tsjit.set_fusion_enabled(True)
    tsjit.set_native_enabled(True)
    tsjit.set_profiling_runs(1)


@pytest.mark.parametrize("runs", [2, 5])
def test_profiles_that_disagree_on_the_dtype_still_specialize(runs):
    # The profiled types were merged: float32 and float64 gave a Tensor of no dtype,
    # nothing fused, and the function stayed in the interpreter for good.
    tsjit.set_profiling_runs(runs)
    scripted = tsjit.script(multiply_add)
    a32, a64 = np.arange(4, dtype=np.float32), np.arange(5.0)
    profiled = ([a32, a64] * runs)[:runs]
    for x in profiled + [a64, a32] * (runs + 1):
        same(scripted(x, x), multiply_add(x, x))
    stats = scripted.stats()
    assert stats["specializations"] == 2 and stats["kernels_compiled"] == 2
    for x in (a32, a64):     # each dtype now has a kernel
        before = scripted.stats()["kernel_launches"]
        same(scripted(x, x), multiply_add(x, x))
        assert scripted.stats()["kernel_launches"] == before + 1


def test_profiles_that_differ_in_sizes_only_merge_into_one_specialization():
    tsjit.set_profiling_runs(3)
    scripted = tsjit.script(multiply_add)
    for n in (3, 4, 5, 6, 7):
        x = np.arange(n, dtype=np.float32)
        same(scripted(x, x), multiply_add(x, x))
    stats = scripted.stats()
    assert stats["specializations"] == 1 and stats["guard_failures"] == 0
    assert stats["kernel_launches"] == 2
