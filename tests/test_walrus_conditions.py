"""`:=` in an operand of `and`/`or`: a new variable it assigns is defined on the side of
the condition where that operand always ran (`if xs and (v := xs[0]) > 0:` defines v in
the body), in if statements, assert, conditional expressions, and while conditions,
whose body sees the value of the evaluation that let it in (also in native code). The
other side, and the code after a while loop, may not use it: a located error, as Python
could find it unbound there."""
from __future__ import annotations

import numpy as np
import pytest
from _differential import check
from test_errors import compile_error, underlined

import tsjit


def first_positive_doubled(xs: list[int]) -> int:
    if not (len(xs) > 0 and (first := xs[0]) > 0):
        return -1
    return first * 2


def third_divides(xs: list[int]) -> int:
    assert len(xs) > 2 and (third := xs[2]) != 0, "needs a third"
    return 100 // third


def head_or_zero(xs: list[int]) -> int:
    if len(xs) == 0 or (head := xs[0]) < 0:
        return 0
    return head + 1


def chained(xs: list[int]) -> int:
    if len(xs) > 1 and (a := xs[0]) > 0 and (b := xs[1] * a) > 3:
        return a + b
    return v * 3 if len(xs) > 0 and (v := xs[-1]) % 2 == 0 else 7


def assigned_again(xs: list[int]) -> int:
    if len(xs) > 2:
        if len(xs) > 0 and (v := xs[0]) > 0:     # v maybe unbound after this if
            pass
    if not (len(xs) > 1 and (v := xs[1]) > 0):   # ... and bound again here
        return -1
    return v


def weighted_prefix(xs: list[int]) -> int:
    i = 0
    total = 0
    while i < len(xs) and (v := xs[i]) > 0:
        total += v * (i + 1)
        i += 1
    return total


def pairs_until_large(rows: list[list[int]]) -> int:
    t = 0
    for r in rows:
        j = 0
        while j < len(r) and (x := r[j]) >= 0 and (y := x * 2) < 50:
            if x == 1:
                j += 1
                continue
            t += y + x
            j += 1
    return t


def finite_prefix(a: np.ndarray) -> float:
    i = 0
    acc = 0.0
    while i < a.shape[0] and (e := float(a[i])) == e:
        acc += e
        i += 1
    return acc


LISTS = [([],), ([3],), ([1, 2, 0, 4],), ([5, -1, 3, 200, 1],), ([-2],), ([9, 9, 9, 9],)]


@pytest.mark.parametrize("fn", [first_positive_doubled, third_divides, head_or_zero, chained,
                                assigned_again, weighted_prefix])
def test_a_variable_assigned_by_an_operand_is_defined_where_the_operand_ran(fn):
    scripted = tsjit.script(fn)
    for _ in range(3):          # profiling, then optimized (native) calls
        check(fn, *LISTS, scripted=scripted)


def test_while_conditions_that_assign_run_natively():
    scripted = check(pairs_until_large, ([[1, 2, 30], [-1, 5], [], [4, 4]],), ([],))
    check(pairs_until_large, ([[0, 0, 10]],), scripted=scripted)
    arrays = [(np.array([1.0, 2.5, np.nan, 4.0]),), (np.zeros(0),),
              (np.arange(5, dtype=np.float32),)]
    native = tsjit.script(finite_prefix)
    for _ in range(3):
        check(finite_prefix, *arrays, scripted=native)
    assert "prim::NativeCall" in str(native.graph_for(*arrays[0]))


def value_after_the_loop(xs: list[int]) -> int:
    i = 0
    while i < len(xs) and (v := xs[i]) > 0:
        i += 1
    return v


def value_on_the_other_side(xs: list[int]) -> int:
    if len(xs) > 0 and (v := xs[0]) > 0:
        return 1
    return v


def test_the_variable_is_undefined_where_the_operand_may_not_have_run():
    message = str(compile_error(value_after_the_loop))
    assert "may be undefined" in message and underlined(message) == ["v"]
    message = str(compile_error(value_on_the_other_side))
    assert "'v' is not defined in the false branch" in message
