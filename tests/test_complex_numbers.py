"""Complex numbers in script code. `cmath`: each function is CPython's own call, so every
tier gives its values, NaN/inf parts and exceptions (ValueError at a pole) bit for bit, for
complex, float, int and bool arguments; its constants are captured like `math`'s; and a
function using them pickles through the saved form. Complex dict keys, as TorchScript's."""
from __future__ import annotations

import cmath
import itertools
import pickle

from _differential import check

import tsjit

PARTS = [0.0, -0.0, 1.0, -2.2, 10.0, float("inf"), float("nan")]
VALUES = [complex(x, y) for x, y in itertools.product(PARTS, PARTS)]


def transcendental(z: complex) -> tuple[complex, ...]:
    return (cmath.exp(z), cmath.sqrt(z), cmath.sin(z), cmath.cos(z), cmath.tan(z),
            cmath.asin(z), cmath.acos(z), cmath.atan(z), cmath.sinh(z), cmath.cosh(z),
            cmath.tanh(z), cmath.asinh(z), cmath.acosh(z))


def logarithms(z: complex, base: float) -> tuple[complex, complex, complex, complex]:
    return cmath.log(z), cmath.log10(z), cmath.atanh(z), cmath.log(z, base)


def classify(z: complex):
    return (cmath.phase(z), cmath.polar(z), cmath.isnan(z), cmath.isinf(z),
            cmath.isfinite(z), cmath.isclose(z, z + 1e-12), cmath.isclose(z, 0j, abs_tol=1.0))


def of_reals(r: float, phi: float, n: int, b: bool):
    return cmath.rect(r, phi), cmath.sqrt(r), cmath.exp(n), cmath.phase(b), cmath.log(n + 1)


def constants():
    return cmath.pi, cmath.e, cmath.tau, cmath.inf, cmath.nan, cmath.infj, cmath.nanj


def test_cmath_functions_are_cpythons_on_every_tier():
    rounds = [(z,) for z in VALUES] * 2
    check(transcendental, *rounds)
    check(logarithms, *[(z, 2.0) for z in VALUES], (1j, 1.0), (0j, 2.0))  # ValueError, ZeroDivision
    check(classify, *rounds)
    check(of_reals, (2.0, 0.5, 3, True), (-1.0, float("inf"), -1, False), (0.0, -0.0, 0, True))
    check(constants, (), (), ())


def test_a_function_using_cmath_pickles():
    scripted = tsjit.script(transcendental)
    restored = pickle.loads(pickle.dumps(scripted))
    check(transcendental, (1 + 2j,), (-0.5j,), scripted=restored)


def complex_keys(table: dict[complex, complex], key: complex):
    squares = {z: z * z for z in table}
    literal = {1j: "i", -1 + 0j: "minus one"}
    return table[key], squares, literal.get(key, "?"), key in table


def test_complex_numbers_are_dict_keys():
    table = {2 + 3j: 2 - 3j, -4.3 - 2j: 3j, 1j: 0j}
    check(complex_keys, (table, -4.3 - 2j), (table, 1j), (table, 5j), (table, 1j))  # KeyError
