"""Native scalar code (codegen/scalar, passes/lower_native_regions): regions of scalar
control flow and element access compiled to LLVM must be indistinguishable from eager
Python, and from the interpreter, on every input.

`native(fn)` scripts `fn`, lowers its graph's native regions and runs the result in the
interpreter (a NativeCall runs its compiled code), as the executor does after
specializing (but on the unspecialized graph, without profiling, so that each test sees
the native code on every call).  `check_native` compares that with eager Python on fresh
copies of each argument tuple: results (types included), exception classes, warnings and
argument mutations; it also requires that the region really ran natively (both in
_native.py; random programs are in test_native_fuzz.py).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from _differential import assert_same
from _native import INT64_MAX, INT64_MIN, check_native, native

import tsjit
from tsjit.passes.lower_native_regions import lower_native_regions
from tsjit.testing.filecheck import FileCheck

# ---------------------------------------------------------------------------- regions


def collatz(n: int) -> int:
    total = 0
    for i in range(1, n + 1):
        x = i
        while x != 1:
            if x % 2 == 0:
                x = x // 2
            else:
                x = 3 * x + 1
            total += 1
    return total


def scale_then_count(x: tsjit.Tensor, t: float):
    y = x * 2.0 + 1.0
    count = 0
    for i in range(y.shape[0]):
        if y[i] > t:
            count += 1
    return y, count


def array_only(x: tsjit.Tensor, y: tsjit.Tensor) -> tsjit.Tensor:
    return x * y + 1.0


def test_a_scalar_function_becomes_one_native_call():
    scripted = tsjit.script(collatz)
    graph = scripted.graph.copy()
    lower_native_regions(graph)
    FileCheck().check("prim::NativeCall_0").check_not("prim::Loop").check(
        "with prim::NativeCall_0 = graph").check("prim::Loop").check("aten::floordiv").run(
        str(graph))
    assert [n.kind for n in graph.block.nodes] == ["prim::NativeCall"]


def test_only_the_loop_of_a_function_with_array_ops_is_native():
    scripted = tsjit.script(scale_then_count)
    graph = scripted.graph.copy()
    lower_native_regions(graph)
    top = [n.kind for n in graph.block.nodes]
    assert "prim::NativeCall" in top and "aten::mul" in top and "prim::Loop" not in top


def test_array_arithmetic_is_left_to_the_fuser():
    scripted = tsjit.script(array_only)
    graph = scripted.graph.copy()
    lower_native_regions(graph)
    assert all(n.kind != "prim::NativeCall" for n in graph.nodes())


def rows_plus_one(x: tsjit.Tensor) -> tsjit.Tensor:
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        row = x[i] * 2.0                       # an array op: the outer loop stays
        for j in range(row.shape[0]):
            out[i, j] = row[j] + 1.0           # the inner loop is native
    return out


def test_an_inner_loop_is_native_inside_an_interpreted_loop():
    """With the ranks the executor profiled, `x[i]` of a matrix is a row: the outer loop
    computes with arrays and stays in the interpreter, the inner one is native."""
    f = tsjit.script(rows_plus_one)
    x = np.arange(12.0).reshape(3, 4)
    (outer,) = [n for n in f.graph_for(x).block.nodes if n.kind == "prim::Loop"]
    assert [n.kind for n in outer.blocks[0].nodes].count("prim::NativeCall") == 1
    for arg in (x, x.astype(np.float32), x[:, ::2]):
        assert_same(f(arg), rows_plus_one(arg))
    assert f.stats()["kernel_launches"] >= 3 * 3


def test_mixed_graph_runs_its_loop_natively():
    x = np.array([0.5, -1.0, 3.0, 2.0])
    check_native(scale_then_count, (x, 1.5), (x.astype(np.float32), 0.0), (x[:0], 1.0))


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


# ---------------------------------------------------------------------------- Python floats


def float_ops(x: float, y: float):
    return x + y, x - y, x * y, x / y, x // y, x % y, -x, abs(x), min(x, y), max(x, y), \
        x < y, x == y, x != y


FLOAT_PAIRS = [(7.5, 2.0), (-7.5, 2.0), (7.5, -2.0), (-7.5, -2.0), (0.5, 0.25), (-0.1, 1.0),
               (1e308, 10.0), (-0.0, 1.0), (math.inf, 2.0), (math.nan, 1.0), (1.0, math.nan),
               (5.0, math.inf), (-5.0, math.inf), (2.0, 0.0)]


def test_float_arithmetic_is_bitwise_cpython():
    check_native(float_ops, *FLOAT_PAIRS)


def float_power(x: float, y: float, n: int):
    return x ** y, x ** n, x ** 2.0, abs(x) ** 0.5


def test_float_power_follows_cpython():
    check_native(float_power, (2.25, 0.5, 3), (-2.0, 3.0, 3), (0.0, 2.0, 0), (1.5, -2.0, -3),
                 (10.0, 400.0, 2), (0.0, -1.0, 1), (math.inf, 0.0, 2), (math.nan, 0.0, 1))


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


def math_functions(x: float, y: float):
    return (math.sqrt(x), math.exp(x), math.log(x), math.log2(x), math.log10(x),
            math.log1p(x), math.expm1(x), math.sin(x), math.cos(x), math.tan(x),
            math.atan(x), math.sinh(x), math.cosh(x), math.tanh(x), math.asinh(x),
            math.erf(x), math.erfc(x), math.atan2(y, x), math.fmod(x, y), math.pow(x, y),
            math.hypot(x, y), math.copysign(x, y), math.fabs(y), math.degrees(x),
            math.radians(y), math.isnan(x), math.isinf(y), math.isfinite(x))


def test_math_functions_are_bitwise_cpython():
    rng = np.random.default_rng(7)
    calls = [(float(x), float(y)) for x, y in rng.uniform(0.01, 20.0, size=(20, 2))]
    check_native(math_functions, *calls, (1.0, -3.5), (0.5, 1e-300))


def test_math_domain_and_range_errors_raise_like_cpython():
    check_native(math_functions, (-1.0, 2.0), (0.0, 1.0), (1000.0, 1.0), (math.nan, 1.0),
                 (math.inf, 1.0), (2.0, 0.0))


def conversions(x: float, n: int, flag: bool):
    return int(x), float(n), bool(x), bool(n), math.floor(x), math.ceil(x), round(x), \
        int(flag) + n, float(flag), abs(flag), flag + flag


def test_casts_follow_python():
    check_native(conversions, (2.7, 3, True), (-2.7, 0, False), (2.5, -5, True),
                 (-0.5, 1, False), (3.5, 7, True), (1e18, 2, True))


def test_casts_of_infinity_and_nan_raise():
    check_native(conversions, (math.inf, 1, True), (-math.inf, 1, True),
                 (math.nan, 1, False))


# ---------------------------------------------------------------------------- control flow


def control(n: int, m: int | None) -> int:
    t = 0
    for i in range(n, -3, -2):
        if i == 7:
            continue
        if i < 0 and t > 50:
            break
        t += i
    if m is not None:
        t += m
    k = 0
    while True:
        k += 1
        if k * k > t:
            return k
    return -1


def test_break_continue_early_return_and_optional():
    check_native(control, (20, None), (11, 5), (0, -2), (-5, None), (100, 3))


def ranges(a: int, b: int, s: int) -> int:
    total = 0
    for i in range(a, b, s):
        total = total * 31 + i
    return total


def test_range_with_any_step():
    check_native(ranges, (0, 10, 1), (10, 0, -1), (3, 30, 7), (30, 3, -7), (5, 5, 1),
                 (INT64_MIN, INT64_MAX, 2 ** 62), (INT64_MAX, INT64_MIN, -(2 ** 62)),
                 (-4, 9, 3), (0, 10, 0))


def asserts_and_raises(n: int) -> int:
    assert n != 3, "n must not be 3"
    if n > 10:
        raise ValueError("too large")
    s = 0
    for i in range(n):
        s += 10 // (i - 4)
    return s


def test_exceptions_keep_their_class_and_point_at_the_script():
    check_native(asserts_and_raises, (2,), (3,), (11,), (5,))
    run, _ = native(asserts_and_raises)
    with pytest.raises(AssertionError) as info:
        run(3)
    assert "n must not be 3" in str(info.value) and "<--- HERE" in str(info.value)
    assert 'assert n != 3, "n must not be 3"' in str(info.value)
    with pytest.raises(ZeroDivisionError, match="integer division or modulo by zero") as info:
        run(5)
    assert "10 // (i - 4)" in str(info.value) and str(info.value).count("<--- HERE") == 1


def printing(n: int) -> int:
    s = 0
    for i in range(n):
        if i % 3 == 0:
            print("step", i)
        s += i
    return s


def test_print_inside_a_native_loop(capsys):
    check_native(printing, (7,))
    assert capsys.readouterr().out == "step 0\nstep 3\nstep 6\n" * 2


# ---------------------------------------------------------------------------- arrays


def elements(x: tsjit.Tensor, i: int):
    return x[i], x[-1], len(x), x.size, x.shape[0]


def test_element_reads_keep_numpy_types():
    for dtype in ("bool", "int8", "uint16", "int32", "int64", "uint64", "float32", "float64"):
        x = (np.arange(5) * 37 % 11).astype(dtype)
        check_native(elements, (x, 2), (x, -5), (x, 5), (x, -6))


def matrix(a: tsjit.Tensor, i: int, j: int):
    a[i, j] += 1
    a[i, -1] = a[-1, j] * 2
    return a[i, j], a.shape[1], a.shape[-1], a.size


def test_two_dimensional_reads_and_writes():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    check_native(matrix, (a, 1, 2), (a.astype(np.int32), 0, 0), (a.T, 2, 1),
                 (a[:, ::2], -1, -2), (a, 3, 0), (a, 0, -5))


def stores(out: tsjit.Tensor, v: int, f: float, flag: bool):
    out[0] = v
    out[1] = f
    out[2] = flag
    return out


def test_stores_convert_as_numpy_setitem():
    for dtype in ("int8", "uint8", "int32", "int64", "float32", "float64", "bool"):
        out = np.zeros(3, dtype)
        check_native(stores, (out, 5, 2.7, True), (out, -1, -2.7, False),
                     (out, 300, 1e20, True), (out, 2 ** 60, math.nan, False),
                     (out, 1, math.inf, True))


def read_only(x: tsjit.Tensor) -> int:
    for i in range(x.shape[0]):
        x[i] = i
    return 0


def test_writing_a_read_only_array_raises_as_numpy():
    x = np.zeros(3)
    x.flags.writeable = False
    run, regions = native(read_only)
    with pytest.raises(ValueError, match="read-only"):
        run(x)
    assert regions[0].stats()["interpreted_runs"] == 1


def dot(x: tsjit.Tensor, w: tsjit.Tensor):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * w[i]
    return s


def test_accumulator_is_a_python_float_until_it_meets_an_element():
    x = np.array([0.5, 1.5, -2.0, 4.0])
    check_native(dot, (x, x), (x.astype(np.float32), x.astype(np.float32)), (x[:0], x[:0]),
                 (np.arange(4), np.arange(4) - 2), (x.astype(np.int32), x))


def divided_accumulator(x: tsjit.Tensor, d: float):
    s = 0.0
    for i in range(x.shape[0]):
        s = s / d + x[i]
    return s


def test_each_kind_of_an_accumulator_has_its_own_fallbacks():
    """s is a Python float in the first iteration (`/ 0.0` raises ZeroDivisionError) and a
    NumPy scalar afterwards (`/ 0.0` warns and gives inf)."""
    x = np.arange(3.0)
    check_native(divided_accumulator, (x, 2.0), (x, 0.0), (x[:1], 0.0), (x[:0], 0.0),
                 (x.astype(np.float32), 0.0))


def numpy_scalar_ops(x: tsjit.Tensor, i: int):
    a = x[i]
    b = x[i + 1]
    return a + b, a - b, a * b, a / b, a // b, a % b, -a, abs(a), a < b, a == 1, a + 1, \
        a * 2.5, float(a), int(a), bool(a)


def test_numpy_scalar_arithmetic_follows_numpy():
    for dtype in ("int8", "int32", "uint8", "int64", "float32", "float64"):
        x = np.array([3, 5, 0, 7, 100, 100], dtype=dtype)
        check_native(numpy_scalar_ops, (x, 0), (x, 1), (x, 3), (x, 4))


def numpy_scalar_conversions(x: tsjit.Tensor, i: int):
    v = x[i]
    return int(v), float(v), bool(v), math.floor(v), math.ceil(v), math.sqrt(abs(v)), \
        math.trunc(v)


def test_numpy_scalars_convert_as_cpython_converts_them():
    for dtype in ("bool", "int32", "uint64", "float32", "float64"):
        x = np.array([0, 1, 2 ** 64 - 1 if dtype == "uint64" else 3, 2.5], dtype=dtype)
        check_native(numpy_scalar_conversions, (x, 0), (x, 1), (x, 2), (x, 3))


def test_numpy_warnings_and_errstate_are_numpy_own():
    x = np.array([100, 100, 0], dtype=np.int8)
    run, regions = native(numpy_scalar_ops)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(x, 0)
    messages = {str(w.message) for w in caught}
    assert "overflow encountered in scalar add" in messages
    with np.errstate(all="raise"), pytest.raises(FloatingPointError):
        run(x, 0)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run(x, 0)[0] == np.int8(-56)
    assert regions[0].stats()["native_calls"] == 3


def mandelbrot(out: tsjit.Tensor, x0: float, y0: float, step: float, max_iter: int) -> int:
    total = 0
    for r in range(out.shape[0]):
        for c in range(out.shape[1]):
            cr, ci = x0 + c * step, y0 + r * step
            zr = zi = 0.0
            k = 0
            while k < max_iter and zr * zr + zi * zi <= 4.0:
                zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
                k += 1
            out[r, c] = k
            total += k
    return total


def test_mandelbrot_matches_python():
    check_native(mandelbrot, (np.zeros((9, 14), np.int32), -2.0, -1.1, 0.17, 60),
                 (np.zeros((2, 3), np.int8), -0.75, 0.1, 0.5, 200))


def list_reads(values: list[int], weights: list[float], flags: list[bool], limit: int):
    total = 0
    weighted = 0.0
    for v in values:
        if v % 3 == 0:
            continue
        total += v
        if total > limit:
            break
    for i in range(len(weights)):
        if flags[i % len(flags)]:
            weighted += weights[i] * values[-1 - i]
    return total, weighted, weights[limit]


def test_lists_of_numbers_are_read_natively():
    check_native(list_reads, ([1, 2, 3, 4, 5, 6, 7, 8], [0.5, -1.5, 2.0], [True, False], 1),
                 ([3, 6, 9, 2], [1.0, 2.0, 3.0, 4.0], [False], 2),
                 ([10, -20, 31, 4], [0.25], [True], 0),
                 ([1, 2], [1.0], [True], 5),                  # IndexError
                 ([1, 2], [1.0], [], 0))                      # ZeroDivisionError (i % 0)


def test_lists_with_other_items_run_in_the_interpreter():
    run, (region,) = native(list_reads)
    for args in (([True, 2], [1.0, 2.0], [True], 1), ([2 ** 70, 5], [1.0], [True], 0),
                 ([1, 2], [1, 2.5], [True], 1)):
        assert_same(run(*args), list_reads(*args))
    assert region.stats()["interpreted_runs"] == 3


# ---------------------------------------------------------------------------- guards


def add(a: int, b: int) -> int:
    return a + b


def test_guards_route_other_kinds_to_new_variants_or_the_interpreter():
    run, (region,) = native(add)
    assert run(2, 3) == 5
    assert_same(run(2.5, 1), 3.5)                 # a float argument: another variant
    assert_same(run(True, True), 2)
    assert_same(run(2 ** 70, 1), 2 ** 70 + 1)     # a bignum: the interpreter
    stats = region.stats()
    assert stats["specializations"] == 3 and stats["interpreted_runs"] == 1
    assert stats["guard_failures"] == 3 and stats["native_calls"] == 3


def test_the_variant_budget_is_bounded():
    run, (region,) = native(add)
    for a in (1, 1.5, True, np.float32(2), np.int16(3), np.float64(4), np.uint8(5)):
        assert_same(run(a, 1), a + 1)
    assert region.stats()["specializations"] == 4
    assert region.stats()["interpreted_runs"] == 3


# ---------------------------------------------------------------------------- the public API


def scripted_add(a: int, b: int) -> int:
    return a + b


def test_a_whole_native_function_is_called_straight_into_native_code():
    f = tsjit.script(scripted_add)
    assert f(1, 2) == 3                                # compiles; later calls are direct
    assert type(f).__call__ is not tsjit.ScriptFunction.__call__
    assert_same(f(2, 3), 5)
    assert_same(f(a=4, b=5), 9)                        # keywords take the normal path
    assert_same(f(True, True), 2)                      # so do other kinds (bool)
    with pytest.raises(TypeError, match="argument 'a'"):
        f("x", 1)                                      # with the normal argument check
    # every call that passed the argument checks counts, the direct ones included
    assert f.stats()["calls"] == 4 and isinstance(f, tsjit.ScriptFunction)


def test_disabling_native_code_drops_the_direct_entry():
    f = tsjit.script(scripted_add)
    f(1, 2)
    try:
        tsjit.set_native_enabled(False)
        assert type(f) is tsjit.ScriptFunction and f(2, 2) == 4
        assert "NativeCall" not in str(f.graph_for(1, 1))
    finally:
        tsjit.set_native_enabled(True)
    assert f(3, 3) == 6 and "NativeCall" in str(f.graph_for(1, 1))


def test_inspection_shows_native_regions():
    f = tsjit.script(scale_then_count)
    x = np.arange(5.0)
    graph = str(f.graph_for(x, 2.0))
    assert "prim::NativeCall" in graph and "with prim::NativeCall" in graph
    llvm = f.inspect_llvm(x, 2.0)
    assert "Array(float64, rank=1" in llvm and "define ptr @tsjit_native_" in llvm
    assert "ret" in f.inspect_asm(x, 2.0)
    assert f.stats()["kernel_launches"] >= 1
