"""The cheap per-call paths into fused kernels give NumPy's results and errors: the
remembered broadcast of differing shapes, and the direct entry (one generated function
from the call to the kernel)."""
from __future__ import annotations

import numpy as np
import pytest
from _differential import assert_same

import tsjit
from tsjit.codegen import launch
from tsjit.codegen.launch import broadcast_shape

RNG = np.random.default_rng(11)


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
        assert_same(scripted(x, bias), bias_relu(x, bias))
    x, bias = floats(*x_shape)[::-1], floats(*bias_shape)   # a strided view: same kernel
    assert_same(scripted(x, bias), bias_relu(x, bias))
    stats = scripted.stats()
    assert stats["kernel_launches"] == 4 and stats["bailouts"] == 0


def test_shapes_changing_between_calls_each_broadcast_as_numpy():
    scripted = tsjit.script(bias_relu)
    for rows, columns in [(4, 4), (2, 7), (4, 4), (1, 9), (6, 1), (2, 7)]:
        x, bias = floats(rows, columns), floats(columns)
        assert_same(scripted(x, bias), bias_relu(x, bias))
        assert_same(scripted(bias, x), bias_relu(bias, x))
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
        assert_same(scripted(*args), two_results(*args))
    assert scripted.stats()["kernel_launches"] == 4 and scripted.stats()["bailouts"] == 0
    args = floats(1, 3).astype(np.float64), floats(3), floats(4, 3).astype(np.float64)
    assert_same(scripted(*args), two_results(*args))   # NumPy's x * y is (1, 3): the interpreter
    assert scripted.stats()["bailouts"] == 1


def add_into(x: tsjit.Tensor, bias: tsjit.Tensor):
    x += bias * 2.0
    return x


def test_in_place_targets_of_the_wrong_shape_or_read_only_raise_numpys_error():
    scripted = tsjit.script(add_into)
    for _ in range(3):
        mine, theirs = np.ones((4, 3)), np.ones((4, 3))
        assert_same(scripted(mine, np.arange(3.0)), add_into(theirs, np.arange(3.0)))
        assert_same(mine, theirs)
    small, bias = np.ones((1, 3)), np.ones((4, 3))
    assert numpy_error(add_into, small.copy(), bias) in numpy_error(scripted, small, bias)
    assert_same(small, np.ones((1, 3)))
    frozen = np.ones((4, 3))
    frozen.flags.writeable = False
    assert numpy_error(add_into, frozen, bias) in numpy_error(scripted, frozen, bias)
    assert_same(frozen, np.ones((4, 3)))
    assert scripted.stats()["bailouts"] == 2 and scripted.stats()["kernel_launches"] == 3


def is_direct(scripted) -> bool:
    """Whether calls enter the kernel through a generated direct entry (the instance's
    class then calls it instead of the executor's normal path)."""
    return type(scripted).__call__.__code__.co_filename.startswith("<tsjit direct entry")


def bias_relu_into(x: tsjit.Tensor, bias: tsjit.Tensor, out: tsjit.Tensor):
    out[...] = np.maximum(x + bias, 0.0)
    return out


def bias_relu_into_no_return(x: tsjit.Tensor, bias: tsjit.Tensor, out: tsjit.Tensor):
    out[...] = np.maximum(x + bias, 0.0)


def warm(scripted, *args):
    for _ in range(3):
        scripted(*args)
    return scripted


def test_writing_into_a_parameter_and_returning_it_is_a_direct_entry():
    scripted = tsjit.script(bias_relu_into)
    assert not is_direct(scripted)
    warm(scripted, floats(16, 16), floats(16), np.empty((16, 16), np.float32))
    assert is_direct(scripted)
    for x_shape, bias_shape, out_shape in [((16, 16), (16,), (16, 16)),
                                           ((2, 1024), (1024,), (2, 1024)),
                                           ((1, 8), (8,), (5, 8)),     # NumPy broadcasts
                                           ((3, 8), (3, 1), (3, 8))]:
        x, bias = floats(*x_shape), floats(*bias_shape)
        out, want = np.empty(out_shape, np.float32), np.empty(out_shape, np.float32)
        assert scripted(x, bias, out) is out
        assert bias_relu_into(x, bias, want) is want
        assert_same(out, want)
    assert is_direct(scripted)
    stats = scripted.stats()
    assert stats["calls"] == 7 and stats["kernel_launches"] == 7 and stats["bailouts"] == 0


