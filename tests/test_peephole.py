"""The peephole pass on IR text: small integer powers become multiplications where the
values stay NumPy's, identities apply only where the result is the operand, and a break's
flag merges the Ifs that test it."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from _differential import assert_same, check
from _pass_harness import F32, count, run, run_original_and_optimized, same

from tsjit.passes import eliminate_dead_code, peephole
from tsjit.testing.filecheck import FileCheck

POWER = """graph(%x : {type}):
  %k : {exponent_type} = prim::Constant[value={exponent}]()
  %r : {result} = aten::pow(%x, %k)
  return (%r)
"""


@pytest.mark.parametrize("type_, exponent, result, muls", [
    (F32, 2, F32, 1),
    (F32, 3, F32, 0),       # x*x*x overflows where pow is finite (the fuser uses float64)
    (F32, 2.0, F32, 1),
    ("Tensor(dtype=float16, ndarray=1)", 3, "Tensor(dtype=float16, ndarray=1)", 2),
    ("Tensor(dtype=float64)", 3, "Tensor(dtype=float64)", 2),
    ("Tensor(dtype=int32, ndarray=1)", 3, "Tensor(dtype=int32, ndarray=1)", 2),
    ("int", 2, "int", 0),            # an int may hold a NumPy integer (see below)
    ("int", 3, "int", 0),
    (F32, 4, F32, 0),
    (F32, -2, F32, 0),
    ("Tensor", 2, "Tensor", 0),                              # dtype unknown
    ("Tensor(dtype=bool, ndarray=1)", 2, "Tensor", 0),        # bool ** 2 is int8
    ("Tensor(dtype=int64, ndarray=0)", 2, "Tensor", 0),       # scalars warn only in *
    ("Tensor(dtype=int64, ndarray=1)", 2.0, "Tensor", 0),     # int ** 2.0 is float64
    ("Tensor(dtype=complex64)", 2, "Tensor", 0),
    ("float", 2, "float", 0),                                 # CPython's ** is libm pow
    ("bool", 2, "int", 0),
    ("int", 2.0, "float", 0),
])
def test_small_integer_powers_become_multiplications(type_, exponent, result, muls):
    exponent_type = type(exponent).__name__
    graph = run(POWER.format(type=type_, exponent=exponent, exponent_type=exponent_type,
                             result=result), peephole, eliminate_dead_code)
    assert count(graph, "aten::mul") == muls
    assert count(graph, "aten::pow") == (muls == 0)
    if muls == 1:
        FileCheck().check(f"%r : {result} = aten::mul(%x, %x)").run(graph)
    elif muls == 2:
        FileCheck().check(f"%0 : {result} = aten::mul(%x, %x)") \
            .check(f"%r : {result} = aten::mul(%0, %x)").run(graph)


@pytest.mark.parametrize("type_, op, constant, on_right, result, rewritten", [
    # numbers never: a float value may hold an int (f(3) for x: float: 3 * 1.0 is 3.0),
    # an int value a bool (True + 0 is 1), and -0.0 + 0.0 is 0.0
    ("int", "aten::add", 0, True, "int", False),
    ("int", "aten::mul", 1, False, "int", False),
    ("int", "aten::floordiv", 1, True, "int", False),
    ("float", "aten::sub", 0.0, True, "float", False),
    ("float", "aten::mul", 1.0, False, "float", False),
    ("float", "aten::truediv", 1, True, "float", False),
    ("str", "aten::add", "", False, "str", True),
    ("str", "aten::add", "", True, "str", True),
    ("str", "aten::add", "a", True, "str", False),
    ("Tensor(dtype=float32)", "aten::mul", 1, True, "Tensor", False),  # x * 1 is a new array
])
def test_arithmetic_identities_only_where_the_result_is_the_operand(type_, op, constant,
                                                                    on_right, result, rewritten):
    operands = "%x, %k" if on_right else "%k, %x"
    literal = f'"{constant}"' if isinstance(constant, str) else constant
    graph = run(f"""graph(%x : {type_}):
  %k : {type(constant).__name__} = prim::Constant[value={literal}]()
  %r : {result} = {op}({operands})
  return (%r)
""", peephole)
    assert count(graph, op) == (not rewritten)
    if rewritten:
        FileCheck().check("return (%x)").run(graph)


@pytest.mark.parametrize("type_, rewritten", [("bool", True), ("int", False)])
def test_double_negation_of_a_bool(type_, rewritten):
    graph = run(f"""graph(%b : {type_}):
  %n : bool = aten::__not__(%b)
  %nn : bool = aten::__not__(%n)
  return (%nn)
