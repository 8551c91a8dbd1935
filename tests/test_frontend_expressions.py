"""Expressions in script code behave exactly as in Python (values, types, exceptions):
operators on every scalar type and arrays, comparison chains, membership and identity,
short-circuit boolean operators, ternaries, subscripts and slices, calls, methods,
comprehensions, f-strings and casts."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from _differential import check

INTS = [0, 1, -1, 7, -7, 3, 2**31 - 1, -(2**31) + 3]     # products stay within int64
FLOATS = [0.0, -0.0, 1.5, -2.25, 1e300, float("inf"), float("nan"), 3.0]


def pairs(values):
    return list(itertools.product(values, repeat=2))


# ---- arithmetic


def int_arith(a: int, b: int) -> tuple[int, int, int, float, int, int, int, int]:
    return a + b, a - b, a * b, a / b, a // b, a % b, -a, +b


def float_arith(a: float, b: float) -> tuple[float, float, float, float, float, float]:
    return a + b, a - b, a * b, a / b, a // b, a % b


def mixed_arith(a: int, b: float) -> tuple[float, float, float, float, float]:
    return a + b, b - a, a * b, a / b, b // a


def bit_ops(a: int, b: int) -> tuple[int, int, int, int, int, int]:
    return a & b, a | b, a ^ b, ~a, a << (b & 15), a >> (b & 15)


def bool_arith(a: bool, b: bool) -> tuple[int, int, bool, bool, int, int]:
    return a + b, a * 3, a & b, a | b, -a, ~b


def int_pow(a: int, b: int) -> int:
    return a ** abs(b)



def float_pow(a: float, b: float) -> float:
    return a ** b


def test_int_arithmetic_including_division_by_zero():
    check(int_arith, *pairs(INTS))


def test_float_arithmetic_with_special_values():
    check(float_arith, *pairs(FLOATS))


def test_mixed_int_float_arithmetic():
    check(mixed_arith, *itertools.product(INTS, FLOATS))


def test_bitwise_and_shift_operators():
    check(bit_ops, *pairs([0, 1, -1, 5, -12, 255, 2**33]))


def test_bool_arithmetic_promotes_to_int_like_python():
    check(bool_arith, *pairs([True, False]))


def test_powers():
    check(int_pow, *pairs([0, 1, -1, 2, -3, 5]))
    check(float_pow, *pairs([0.0, 1.5, 0.5, 2.0]), (-2.0, 2.0), (-2.0, -3.0), (0.0, -1.0))


def test_float_power_with_a_complex_result():
    check(float_pow, (1.0, 1.0), (-2.0, 1.5))


def array_arith(x: np.ndarray, y: np.ndarray, s: float, k: int):
    return (x + y) * s - x / (y + 1.5) + k, x // 2, x % 3, -x, x ** 2, x @ y.T


def test_array_operators_with_python_scalars():
    for dtype in (np.float32, np.float64, np.int32, np.int64):
        x = np.arange(6, dtype=dtype).reshape(2, 3)
        y = (np.arange(6, dtype=dtype).reshape(2, 3) - 2)
        check(array_arith, (x, y, 0.5, 3), (x, y, -1.0, 0))


def array_compare(x: np.ndarray, t: float):
    return x < t, x >= t, x == t, x != t, (x > t) & (x < t + 2), (x < 0) | (x > t), ~(x > t)


def test_array_comparisons_and_logical_operators():
    x = np.array([-1.0, 0.0, 1.0, 2.5, np.nan], dtype=np.float32)
    check(array_compare, (x, 0.0), (x, 1.0))


# ---- comparisons, membership, identity


def chain(a: int, b: int, c: int) -> tuple[bool, bool, bool, bool]:
    return a < b < c, a <= b == c, a != b != c, a < b > c >= a


def test_comparison_chains():
    check(chain, *itertools.product([-1, 0, 1, 2], repeat=3))


def count_calls(log: list[int], v: int) -> int:
    log.append(v)
    return v


def chain_evaluates_each_operand_once(log: list[int], a: int) -> bool:
    return count_calls(log, 0) < count_calls(log, a) < count_calls(log, 5)


def test_chain_short_circuits_and_evaluates_operands_once():
    check(chain_evaluates_each_operand_once, ([], 3), ([], -1), ([], 9))


def str_compare(a: str, b: str) -> tuple[bool, bool, bool, bool]:
    return a < b, a == b, a >= b, a != b


def test_string_comparisons():
    check(str_compare, *pairs(["", "a", "ab", "b", "B"]))


def membership(x: int, xs: list[int], d: dict[str, int], s: str) -> tuple[bool, ...]:
    return x in xs, x not in xs, s in d, s not in d, s in "hello world", (x, 1) in [(1, 1)]


def test_in_and_not_in_on_lists_dicts_strings_tuples():
    check(membership, (1, [1, 2], {"a": 1}, "a"), (3, [], {}, "lo w"), (2, [5], {"b": 2}, "z"))


def identity(x: int | None, y: list[int] | None) -> tuple[bool, bool, bool]:
    return x is None, y is not None, x is not None and y is None


def test_is_and_is_not_none():
    check(identity, (None, None), (1, None), (None, [1]), (0, []))


def float_compare(a: float, b: float) -> tuple[bool, bool, bool, bool, bool]:
    return a < b, a <= b, a == b, a > b, a != b


def test_float_comparisons_with_nan_and_zero_signs():
    check(float_compare, *pairs([0.0, -0.0, 1.0, float("nan"), float("-inf")]))


def int_float_compare(a: int, b: float) -> tuple[bool, bool, bool]:
    return a == b, a < b, b >= a


def test_int_float_comparisons():
    check(int_float_compare, *itertools.product([0, 1, 2**53 + 1], [0.0, 1.0, 2.0**53]))


# ---- boolean operators


def bool_ops(a: bool, b: bool, c: bool) -> tuple[bool, bool, bool, bool]:
    return a and b, a or b, not a, a and b or c


def int_or(a: int, b: int) -> tuple[int, int]:
    return a or b, a and b


def str_or_default(s: str) -> str:
    return s or "default"


def list_or(xs: list[int], ys: list[int]) -> list[int]:
    return xs or ys


def test_boolean_operators_on_bools():
    check(bool_ops, *itertools.product([True, False], repeat=3))


def test_and_or_return_an_operand_like_python():
    check(int_or, *pairs([0, 1, -2, 5]))
    check(str_or_default, ("",), ("x",))
    check(list_or, ([], [1]), ([2], [3]), ([], []))


def side_effect(log: list[int], v: int) -> bool:
    log.append(v)
    return v > 0


def short_circuit(log: list[int], a: int, b: int) -> bool:
    return side_effect(log, a) and side_effect(log, b) or side_effect(log, -a - b)


def test_and_or_short_circuit():
    check(short_circuit, *[([], a, b) for a, b in pairs([-1, 0, 2])])


def guarded_index(xs: list[int], i: int) -> bool:
    return i < len(xs) and xs[i] > 0


def test_short_circuit_protects_the_right_operand():
    check(guarded_index, ([1, -2], 0), ([1, -2], 1), ([1, -2], 2), ([], 0))


def truthiness(i: int, f: float, s: str, xs: list[int], d: dict[str, int]) -> list[bool]:
    return [not i, not f, not s, not xs, not d, bool(i), bool(f), bool(s)]


def test_truthiness_of_scalars_and_containers():
    check(truthiness, (0, 0.0, "", [], {}), (2, -0.5, "a", [0], {"a": 1}))


# ---- ternary


def ternary(a: int, b: float) -> float:
    return float(a) if a > b else b


def nested_ternary(a: int) -> str:
    return "neg" if a < 0 else "zero" if a == 0 else "pos"


def ternary_optional(x: int | None) -> int:
    return x + 1 if x is not None else -1


def test_ternary_expressions_unify_branch_types():
    check(ternary, *itertools.product([0, 3, -2], [1.5, -3.0]))
    check(nested_ternary, (-5,), (0,), (9,))
    check(ternary_optional, (None,), (4,))


def ternary_only_evaluates_taken_branch(xs: list[int]) -> int:
    return xs[0] if len(xs) > 0 else 0


def test_ternary_evaluates_only_the_taken_branch():
    check(ternary_only_evaluates_taken_branch, ([],), ([7],))


# ---- subscripts and slices


SLICES = [(None, None, None), (1, None, None), (None, -1, None), (None, None, -1),
          (-1, 0, -1), (4, 1, -2), (None, None, 2), (-100, 100, 3), (2, 2, None),
          (5, None, -3), (0, 10, -1)]


def list_slice(xs: list[int], a: int | None, b: int | None, c: int | None) -> list[int]:
    return xs[a:b:c]


def str_slice(s: str, a: int | None, b: int | None, c: int | None) -> str:
    return s[a:b:c]


def array_slice(x: np.ndarray, a: int | None, b: int | None, c: int | None):
    return x[a:b:c]


def tuple_slices(t: tuple[int, int, int, int]) -> tuple[tuple[int, int], tuple[int, ...]]:
    return t[1:3], t[::-1]


def test_slices_with_negative_and_missing_bounds():
    xs = [0, 1, 2, 3, 4, 5]
    check(list_slice, *[(xs, *s) for s in SLICES])
    check(str_slice, *[("abcdef", *s) for s in SLICES])
    check(array_slice, *[(np.arange(6.0), *s) for s in SLICES])
    check(tuple_slices, ((1, 2, 3, 4),))


def zero_step(xs: list[int]) -> list[int]:
    return xs[::0]


def test_zero_slice_step_raises_value_error():
    check(zero_step, ([1, 2],))


def indexing(xs: list[int], s: str, i: int) -> tuple[int, str]:
    return xs[i], s[i]


def test_indexing_with_negative_and_out_of_range_indices():
    check(indexing, *[([10, 20, 30], "abc", i) for i in (-4, -3, -1, 0, 2, 3)])


def array_indexing(x: np.ndarray, i: int, j: int):
    return x[i], x[i, j], x[:, j], x[i, 1:], x[-1, ::-1], x[..., j], x[None, i]


def test_array_multi_dimensional_indexing():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    check(array_indexing, (x, 0, 1), (x, -1, -2), (x, 3, 0), (x, 1, 4))


def tuple_index(t: tuple[int, str, float]) -> tuple[str, float, int]:
    return t[1], t[-1], t[0]


def test_tuple_indexing_with_constant_indices_keeps_element_types():
    check(tuple_index, ((1, "a", 2.5),))


def dict_index(d: dict[str, int], k: str) -> int:
    return d[k]


def test_dict_lookup_missing_key_raises_key_error():
    check(dict_index, ({"a": 1}, "a"), ({"a": 1}, "b"))


def nested_subscripts(xss: list[list[int]], d: dict[str, list[int]]) -> int:
    return xss[1][-1] + d["k"][0]


def test_nested_subscripts():
    check(nested_subscripts, ([[1], [2, 3]], {"k": [4]}))


# ---- calls and methods


def helper_add(a: int, b: int = 10) -> int:
    return a + b


def calls_with_defaults_and_keywords(x: int) -> tuple[int, int, int]:
    return helper_add(x), helper_add(x, 1), helper_add(b=2, a=x)


def test_calls_with_defaults_and_keywords():
    check(calls_with_defaults_and_keywords, (1,), (-5,))


def builtins_calls(xs: list[int], f: float) -> tuple[int, int, int, int, float, int, int]:
    return len(xs), min(xs), max(xs), abs(xs[0]), abs(f), sum(xs), round(f)


def test_builtin_functions():
    check(builtins_calls, ([3, -1, 2], -2.5), ([-7], 3.5), ([], 1.0))


def math_calls(x: float) -> tuple[float, float, float, int, int, bool]:
    return math.sqrt(abs(x)), math.exp(x / 10.0), math.log(abs(x) + 1.0), math.floor(x), \
        math.ceil(x), math.isnan(x)


def test_math_module_calls():
    check(math_calls, (2.5,), (-3.25,), (0.0,), ulps=4)


def math_domain(x: float) -> float:
    return math.sqrt(x)


def test_math_domain_error_is_value_error():
    check(math_domain, (-1.0,), (4.0,))


def str_methods(s: str) -> tuple[str, str, str, list[str], bool, bool, int, str, str]:
    return s.upper(), s.lower(), s.strip(), s.split(","), s.startswith("a"), \
        s.endswith("c"), s.find("b"), s.replace("a", "xy"), "-".join(s.split(","))


def test_string_methods():
    check(str_methods, ("a,b,c",), ("  B  ",), ("",))


def list_methods(xs: list[int]) -> tuple[list[int], int, int, int]:
    ys = xs.copy()
    ys.append(4)
    ys.insert(0, -1)
    ys.extend([5, 6])
    ys.reverse()
    last = ys.pop()
    ys.remove(4)
    ys.sort()
    return ys, last, ys.index(5), ys.count(5)


def test_list_methods():
    check(list_methods, ([1, 2, 3],), ([5, 5],), ([4],))


def dict_methods(d: dict[str, int]) -> tuple[list[str], list[int], int, int, int, bool]:
    e = d.copy()
    e.update({"z": 26})
    popped = e.pop("z")
    got = e.get("a", -1)
    dflt = e.setdefault("q", 3)
    return list(e.keys()), list(e.values()), popped, got, dflt, "q" in e


def test_dict_methods():
    check(dict_methods, ({"a": 1},), ({},), ({"q": 7, "b": 2},))


def array_methods(x: np.ndarray):
    return x.sum(), x.mean(axis=0), x.reshape(-1), x.T, x.astype(np.int64), x.max(), \
        x.shape, x.ndim, x.copy()


def test_array_methods_and_attributes():
    check(array_methods, (np.arange(6, dtype=np.float32).reshape(2, 3),),
          (np.linspace(-1.0, 1.0, 8).reshape(4, 2),))


def numpy_functions(x: np.ndarray):
    return np.exp(x), np.sqrt(np.abs(x)), np.where(x > 0, x, 0.0), np.sum(x, axis=1), \
        np.zeros((2, 3), dtype=np.int32), np.concatenate([x, x]), np.float32(2.5) * x


def test_numpy_functions_and_dtypes():
    check(numpy_functions, (np.arange(6, dtype=np.float32).reshape(2, 3) - 2,),
          (np.ones((1, 4)),), ulps=4)


# ---- comprehensions


def list_comps(xs: list[int]) -> tuple[list[int], list[int], list[tuple[int, int]], list[int]]:
    evens = [x * 2 for x in xs if x % 2 == 0]
    nested = [x + y for x in xs for y in range(x) if y != 1]
    pairs_ = [(i, x) for i, x in enumerate(xs) if i > 0 if x > 0]
    inner = [sum([y for y in range(x)]) for x in xs]
    return evens, nested, pairs_, inner


def test_list_comprehensions_nested_and_filtered():
    check(list_comps, ([0, 1, 2, 3, 4],), ([],), ([5, -3, 2],))


def dict_comps(keys: list[str], values: list[int]) -> tuple[dict[str, int], dict[int, str]]:
    by_key = {k: v for k, v in zip(keys, values) if v >= 0}
    by_value = {v: k + k for k, v in zip(keys, values)}
    return by_key, by_value


def test_dict_comprehensions():
    check(dict_comps, (["a", "b", "c"], [1, -2, 3]), ([], []), (["x", "x"], [1, 2]))


def comprehension_scope(xs: list[int]) -> tuple[int, list[int]]:
    x = 100
    ys = [x for x in xs]
    return x, ys


def test_comprehension_variables_do_not_leak():
    check(comprehension_scope, ([1, 2],), ([],))


def comprehension_over_strings_and_dicts(s: str, d: dict[str, int]) -> list[str]:
    return [c.upper() for c in s if c != "b"] + [k for k in d if d[k] > 1]


def test_comprehension_over_strings_and_dicts():
    check(comprehension_over_strings_and_dicts, ("abc", {"x": 2, "y": 1}), ("", {}))


def array_comprehension(x: np.ndarray) -> list[float]:
    return [float(v) for v in x]


def test_comprehension_over_an_array_iterates_its_first_axis():
    check(array_comprehension, (np.array([1.5, -2.0]),), (np.zeros(0),))


# ---- strings


def fstrings(a: int, f: float, s: str, b: bool) -> str:
    return f"{a} + {f} = {a + f}; s={s!r} b={b} pad={a:05d} fl={f:.3f} {{literal}}"


def test_f_strings_with_conversions_and_format_specs():
    check(fstrings, (1, 2.5, "x", True), (-42, 1e-9, "", False))


def describe_array(x, i: int) -> str:           # x unannotated: an array
    return f"{x} has {x[i]:.2f} at {i}; " + "%s / %d" % (x, x[i])  # noqa: UP031 (what is tested)


def test_arrays_format_into_f_strings_and_percent_formatting():
    # a str beside an unannotated parameter is no sign it was meant as a str when the
    # parameter is the value being formatted
    check(describe_array, (np.array([1.5, -2.0]), 1), (np.arange(3), 0), (np.arange(2), 5))


def str_ops(a: str, n: int) -> tuple[str, str, int, str]:
    return a + "!", a * n, len(a), a[::-1]


def test_string_operators():
    check(str_ops, ("ab", 3), ("", 0), ("xyz", -1))


# ---- casts


def casts(i: int, f: float, b: bool, s: str) -> tuple[float, int, bool, str, int, float, str]:
    return float(i), int(f), bool(i), str(f), int(b), float(s), str(b)


def test_casts_between_scalars():
    check(casts, (3, 2.7, True, "1.5"), (0, -2.7, False, "-inf"), (-1, 0.0, True, "x"))


def array_casts(x: np.ndarray) -> tuple[float, int, bool]:
    return float(x[0]), int(x[1]), bool(x[2])


def test_casts_of_array_elements():
    check(array_casts, (np.array([1.5, -2.5, 0.0]),), (np.array([3, 4, 5], dtype=np.int8),))


def walrus(xs: list[int]) -> tuple[int, int]:
    total = 0
    if (n := len(xs)) > 1:
        total = n * 2
    return n, total


def test_assignment_expression():
    check(walrus, ([1, 2, 3],), ([],))


@pytest.mark.parametrize("value", [0, 1, -3])
def test_python_constants_and_globals_are_captured(value):
    check(uses_globals, (value,))


SCALE = 3
OFFSET = 0.5
NAMES = ("a", "b")


def uses_globals(x: int) -> tuple[float, float, str, float]:
    return x * SCALE + OFFSET, math.pi * x, NAMES[1], math.inf


def dtype_among(x, y) -> tuple[bool, bool]:
    return x.dtype in (np.float64, y.dtype), x.dtype not in (y.dtype, np.int8)


def test_a_tuple_mixing_values_and_numpy_types_is_a_value():
    # (np.float64, y.dtype) was a compile-time-only tuple: "cannot be used as a value"
    check(dtype_among, (np.ones(2), np.ones(2, np.float32)),
          (np.ones(2, np.int8), np.ones(2, np.float32)), (np.ones(2, np.float32),) * 2)
