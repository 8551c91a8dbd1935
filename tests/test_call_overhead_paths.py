"""The cheap per-call paths into fused kernels give NumPy's results and errors: the
remembered broadcast of differing shapes, and the direct entry (one generated function
from the call to the kernel)."""
from __future__ import annotations

import numpy as np
import pytest

import tsjit
from tsjit.codegen import launch
from tsjit.codegen.launch import broadcast_shape

RNG = np.random.default_rng(11)


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


def numpy_error(fn, *args) -> str:
    with pytest.raises(ValueError) as caught:
        fn(*args)
    return str(caught.value)


def bias_relu(x: tsjit.Tensor, bias: tsjit.Tensor):
    return np.maximum(x + bias, 0.0)


def floats(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("shapes", [
    ((16, 1024), (1024,)), ((3, 1), (1, 5)), ((2, 1, 4), (3, 1), (4,)), ((0, 3), (3,)),
    ((5,), (5,)), ((1,), (7,)),
])
def test_broadcast_shape_is_numpys_and_remembered(shapes):
    want = np.broadcast_shapes(*shapes)
    assert broadcast_shape(*shapes) == want
    assert broadcast_shape(*shapes) == want     # the second time from what it remembers


@pytest.mark.parametrize("shapes", [((16, 16), (15,)), ((2, 3), (3, 2)), ((4,), (1,), (5,))])
def test_shapes_that_do_not_broadcast_raise_numpys_error_every_time(shapes):
    want = numpy_error(np.broadcast_shapes, *shapes)
    assert numpy_error(broadcast_shape, *shapes) == want
    assert numpy_error(broadcast_shape, *shapes) == want


def test_remembered_broadcasts_are_bounded(monkeypatch):
    monkeypatch.setattr(launch, "_BROADCASTS_KEPT", 4)
    monkeypatch.setattr(launch, "_broadcasts", {})
    for n in range(2, 12):
        assert broadcast_shape((n, 1), (3,)) == (n, 3)
        assert len(launch._broadcasts) <= 4


@pytest.mark.parametrize("x_shape, bias_shape", [
    ((16, 16), (16,)), ((16, 1024), (1024,)), ((16, 16), (16, 1)), ((3, 1), (1, 5)),
    ((1, 8), (8,)), ((4, 0), (0,)),
])
def test_a_broadcasting_kernel_computes_what_numpy_does(x_shape, bias_shape):
    scripted = tsjit.script(bias_relu)
    for _ in range(3):
        x, bias = floats(*x_shape), floats(*bias_shape)
        same(scripted(x, bias), bias_relu(x, bias))
    x, bias = floats(*x_shape)[::-1], floats(*bias_shape)   # a strided view: same kernel
    same(scripted(x, bias), bias_relu(x, bias))
    stats = scripted.stats()
    assert stats["kernel_launches"] == 4 and stats["bailouts"] == 0


def test_shapes_changing_between_calls_each_broadcast_as_numpy():
    scripted = tsjit.script(bias_relu)
    for rows, columns in [(4, 4), (2, 7), (4, 4), (1, 9), (6, 1), (2, 7)]:
        x, bias = floats(rows, columns), floats(columns)
        same(scripted(x, bias), bias_relu(x, bias))
        same(scripted(bias, x), bias_relu(bias, x))
    assert scripted.stats()["bailouts"] == 0


def test_shapes_that_do_not_broadcast_raise_numpys_error_at_the_scripts_line():
    scripted = tsjit.script(bias_relu)
    x = floats(16, 16)
    for _ in range(3):
        scripted(x, floats(16))
    for bias in (floats(15), floats(3, 16), floats(15)):
        message = numpy_error(scripted, x, bias)
        assert numpy_error(bias_relu, x, bias) in message
        assert "np.maximum(x + bias, 0.0)" in message and "<--- HERE" in message
    assert scripted.stats()["bailouts"] == 3 and scripted.stats()["kernel_launches"] == 3


def two_results(x: tsjit.Tensor, y: tsjit.Tensor, z: tsjit.Tensor):
    return x * y, (x - 1.0) * z     # one kernel; each result depends on two inputs only


def test_a_launcher_checking_result_shapes_runs_the_kernel_when_they_hold():
    scripted = tsjit.script(two_results)
    for shapes in [((4, 3), (4, 3), (4, 3)), ((4, 3), (3,), (4, 3)), ((4, 3), (4, 3), (1, 3)),
                   ((4, 3), (3,), (4, 1))]:
        args = tuple(floats(*s).astype(np.float64) for s in shapes)
        same(scripted(*args), two_results(*args))
    assert scripted.stats()["kernel_launches"] == 4 and scripted.stats()["bailouts"] == 0
    args = floats(1, 3).astype(np.float64), floats(3), floats(4, 3).astype(np.float64)
    same(scripted(*args), two_results(*args))   # NumPy's x * y is (1, 3): the interpreter
    assert scripted.stats()["bailouts"] == 1


def add_into(x: tsjit.Tensor, bias: tsjit.Tensor):
    x += bias * 2.0
    return x


def test_in_place_targets_of_the_wrong_shape_or_read_only_raise_numpys_error():
    scripted = tsjit.script(add_into)
    for _ in range(3):
        mine, theirs = np.ones((4, 3)), np.ones((4, 3))
        same(scripted(mine, np.arange(3.0)), add_into(theirs, np.arange(3.0)))
        same(mine, theirs)
    small, bias = np.ones((1, 3)), np.ones((4, 3))
    assert numpy_error(add_into, small.copy(), bias) in numpy_error(scripted, small, bias)
    same(small, np.ones((1, 3)))
    frozen = np.ones((4, 3))
    frozen.flags.writeable = False
    assert numpy_error(add_into, frozen, bias) in numpy_error(scripted, frozen, bias)
    same(frozen, np.ones((4, 3)))
    assert scripted.stats()["bailouts"] == 2 and scripted.stats()["kernel_launches"] == 3
