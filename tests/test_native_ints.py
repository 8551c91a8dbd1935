"""Python ints in native scalar code: every int result is Python's, also where it leaves
int64, and results of another type than the IR's (int ** negative int, float ** float
complex) run the region again in the interpreter, or raise eager's exception after an
effect. `native`/`check_native` as in test_native_scalar.py (split from it by subject;
the range analysis that drops overflow tests is tested in test_int_ranges.py).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from _differential import assert_same
from _native import INT64_MAX, INT64_MIN, check_native, native

import tsjit

# ---------------------------------------------------------------------------- Python ints


def int_ops(a: int, b: int):
    return a + b, a - b, a * b, a // b, a % b, a << 3, a >> 2, a & b, a | b, a ^ b, -a, ~a, \
        abs(a), min(a, b), max(a, b), a == b, a < b, a >= b


INT_PAIRS = [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 3), (-1, 5), (6, -3), (-6, 3),
             (123456789, 1000), (INT64_MAX, 7), (INT64_MIN, -7), (INT64_MIN + 1, -1)]


def test_int_arithmetic_follows_python_also_beyond_64_bits():
    """`INT64_MAX + 7`, `INT64_MIN * -7`, `-INT64_MIN` and their kind give Python's ints."""
    (region,) = check_native(int_ops, *INT_PAIRS)
    assert region.stats()["reruns"] == 3


def test_int_division_by_zero_raises_zero_division_error():
    check_native(int_ops, (5, 0), (0, 0), (-3, 0))


def bool_ops(a: bool, b: bool, n: int):
    flags = a
    for _ in range(n):
        flags ^= b
        flags = flags ^ a
    return a & b, a | b, a ^ b, flags


def test_bool_operators_and_augmented_xor_build_natively():
    """`^` / `^=` on bools: the code generator named a builder method that does not exist
    (an AttributeError, logged, and the interpreter on every call)."""
    check_native(bool_ops, *[(a, b, n) for a in (False, True) for b in (False, True)
                             for n in (0, 1, 2)])


def int_power(a: int) -> int:
    return a ** 0 + a ** 1 + a ** 2 + a ** 5


def int_power_of(a: int, n: int) -> int:
    return a ** n


def builtins_of_numbers(a: int, b: int, x: float):
    return divmod(a, b), divmod(x, 2.5), pow(a, 3), pow(x, b), pow(2, 10) + b


def test_divmod_and_pow_builtins():
    check_native(builtins_of_numbers, (7, 2, 7.5), (-7, 2, -7.5), (7, -3, 0.25), (5, 0, 1.0),
                 (INT64_MIN, -1, -0.0))


def test_int_power():
    check_native(int_power, (3,), (-2,), (0,), (1000,))
    check_native(int_power_of, (3, 0), (-2, 7), (0, 0), (5, 13), (-1, 1000001))


def grows(a: int, n: int) -> int:
    t = a
    for i in range(n):
        t = t * 3 + i
    return t


def test_an_int_beyond_64_bits_runs_the_region_again_in_the_interpreter():
    """Native ints are 64 bits; where Python's int needs more, the region runs again from
    its arguments in the interpreter, which gives Python's int (native code used to wrap
    around: 3 * (2**63 - 1) gave 2**63 - 3 natively, and the exact int in the profiling
    calls, which the interpreter runs)."""
    (region,) = check_native(grows, (1, 10), (1, 60), (INT64_MAX, 1), (-(2 ** 40), 30))
    assert region.stats()["native_calls"] == 4 and region.stats()["reruns"] == 3
    run, _ = native(grows)
    assert run(INT64_MAX, 1) == 3 * INT64_MAX and run(2 ** 62, 1) == 3 * 2 ** 62


def factorial(n: int) -> int:
    r = 1
    for i in range(2, n + 1):
        r *= i
    return r


def test_every_call_of_a_scripted_function_gives_pythons_int():
    """The profiling call runs in the interpreter and the optimized ones natively: both
    give 25! (the native loop wrapped it to 7034535277573963776)."""
    scripted = tsjit.script(factorial)
    for n in (25, 20, 25, 30, 3):
        assert_same(scripted(n), factorial(n))
    assert scripted.stats()["kernel_launches"] >= 4


def negate(a: int) -> int:
    return -a


def absolute(a: int) -> int:
    return abs(a)


def quotient(a: int, b: int) -> int:
    return a // b


def quotient_and_remainder(a: int, b: int):
    return divmod(a, b)


def shift_left(a: int, n: int) -> int:
    return a << n


def int_of_element(x: tsjit.Tensor, i: int) -> int:
    return int(x[i])


def int_of_float(x: float) -> int:
    return int(x) + math.floor(x)


