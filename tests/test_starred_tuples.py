"""`*t` of a tuple in tuple and list displays and in call arguments, as TorchScript
accepts them: the tuple's length is known when compiling, so its elements are spread
into the display or the parameters; a list has no such length and stays refused."""
from __future__ import annotations

import pytest
from _differential import check

import tsjit


def spread_in_displays(x: int, t: tuple[int, float]):
    both = (*t, x, *t)
    return (x, *t), both, [*(x, x + 1), *(), *(2 * x,)], [*t[:1], 9]


def weighted(a: int, b: float, c: int) -> float:
    return a * b - c


def spread_in_calls(t: tuple[int, float, int], pair: tuple[float, int]):
    return weighted(*t), weighted(t[0], *pair), max(*t), [*pair[1:], *t[::2]]


def test_a_tuple_spreads_into_displays_and_calls():
    check(spread_in_displays, (2, (3, 0.5)), (-1, (0, -0.0)), (2, (3, 0.5)))
    check(spread_in_calls, ((2, 1.5, 4), (2.5, 1)), ((0, -3.0, 0), (0.0, 0)),
          ((2, 1.5, 4), (2.5, 1)))


def spreads_a_list(xs: list[int]):
    return (0, *xs)


def test_a_starred_list_is_a_located_error():
    with pytest.raises(tsjit.CompilationError, match="only a tuple") as err:
        tsjit.script(spreads_a_list)
    assert "*xs" in str(err.value) and "<--- HERE" in str(err.value)
