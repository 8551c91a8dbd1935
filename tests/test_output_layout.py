"""A fused result lies in memory as eager NumPy's does: each ufunc of the chain gives its
result its iterator's K order, where operands that disagree leave C order. The launcher
used to copy the first full-rank input's layout: np.fmax(f, c) + 0.0 of a Fortran f and a
C c came out Fortran-ordered, where NumPy's is C-ordered (the fusion fuzzer, with strides)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tsjit
from tsjit.codegen.output_layout import iteration_order


def chain(x, y):
    return np.fmax(x, y) + 0.0


def two_results(x, y, z):
    a = x * 2.0 + z
    return a, (x + y) * z


def broadcast_chain(x, row, y):
    return (x + row) * 3.0 - y


def _layouts(shape: tuple[int, ...]):
    """Arrays of ``shape`` in C order, Fortran order, a permuted order, reversed, sliced."""
    base = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    permuted = np.ascontiguousarray(base.transpose(1, 0, *range(2, len(shape))))
    yield "C", base
    yield "F", np.asfortranarray(base)
    yield "permuted", permuted.transpose(1, 0, *range(2, len(shape)))
    yield "reversed", base[::-1].copy()[::-1]
    yield "sliced", np.asfortranarray(np.concatenate([base, base], axis=-1))[..., ::2]


def _assert_laid_out_as(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_array_equal(got, want)
    assert got.strides == want.strides
    assert got.flags.c_contiguous == want.flags.c_contiguous
    assert got.flags.f_contiguous == want.flags.f_contiguous
    assert got.base is None and got.flags.owndata


def _check(fn, *args) -> None:
    scripted = tsjit.script(fn)
    want = fn(*args)
    for _ in range(3):   # profiling, then optimized calls
        got = scripted(*args)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            _assert_laid_out_as(g, w)
    assert scripted.stats()["kernel_launches"] > 0


@pytest.mark.parametrize("shape", [(6, 5), (4, 3, 5)])
@pytest.mark.parametrize("x_layout,y_layout",
                         list(itertools.product(["C", "F", "permuted", "sliced"], repeat=2)))
def test_a_chain_of_ufuncs_lays_out_its_result_as_numpy(shape, x_layout, y_layout):
    arrays = dict(_layouts(shape))
    _check(chain, arrays[x_layout], arrays[y_layout])


@pytest.mark.parametrize("layouts", [("F", "C", "F"), ("F", "F", "C"), ("C", "F", "F"),
                                     ("permuted", "F", "F"), ("reversed", "F", "C")])
def test_each_result_has_its_own_chains_layout(layouts):
    arrays = dict(_layouts((4, 3, 5)))
    _check(two_results, *(arrays[name] for name in layouts))


@pytest.mark.parametrize("x_layout", ["C", "F", "permuted"])
def test_broadcast_operands_have_no_vote_on_their_broadcast_axes(x_layout):
    arrays = dict(_layouts((4, 3, 5)))
    row = np.asfortranarray(np.arange(15.0).reshape(1, 3, 5))
    _check(broadcast_chain, arrays[x_layout], row, arrays["F"])


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4)])
@pytest.mark.parametrize("orders", list(itertools.product("CFPR", repeat=2)))
def test_iteration_order_is_numpys(shape, orders):
    """The order NumPy's iterator picks for np.add of two operands: its result's strides
    sort the axes the same way (innermost first)."""
    base = np.ones(shape)
    made = {"C": base, "F": np.asfortranarray(base), "R": base[::-1],
            "P": np.ascontiguousarray(base.swapaxes(0, 1)).swapaxes(0, 1)}
    operands = [made[o] for o in orders]
    result = np.add(*operands)
    inner_first = sorted(range(len(shape)), key=lambda a: result.strides[a])
    assert iteration_order([a.strides for a in operands], len(shape)) == inner_first


def cast_operand(b, i):
    return (b < i) + (i + i)           # the bool operand of the last add is cast to int8


def no_cast(b, i):
    return (i - i) * (i + i)


def where_of_same_dtypes(b, i):
    return np.where(b, i, i) + 1


def astype_then_add(b, i):
    return i.astype(np.float64) + (i * 2.0)


def scalar_cast(b, i):
    return (i + 1) * 1.5


def logical_of_two_dtypes(b, i):
    return np.logical_and(b, i) | (i > 0)


def shift_by_another_dtype(b, i):
    return (i.astype(np.int16) << (b + b)) + (i << i)


@pytest.mark.parametrize("fn", [cast_operand, no_cast, where_of_same_dtypes, astype_then_add,
                                scalar_cast, logical_of_two_dtypes, shift_by_another_dtype])
@pytest.mark.parametrize("shape", [(1, 2, 3), (2, 1, 3), (3, 2, 1), (1, 4), (4, 1), (1, 1, 3)])
@pytest.mark.parametrize("order", ["F", "permuted", "reversed"])
def test_axes_of_length_one_lie_where_numpys_loop_puts_them(fn, shape, order):
    """NumPy's trivial loop (operands of one shape and contiguity, no cast) gives a C or
    Fortran-ordered result; its iterator (a cast operand, np.where) lays the result out in
    iteration order, axes of length 1 included: (np.asfortranarray(b) < i) + (i + i) of
    shape (1, 2, 2) has strides (4, 1, 2) where i + i has (1, 1, 2). The kernels' results
    took empty_like's order, (1, 1, 2) (the tensor-program fuzzer, seed 2)."""
    arrays = dict(_layouts(shape))
    i = arrays[order].astype(np.int8) % 5
    if order == "F":
        i = np.asfortranarray(i)
    elif order == "reversed":
        i = i[::-1].copy()[::-1]
    b = arrays[order] > 2
    _check(fn, b, i)


def add_its_transpose_in_place(x):
    np.add(x, x.T, out=x)
    return x * 2


def assign_its_reverse(x):
    x[...] = x[::-1] + 1
    return x * 2


@pytest.mark.parametrize("fn,shape,order", [(add_its_transpose_in_place, (4, 4), "F"),
                                            (assign_its_reverse, (4, 4), "F"),
                                            (assign_its_reverse, (4, 4, 3), "F"),
                                            (assign_its_reverse, (4, 4, 3), "permuted")])
def test_a_value_written_in_place_lies_as_its_array(fn, shape, order):
    """x * 2 after np.add(x, x.T, out=x) of a Fortran x is Fortran-ordered (NumPy's
    trivial loop on x); the model laid out the add's value in its iteration order (C,
    where x and x.T disagree), as though it were a fresh array (a probe of in-place
    programs: 45 of 1056 mismatched, all Fortran-ordered)."""
    x = dict(_layouts(shape))[order]
    scripted = tsjit.script(fn)
    for _ in range(3):
        want_x, got_x = x.copy(order="K"), x.copy(order="K")
        _assert_laid_out_as(scripted(got_x), fn(want_x))
        _assert_laid_out_as(got_x, want_x)
    assert scripted.stats()["kernel_launches"] > 0