def affine(a: int) -> int:
    return 5 - (a * -3 + 7) * 2


def plus_one(a: int) -> int:
    return a + 1


def constant_minus(a: int) -> int:
    return 5 - a


BIG_UINT64 = np.array([5, 2 ** 64 - 1, 2 ** 63], dtype=np.uint64)


@pytest.mark.parametrize("fn, fitting, beyond", [
    (negate, [(INT64_MAX,), (INT64_MIN + 1,)], [(INT64_MIN,)]),
    (absolute, [(INT64_MIN + 1,), (-5,)], [(INT64_MIN,)]),
    (quotient, [(INT64_MIN, 1), (INT64_MIN, -2)], [(INT64_MIN, -1)]),
    (quotient_and_remainder, [(INT64_MIN, 3)], [(INT64_MIN, -1)]),
    (shift_left, [(-1, 63), (0, 100), (3, 61), (-5, 1), (5, -1)],
     [(1, 63), (3, 62), (1, 64), (-3, 62), (-1, 64)]),
    (int_power_of, [(-2, 63), (2, 62), (10, 18), (-1, 1000001), (0, 0)],
     [(2, 63), (3, 40), (10, 19), (-3, 40)]),
    (int_of_element, [(BIG_UINT64, 0)], [(BIG_UINT64, 1), (BIG_UINT64, 2)]),
    (int_of_float, [(1e18,), (-2.5,)], [(1e19,), (-1e300,)]),
    # 5 - (a * -3 + 7) * 2 == 6 * a - 9 fits for -1537228672809129299 <= a <= ...302 (at
    # ...299 (a * -3 + 7) * 2 is 2**63, but only the chain's result is tested)
    (affine, [(-1537228672809129299,), (1537228672809129302,), (0,)],
     [(-1537228672809129300,), (1537228672809129303,), (INT64_MIN,)]),
    (plus_one, [(INT64_MAX - 1,), (INT64_MIN,)], [(INT64_MAX,)]),
    (constant_minus, [(INT64_MAX,), (INT64_MIN + 6,)], [(INT64_MIN + 5,), (INT64_MIN,)]),
])
def test_each_int_operation_gives_pythons_int_beyond_64_bits(fn, fitting, beyond):
    """Each operation tests its own result: the calls whose result fits stay native, the
    others run again in the interpreter."""
    for args in beyond:                        # eager Python's result does leave int64
        assert outside_int64(fn(*args)), args
    (region,) = check_native(fn, *fitting, *beyond)
    assert region.stats()["reruns"] == len(beyond)
    assert region.stats()["native_calls"] == len(fitting) + len(beyond)


def outside_int64(value) -> bool:
    values = value if type(value) is tuple else (value,)
    return any(not INT64_MIN <= v <= INT64_MAX for v in values)


def collatz_steps(x: int, n: int) -> int:
    for _ in range(n):
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
    return x


def nested_choice(a: int, b: int) -> int:
    return a * 2 if a > b else (b - a if b > 0 else -b)


def test_small_ifs_give_pythons_int_whichever_arm_goes_beyond_64_bits():
    """Small ifs run both arms and select (emitter._select_if): an int beyond 64 bits in
    either arm makes the region run again, so the result is Python's; an arm not taken
    costs only that re-run (2**62 is even, but 3 * 2**62 + 1 was computed too)."""
    (region,) = check_native(collatz_steps, (27, 20), (2 ** 62, 1), (2 ** 62 + 1, 1),
                             (-(2 ** 62) + 1, 1))
    assert region.stats()["reruns"] == 3
    (region,) = check_native(nested_choice, (3, 1), (2 ** 62, 0), (INT64_MIN, -5),
                             (-1, INT64_MIN), (0, 7), (INT64_MIN, 5), (INT64_MIN, INT64_MIN))
    assert region.stats()["reruns"] == 5    # 3 taken arms beyond, 2 arms not taken


def square_into(out: tsjit.Tensor, t: int) -> int:
    for i in range(len(out)):
        t = t * t
        out[i] = i + 1
    return t


def test_an_int_beyond_64_bits_after_a_write_raises_overflow_error():
    """Before any write the region runs again (2**40 squared); after one it cannot, and
    raises OverflowError (as eager Python does where such an int goes into an array)
    rather than go on with a wrapped int."""
    (region,) = check_native(square_into, (np.zeros(3), 3), (np.zeros(3), 2 ** 40))
    assert region.stats()["reruns"] == 1
    run, _ = native(square_into)
    out = np.zeros(3)
    with pytest.raises(OverflowError, match="64 bits.*already performed an effect") as info:
        run(out, 2 ** 20)                                  # 2**80 after out[0] = 1
    assert "t * t" in str(info.value)
    assert_same(out, np.array([1.0, 0.0, 0.0]))