""", peephole)
    assert count(graph, "aten::__not__") == (0 if rewritten else 2)


ADJACENT_IFS = """graph(%c : bool, %d : int):
  %one : int = prim::Constant[value=1]()
  %t : bool = prim::Constant[value=True]()
  %f : bool = prim::Constant[value=False]()
  %flag : bool, %a : int = prim::If(%c)
    block0():
      -> (%t, %d)
    block1():
      %d.1 : int = aten::add(%d, %one)
      -> (%f, %d.1)
  %b : int = prim::If(%flag)
    block0():
      -> (%a)
    block1():
      %e : int = aten::mul(%a, %a)
      prim::Print(%e)
      -> (%e)
  %r : Tuple[int, int] = prim::TupleConstruct(%a, %b)
  return (%r)
"""


def test_an_if_yielding_its_condition_is_the_condition_and_adjacent_ifs_merge():
    """The flag a `break` leaves (True in one arm, False in the other) is the If's own
    condition; the next If on it then tests the same value and joins the first, its arms
    reading the first's arm values (here `a`, the print staying in the else arm)."""
    graph = run(ADJACENT_IFS, peephole, eliminate_dead_code)
    assert count(graph, "prim::If") == 1
    FileCheck().check("%a : int, %b : int = prim::If(%c)").check("-> (%d, %d)") \
        .check("%d.1 : int = aten::add(%d, %one)").check("%e : int = aten::mul(%d.1, %d.1)") \
        .check("prim::Print(%e)").check("-> (%d.1, %e)").run(graph)


@pytest.mark.parametrize("cond", [True, False])
def test_merged_ifs_behave_as_the_original(cond):
    (expected, _), (actual, _) = run_original_and_optimized(ADJACENT_IFS, lambda: [cond, 3])
    assert actual == expected


def test_a_loop_with_break_carries_no_break_flag():
    """In the body the break flag is False (the loop stops once it is set), so the
    statements after `if k % d == 0: break` are one branch on the test itself."""
    from tsjit import script

    def first_divisor(k: int) -> int:
        d = 2
        while d * d <= k:
            if k % d == 0:
                break
            d += 1
        return d
    graph = script(first_divisor).graph
    (loop,) = [n for n in graph.nodes() if n.kind == "prim::Loop"]
    assert len(loop.blocks[0].params) == 2          # the iteration count and d
    assert sum(n.kind == "prim::If" for n in loop.blocks[0].nodes) == 1
    assert [script(first_divisor)(k) for k in (2, 9, 35, 97)] == [2, 3, 5, 10]


def special_values(dtype) -> np.ndarray:
    """Random values over the whole range of `dtype`, with zeros, infinities, NaN,
    subnormals and the overflow edge."""
    info = np.finfo(dtype)
    unsigned = f"u{info.bits // 8}"
    values = np.random.default_rng(7).integers(0, 2 ** info.bits, 20000, dtype=unsigned,
                                               endpoint=False).view(dtype)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, info.smallest_subnormal, info.tiny,
             info.max, -info.max, np.cbrt(info.max), np.sqrt(info.max)]
    return np.concatenate([values, np.array(edges, dtype=dtype)])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_powers_as_multiplications_keep_values(dtype):
    t = f"Tensor(dtype={np.dtype(dtype).name}, ndarray=1)"
    x = special_values(dtype)
    for exponent in (2, 3):
        text = POWER.format(type=t, exponent=exponent, exponent_type="int", result=t)
        with np.errstate(all="ignore"):
            (expected, _), (actual, _) = run_original_and_optimized(text, lambda: [x])
        assert actual.dtype == expected.dtype == dtype
        if exponent == 2:
            assert actual.tobytes() == expected.tobytes()       # NumPy's ** 2 is square
            continue
        # ** 3 is pow (within the contract's 4 ulp for transcendental functions)
        finite = np.isfinite(expected)
        assert np.array_equal(np.isfinite(actual), finite)
        assert np.array_equal(actual[~finite], expected[~finite], equal_nan=True)
        ints = f"i{np.dtype(dtype).itemsize}"
        ulps = np.abs(actual[finite].view(ints).astype(np.int64)
                      - expected[finite].view(ints).astype(np.int64))
        assert ulps.max() <= 4


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16])
def test_integer_array_powers_as_multiplications_wrap_alike(dtype):
    t = f"Tensor(dtype={np.dtype(dtype).name}, ndarray=1)"
    info = np.iinfo(dtype)
    x = np.random.default_rng(3).integers(info.min, info.max, 5000, dtype=dtype,
                                          endpoint=True)
    for exponent in (2, 3):
        text = POWER.format(type=t, exponent=exponent, exponent_type="int", result=t)
        (expected, _), (actual, _) = run_original_and_optimized(text, lambda: [x])
        assert same(actual, expected)


def square(x: int) -> int:
    return x ** 2


def test_an_int_that_holds_a_numpy_integer_squares_without_a_warning():
    # arguments pass unchanged, so an `int` may hold np.uint8(200): its `**` wraps
    # silently where the `x * x` the pass made of it warned (scalar multiply)
    scripted = check(square, (np.uint8(200),), (np.int64(2 ** 40),), (7,), (2 ** 40,))
    for value in (np.uint8(200), np.int64(2 ** 40)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert_same(scripted(value), square(value))
