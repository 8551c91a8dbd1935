"""`slice(...)` in script code: the builtin builds the same index as `a:b:c`, used in
place or through a variable, on lists, strings, tuples and arrays; literal bounds keep a
tuple's element types, and what TorchScript refuses is a located CompilationError."""
from __future__ import annotations

import numpy as np
import pytest
from _differential import check

import tsjit


def list_slices(xs: list[int]) -> tuple[list[int], ...]:
    return (xs[slice(None)], xs[slice(4)], xs[slice(1, 4)], xs[slice(None, None, -2)],
            xs[slice(-3, None, None)], xs[slice(100)])


def text_slices(s: str) -> tuple[str, str]:
    return s[slice(None, 3, 1)], s[slice(None, None, -1)]


def array_slices(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return x[slice(None, 3, 1)], x[slice(1, None), ...]


def slice_in_a_variable(xs: list[int], start: int):
    every_other = slice(start, None, 2)
    return xs[every_other], every_other


def slice_stores(xs: list[int], x: np.ndarray) -> tuple[list[int], np.ndarray]:
    xs[slice(1, 3)] = [9]
    x[slice(None, None, 2)] = 0.0
    del xs[slice(0, 1)]
    return xs, x


def tuple_slices(n: int):
    t = (1, 2.0, "x", n)
    return t[slice(1, 3)], t[slice(None, None, -1)]


def test_slice_builds_the_index_of_a_colon_slice():
    xs = list(range(10))
    check(list_slices, (xs,), ([],), ([1, 2],), (xs,))
    check(text_slices, ("foo_bar",), ("",), ("ab",))
    check(array_slices, (np.arange(10.0),), (np.arange(12).reshape(4, 3),),
          (np.arange(5, dtype=np.float32),))
    check(slice_in_a_variable, (xs, 1), (xs, -3), ([], 0), (xs, 1))
    check(slice_stores, ([1, 2, 3, 4], np.arange(5.0)), ([5, 6], np.arange(4)),
          ([1, 2, 3, 4], np.arange(5.0)))


def test_literal_slice_bounds_keep_the_element_types_of_a_tuple():
    scripted = check(tuple_slices, (4,), (-1,), (4,))
    assert "Tuple[float, str]" in str(scripted.graph)


def keyword_slice(xs: list[int]) -> list[int]:
    return xs[slice(1, stop=2)]


def mixed_tuple_by_a_variable(n: int):
    t = (1, 2.0, "x", n)
    return t[n:]


@pytest.mark.parametrize("fn, message", [
    (keyword_slice, "unexpected keyword argument 'stop'"),
    (mixed_tuple_by_a_variable, "only be sliced by constants"),
])
def test_refused_slices_are_located_errors(fn, message):
    with pytest.raises(tsjit.CompilationError, match=message) as err:
        tsjit.script(fn)
    assert "<--- HERE" in str(err.value)
