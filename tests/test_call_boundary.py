"""The call boundary takes what Python's numeric tower and NumPy's scalars give (API.md):
np.int64 for int, int / np.float32 / np.float64 for float, np.bool_ for bool, inside
containers too, and a tuple where a List is declared. The values pass unchanged, so each
result is eager's, of eager's type: an np.float32 promotes as NumPy 2 says, not as the
Python float a specialization was compiled for. Every program runs on its profiling
call, its optimized calls and after guard failures (the argument lists alternate)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _differential import check

import tsjit
from tsjit import Tensor


def affine(x: Tensor, a: float, b: float) -> Tensor:
    return x * a + b


def shifted_square(x: Tensor, s: float) -> Tensor:
    return (x - s) * (x - s) + s


def maybe_scaled(x: Tensor, s: float | None) -> Tensor:
    if s is None:
        return x * 2.0 + 1.0
    return x * s + 1.0


def weighted(x: Tensor, ws: list[float]) -> Tensor:
    return x * ws[0] + ws[1]


def with_flag(x: Tensor, up: bool) -> Tensor:
    return x + 1 if up else x - 1


def times_three_plus_one(n: int) -> int:
    return n * 3 + 1


def triangle(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


def scaled_sum(n: int, s: float) -> float:
    acc = 0.0
    for i in range(n):
        acc += s * i
    return acc


def scalar_ops(a: int, b: int) -> tuple[float, int, int, bool]:
    return a / b, a // b, a % b, a < b


def real_ops(a: float, b: float) -> float:
    return a * b - a / b + a ** 2


def total(xs: list[float]) -> float:
    s = 0.0
    for v in xs:
        s += v
    return s


def product(t: tuple[float, float]) -> float:
    return t[0] * t[1]


def lookup(d: dict[str, float]) -> float:
    return d["a"] + 1.0


def first_plus_second(xs: list[Tensor]) -> Tensor:
    return xs[0] + xs[1]


def appended(xs: list[int]) -> list[int]:
    xs.append(1)
    return xs


def row(x: Tensor, i: int) -> Tensor:
    return x[i]


def zeros(n: int) -> Tensor:
    return np.zeros(n)


F16 = np.linspace(-2, 2, 7, dtype=np.float16)
F32 = np.linspace(-2, 2, 7, dtype=np.float32)
I32 = np.arange(-3, 4, dtype=np.int32)
REALS = [2, 2.5, np.float32(2.5), np.float64(2.5), np.int64(2), np.float16(1.5), True]
INTEGERS = [3, np.int64(3), np.int32(-3), np.uint8(3), np.int64(0), True]


def calls_and_reversed(calls: list[tuple]) -> list[tuple]:
    """Each call twice (profiling, then optimized), then all again in reverse order, so a
    specialization made for one kind of number meets the others."""
    forward = [args for args in calls for _ in range(2)]
    return forward + forward[::-1]


@pytest.mark.parametrize("fn, calls", [
    (affine, [(x, a, b) for x in (F16, F32, I32) for a in REALS for b in REALS[:4]]),
    (shifted_square, [(x, s) for x in (F16, F32, I32) for s in REALS]),
    (maybe_scaled, [(x, s) for x in (F16, F32) for s in [*REALS, None]]),
    (weighted, [(x, ws) for x in (F16, F32)
                for ws in ([1, 2.5], (2, np.float32(1.5)), [np.float64(2), 1])]),
    (with_flag, [(x, up) for x in (F32, I32) for up in (True, np.bool_(True), np.bool_(False))]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_fused_kernels_give_eager_dtypes_for_numpy_scalar_parameters(fn, calls):
    check(fn, *calls_and_reversed(calls))


@pytest.mark.parametrize("fn, calls", [
    (times_three_plus_one, [(n,) for n in INTEGERS]),
    (triangle, [(n,) for n in INTEGERS[:5]]),
    (scaled_sum, [(n, s) for n in (5, np.int64(5)) for s in REALS]),
    (scalar_ops, [(a, b) for a in INTEGERS for b in INTEGERS]),
    (real_ops, [(a, b) for a in REALS for b in REALS[:4]]),
    (row, [(F32, i) for i in (3, np.int64(3), np.int32(-1), np.uint8(2))]),
    (zeros, [(n,) for n in (3, np.int64(3), np.int16(2))]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_scalar_code_gives_eager_types_for_numpy_scalar_parameters(fn, calls):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's divide by zero
        check(fn, *calls_and_reversed(calls))


@pytest.mark.parametrize("fn, calls", [
    (total, [([1, 2.8, 3],), ((1, 2.0),), ([np.float32(1), 2.0],), ([np.int64(1)],), ([],)]),
    (product, [((1, 2.0),), ((np.float32(1.5), 2),), ((2, 3),)]),
    (lookup, [({"a": 1},), ({"a": np.float32(2)},), ({"a": 2.5},)]),
    (first_plus_second, [((F32, F32),), ([F16, F32],)]),
    (appended, [([1, 2],), ((1, 2),), ([np.int64(1)],)]),   # a tuple cannot be appended to
], ids=lambda v: getattr(v, "__name__", ""))
def test_containers_take_the_numeric_tower_and_tuples_for_lists(fn, calls):
    check(fn, *calls_and_reversed(calls))


@pytest.mark.parametrize("fn, args, found", [
    (times_three_plus_one, (2.0,), "float"),
    (times_three_plus_one, (np.float32(2),), "float32"),
    (real_ops, ("2", 1.0), "str"),
    (real_ops, (np.complex64(1), 1.0), "complex64"),
    (real_ops, (np.array(2.0), 1.0), "ndarray"),
    (with_flag, (F32, 1), "int"),
    (total, ([1, "x"],), "list"),
    (product, ((1, 2, 3),), "tuple"),
    (lookup, ({1: 1.0},), "dict"),
])
def test_values_outside_the_tower_are_still_type_errors(fn, args, found):
    scripted = tsjit.script(fn)
    with pytest.raises(TypeError, match=f"but instead found type '{found}'"):
        scripted(*args)


def test_numpy_scalars_do_not_respecialize_a_fused_function_to_the_depth_limit():
    # The guard of code made for a Python float rejects an np.float32 (NumPy 2 promotes
    # float16 * np.float32 to float32, * 2.5 to float16). Its fallback used to specialize
    # for a float again, fail the same guard, and so on: 8 specializations, each call
    # failing 8 guards. Now the fallback interprets calls with NumPy scalars.
    scripted = tsjit.script(affine)
    for _ in range(3):
        for a in (2.5, np.float32(2.5), np.float64(2.5)):
            check(affine, (F16, a, 1.0), scripted=scripted)
    assert scripted.stats()["specializations"] == 1
    assert scripted.stats()["kernel_launches"] == 3


class _Count(int):
    """An int subclass: accepted where an int is."""


class _PosingAsInt:
    """Not an int, but isinstance(v, int) holds by its __class__ (as for proxies)."""

    @property
    def __class__(self):
        return int


def number_count(xs: list[int]) -> int:
    return len(xs)


def test_container_checks_take_what_isinstance_takes_element_by_element():
    """Lists of numbers are checked by their elements' classes (a 20k-int list took ~5 ms
    per call element by element); what an element's class does not settle, isinstance
    does, and the first element it rejects is still a TypeError."""
    scripted = tsjit.script(number_count)
    many = list(range(5000))
    accepted = [many, [True, np.int64(3), _Count(4)] + many, many + [_PosingAsInt()],
                tuple(many)]
    for xs in accepted:
        assert scripted(xs) == number_count(xs)
    for bad in (many + [2.0], many + [None], [np.float32(1)] + many):
        with pytest.raises(TypeError, match="but instead found type 'list'"):
            scripted(bad)
