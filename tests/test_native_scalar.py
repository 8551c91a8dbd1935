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


def tally(xs: list[int]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for v in xs:
        counts[v] = counts.get(v, 0) + 1
    return counts


def test_a_loop_filling_a_dict_is_told_from_its_types_without_the_code_generator(
        monkeypatch):
    """A loop that reads a dict cannot be native, as its types say: the pass does not ask
    the scalar code generator's rules (loading it took ~50 ms of a first call that waits
    for its compile), while a loop of numbers beside it still asks and is native."""
    from tsjit.passes import lower_native_regions as module
    asked = []
    rule_for = module.rule_for
    monkeypatch.setattr(module, "rule_for", lambda node: asked.append(node) or rule_for(node))
    graph = tsjit.script(tally).graph.copy()
    lower_native_regions(graph)
    assert not asked and all(n.kind != "prim::NativeCall" for n in graph.nodes())
    graph = tsjit.script(collatz).graph.copy()
    lower_native_regions(graph)
    assert asked and [n.kind for n in graph.block.nodes] == ["prim::NativeCall"]


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