def test_a_direct_entry_returns_a_constant_result():
    scripted = warm(tsjit.script(bias_relu_into_no_return),
                    floats(4, 4), floats(4), np.empty((4, 4), np.float32))
    assert is_direct(scripted)
    x, bias, out = floats(4, 4), floats(4), np.zeros((4, 4), np.float32)
    assert scripted(x, bias, out) is None
    assert_same(out, bias_relu(x, bias))
    assert scripted.stats()["kernel_launches"] == 4


def test_the_target_overlapping_an_input_reads_the_old_values():
    scripted = warm(tsjit.script(bias_relu_into),
                    floats(4, 4), floats(4), np.empty((4, 4), np.float32))
    mine = floats(4, 4)
    theirs = mine.copy()
    assert scripted(mine, mine[0], mine) is mine
    bias_relu_into(theirs, theirs[0], theirs)
    assert_same(mine, theirs)
    assert is_direct(scripted) and scripted.stats()["bailouts"] == 0


def test_a_read_only_or_wrongly_shaped_target_raises_numpys_error_and_stays_untouched():
    scripted = warm(tsjit.script(bias_relu_into),
                    floats(4, 8), floats(8), np.empty((4, 8), np.float32))
    x, bias = floats(4, 8), floats(8)
    frozen = np.zeros((4, 8), np.float32)
    frozen.flags.writeable = False
    assert numpy_error(bias_relu_into, x, bias, frozen) in numpy_error(scripted, x, bias, frozen)
    for wrong in (np.zeros((1, 8), np.float32), np.zeros((4, 4), np.float32)):
        want = numpy_error(bias_relu_into, x, bias, wrong.copy())
        assert want in numpy_error(scripted, x, bias, wrong)
        assert_same(wrong, np.zeros(wrong.shape, np.float32))
    assert_same(frozen, np.zeros((4, 8), np.float32))
    assert is_direct(scripted)
    stats = scripted.stats()
    assert stats["bailouts"] == 3 and stats["kernel_launches"] == 3 and stats["calls"] == 6


def test_arguments_the_guard_refuses_take_the_normal_path():
    scripted = warm(tsjit.script(bias_relu_into),
                    floats(4, 8), floats(8), np.empty((4, 8), np.float32))
    x, bias, out = floats(4, 8), floats(8), np.empty((4, 8), np.float32)
    wide, wide_out = x.astype(np.float64), np.empty((4, 8))
    want = bias_relu_into(wide, bias, np.empty((4, 8)))
    assert_same(scripted(wide, bias, wide_out), want)     # another dtype: a new specialization
    assert scripted.stats()["guard_failures"] == 1
    assert_same(scripted(x=x, bias=bias, out=out), bias_relu(x, bias))     # keywords
    with pytest.raises(TypeError, match="'out'"):
        scripted(x, bias, [0.0] * 8)
    assert scripted(x, bias, out) is out
    assert_same(out, bias_relu(x, bias))
    assert scripted.stats()["calls"] == 6


def reordered(x: tsjit.Tensor, y: tsjit.Tensor):
    a = x * 2.0 + y
    b = x - y * 3.0
    return b, a, x, None, 2


def add_then_scale(x: tsjit.Tensor, y: tsjit.Tensor):
    x += y * 2.0
    return x * 3.0      # the group writes x and computes this; the graph returns this only


@pytest.mark.parametrize("fn, y_shape", [(reordered, (3, 5)), (add_then_scale, (5,))])
def test_results_reordered_or_fewer_than_the_groups_are_a_direct_entry(fn, y_shape):
    scripted = tsjit.script(fn)
    for _ in range(4):
        x, y = floats(3, 5).astype(np.float64), floats(*y_shape).astype(np.float64)
        mine, theirs = x.copy(), x.copy()
        got, want = scripted(mine, y), fn(theirs, y)
        assert_same(got, want)
        assert_same(mine, theirs)
        if fn is reordered:
            assert got[2] is mine
    assert is_direct(scripted) and scripted.stats()["kernel_launches"] == 4
