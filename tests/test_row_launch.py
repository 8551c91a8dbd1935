"""The row-kernel launcher remembers each layout it has laid out (``reduction_launch``'s
plans, by shape and each operand's shape and strides): a call with another layout of the
same shape, or under another NumPy buffer size, must not run an earlier call's plan."""
from __future__ import annotations

import numpy as np
from _differential import assert_same

import tsjit


def scaled_row_sums(x):
    return np.sum(x * 1.5, axis=-1)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layouts_of_one_shape(rng: np.random.Generator) -> list[np.ndarray]:
    """(8, 300) float64 arrays: C-ordered, rows of a wider array (another row stride), a
    transposed Fortran-ordered array, rows read backwards and every third element (the
    strided kernel), then each kind again."""
    c = rng.standard_normal((8, 300))
    wide = rng.standard_normal((8, 700))[:, 100:400]
    fortran = np.asfortranarray(rng.standard_normal((8, 300)))
    backwards = rng.standard_normal((8, 300))[:, ::-1]
    thirds = rng.standard_normal((8, 900))[:, ::3]
    return [c, wide, fortran, backwards, thirds, c, backwards, wide, fortran, thirds]


def test_each_layout_of_a_shape_runs_its_own_plan():
    rng = np.random.default_rng(0)
    for fn, ulps in ((scaled_row_sums, 0), (softmax, 4)):
        scripted = tsjit.script(fn)
        for x in layouts_of_one_shape(rng):
            assert_same(scripted(x), fn(x), ulps=ulps)
            assert_same(scripted(x), fn(x), ulps=ulps)   # the second call: a known plan
        assert scripted.stats()["kernel_launches"] >= 16
        assert scripted.stats()["bailouts"] == 0


def half_sums(x):
    return np.sum(x * np.float16(1.0), axis=-1, dtype=np.float32)


def test_a_new_buffer_size_is_never_run_with_an_earlier_plan():
    """float16 summed as float32 follows NumPy's cast buffers (np.getbufsize() elements
    summed pairwise, the buffers in order): the kernel knows 8192 only, so another size
    goes to NumPy."""
    x = np.random.default_rng(1).standard_normal((3, 20_000)).astype(np.float16)
    scripted = tsjit.script(half_sums)
    for _ in range(3):
        assert_same(scripted(x), half_sums(x))
    launches = scripted.stats()["kernel_launches"]
    assert launches >= 1
    old = np.setbufsize(4096)
    try:
        want = half_sums(x)
        got = scripted(x)
    finally:
        np.setbufsize(old)
    assert not np.array_equal(want, half_sums(x))   # the buffer size shows in the bits
    assert_same(got, want)
    assert scripted.stats()["kernel_launches"] == launches
