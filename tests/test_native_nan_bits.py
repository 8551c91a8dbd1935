"""NaN bits of native scalar float arithmetic as eager Python's (x86's): where LLVM would
fold an operation whose NaN differs (a square of a sign operation, a product with -1.0),
native code keeps x86's NaN (codegen/self_products.py, element_ops._x86_arithmetic); where
it cannot, the square is one multiply."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from _native import native

import tsjit

# A NaN with its sign bit set and a payload: x * x must give it back (quieted) where eager
# Python does, whatever sign operation made x.
NEGATIVE_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF0_0000_0000_0123))[0]
POSITIVE_NAN = struct.unpack("<d", struct.pack("<Q", 0x7FF8_0000_0000_0456))[0]


def square_of_abs(x: float, y: float) -> float:
    t = abs(x)
    return t * t


def square_of_negation(x: float, y: float) -> float:
    t = -x
    return t * t


def square_of_negated_arms(x: float, y: float) -> float:
    t = -x if x > y else -y
    return t * t


def square_of_loop_negation(x: float, y: float) -> float:
    t = x
    s = 0.0
    for _ in range(3):
        t = -t
        s = t * t + y
    return s


def square_of_plain_recurrence(x: float, y: float) -> float:
    z = 0.0
    for _ in range(4):
        z = z * z + x
    return z * y


def _bits(value: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", value))[0]


@pytest.mark.parametrize("fn", [square_of_abs, square_of_negation, square_of_negated_arms,
                                square_of_loop_negation,
                                square_of_plain_recurrence])
@pytest.mark.parametrize("x, y", [(NEGATIVE_NAN, 1.0), (POSITIVE_NAN, 1.0),
                                  (1.0, NEGATIVE_NAN), (-1.5, 0.25), (-0.0, 2.0)])
def test_a_square_has_eager_pythons_bits(fn, x, y):
    run, regions = native(fn)
    got = run(x, y)
    assert sum(r.stats()["native_calls"] for r in regions) == 1, [r.unsupported
                                                                  for r in regions]
    assert hex(_bits(got)) == hex(_bits(fn(x, y)))


def test_a_square_of_a_recurrence_is_one_multiply():
    """The recurrence's square has no NaN select on its path (mandelbrot's zr * zr was
    1.7x slower with it): only the squares of sign operations keep one."""
    plain, signed = (tsjit.script(fn) for fn in (square_of_plain_recurrence,
                                                 square_of_loop_negation))
    for _ in range(3):   # profiling calls, then the native code
        plain(0.25, 2.0)
        signed(0.25, 2.0)
    assert "fcmp uno" not in plain.inspect_llvm(0.25, 2.0)
    assert "fcmp uno" in signed.inspect_llvm(0.25, 2.0)
    assert np.float64(plain(0.25, 2.0)) == square_of_plain_recurrence(0.25, 2.0)


def times_minus_one(x: float, y: float) -> float:
    return x * -1.0


def over_minus_one(x: float, y: float) -> float:
    return x / -1.0


def negative_zero_minus(x: float, y: float) -> float:
    return -0.0 - x


def times_one(x: float, y: float) -> float:
    return x * 1.0


def plus_negative_zero(x: float, y: float) -> float:
    return x + -0.0


def minus_zero(x: float, y: float) -> float:
    return x - 0.0


SIGNALING_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF0_0000_0000_0001))[0]


@pytest.mark.parametrize("fn", [times_minus_one, over_minus_one, negative_zero_minus,
                                times_one, plus_negative_zero, minus_zero])
@pytest.mark.parametrize("x", [NEGATIVE_NAN, POSITIVE_NAN, SIGNALING_NAN, -2.5, 0.0])
def test_arithmetic_with_a_constant_llvm_folds_has_eager_pythons_bits(fn, x):
    run, regions = native(fn)
    got = run(x, 1.0)
    assert sum(r.stats()["native_calls"] for r in regions) == 1
    assert hex(_bits(got)) == hex(_bits(fn(x, 1.0)))


def remainder(x: float, y: float) -> float:
    return x % y


def divmod_remainder(x: float, y: float) -> float:
    return divmod(x, y)[1]


@pytest.mark.parametrize("fn", [remainder, divmod_remainder])
@pytest.mark.parametrize("x, y", [(NEGATIVE_NAN, POSITIVE_NAN), (POSITIVE_NAN, NEGATIVE_NAN),
                                  (-POSITIVE_NAN, POSITIVE_NAN), (SIGNALING_NAN, POSITIVE_NAN)])
def test_a_remainder_of_python_floats_has_cpythons_nan(fn, x, y):
    """CPython's float % calls the C library's fmod, whose NaN of two NaNs is the first one
    (quieted); NumPy's remainder loop (x87's fprem) gives the larger: native code gives
    each its own (kernel_spec.PYTHON_FLOAT_REMAINDER)."""
    run, regions = native(fn)
    got = run(x, y)
    assert sum(r.stats()["native_calls"] for r in regions) == 1
    assert hex(_bits(got)) == hex(_bits(fn(x, y)))
    numpy_got = tsjit.script(fn)
    for _ in range(3):
        got = numpy_got(np.float64(x), np.float64(y))
        assert type(got) is np.float64
        assert hex(_bits(got)) == hex(_bits(fn(np.float64(x), np.float64(y))))
