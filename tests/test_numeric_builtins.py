"""Python's numeric builtins and operators in script code where the result type depends on
a literal: `n ** -2` is a float (CPython computes `float(n) ** -2.0`), so it meets a
`float` annotation as in TorchScript, with Python's value and exceptions."""
from __future__ import annotations

from _differential import check


def inverse_square(n: int) -> float:
    return n ** -2


def literal_power() -> float:
    return 2 ** -2


def mixed_powers(n: int, k: int) -> tuple[float, int]:
    return 3 * n ** -1 + 1, n ** k


def test_an_int_to_a_negative_literal_power_is_a_float():
    check(inverse_square, (4,), (-3,), (0,), (10 ** 400,), (4,))   # ZeroDivision, Overflow
    check(literal_power, (), (), ())
    check(mixed_powers, (2, 3), (-5, 0), (7, 2))