def store_products(x: tsjit.Tensor, v: int) -> tsjit.Tensor:
    for i in range(len(x)):
        x[i] = v * (i + 1)
    return x


def test_an_int_beyond_64_bits_stored_after_a_write_raises_eagers_overflow_error():
    """Eager Python raises OverflowError storing 2**63 into x[1], after x[0] = 2**62;
    native code cannot re-run after the write, and raises the same class."""
    check_native(store_products, (np.zeros(3, np.int64), 5), (np.zeros(3, np.int64), 2 ** 62))


def store_then_power(out: tsjit.Tensor, x: float, y: float) -> float:
    out[0] = x
    return x ** y


def test_a_result_of_another_type_after_a_write_raises_a_type_error():
    run, (region,) = native(store_then_power)
    out = np.zeros(1)
    assert_same(run(out, 2.0, 0.5), store_then_power(np.zeros(1), 2.0, 0.5))
    with pytest.raises(TypeError, match="complex.*already performed an effect") as info:
        run(out, -2.0, 0.5)
    assert "x ** y" in str(info.value) and region.stats()["reruns"] == 0
    assert_same(out, np.array([-2.0]))


def warning_then_power(x: tsjit.Tensor, t: int, n: int):
    y = x[0] * x[0]
    return t ** n + int(y > 0)


def test_a_numpy_warning_counts_as_an_effect():
    """A NumPy warning is output, like a print: a re-run would emit it twice."""
    run, (region,) = native(warning_then_power)
    small, huge = np.array([2.0], np.float32), np.array([3e38], np.float32)
    assert_same(run(small, 2, -1), 1.5)                        # no warning: re-runs
    with pytest.warns(RuntimeWarning, match="overflow"):
        assert_same(run(huge, 2, 3), 9)
    with pytest.warns(RuntimeWarning, match="overflow"), \
            pytest.raises(TypeError, match="already performed an effect"):
        run(huge, 2, -1)
    assert region.stats()["reruns"] == 1


def print_then_power(t: int, n: int):
    print("start")
    return t ** n


def test_a_region_that_printed_does_not_rerun(capsys):
    run, (region,) = native(print_then_power)
    assert_same(run(2, 3), 8)
    with pytest.raises(TypeError, match="float.*already performed an effect"):
        run(2, -1)
    assert capsys.readouterr().out == "start\n" * 2 and region.stats()["reruns"] == 0


def shifts(a: int, n: int):
    return a << n, a >> n


def test_shifts_follow_python_and_reject_negative_counts():
    check_native(shifts, (5, 3), (-5, 1), (-1, 70), (1, 63), (3, 64), (7, 0), (5, -1))


def true_division(a: int, b: int) -> float:
    return a / b


def test_int_true_division_is_correctly_rounded_beyond_2_53():
    check_native(true_division, (7, 2), (-9, 4), (1, 3), (2 ** 53 + 1, 3),
                 (INT64_MAX, INT64_MIN), (3, 2 ** 60 + 1), (1, 0))


def mixed_compare(a: int, x: float):
    return a == x, a != x, a < x, a <= x, a > x, a >= x, x < a, x == a


def test_int_float_comparison_is_exact():
    big = 2 ** 53
    check_native(mixed_compare, (1, 1.0), (big + 1, float(big)), (big, float(big)),
                 (-big - 1, -float(big)), (INT64_MAX, 2.0 ** 63), (INT64_MIN, -2.0 ** 63),
                 (3, math.nan), (3, math.inf), (-3, -math.inf), (0, -0.0))


def complex_power(x: float, y: float) -> float:
    return x ** y


def test_a_power_of_another_type_than_the_ir_reruns_the_region():
    """Python's float ** float is complex for a negative base and int ** negative int a
    float: native code cannot take those, so the interpreter runs the region again."""
    (region,) = check_native(complex_power, (2.0, 0.5), (-8.0, 1.0 / 3.0), (-2.0, 1.5))
    assert region.stats()["reruns"] == 2
    (region,) = check_native(int_power_of, (2, 3), (2, -1), (-4, -3), (0, -1))
    assert region.stats()["reruns"] == 2          # 0 ** -1 raises ZeroDivisionError


def test_a_rerun_is_a_bailout_of_the_scripted_function():
    f = tsjit.script(complex_power)
    for _ in range(3):
        assert_same(f(2.0, 0.5), complex_power(2.0, 0.5))
    assert_same(f(-2.0, 1.5), complex_power(-2.0, 1.5))
    assert f.stats()["bailouts"] == 1
