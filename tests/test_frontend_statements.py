"""Statements in script code: every assignment form (tuple patterns, starred targets,
augmented and annotated assignment, subscripts), raise, assert, del, pass, print and
with — results, exceptions and argument mutation must match Python."""
from __future__ import annotations

import numpy as np
import pytest
from _differential import check

import tsjit

# ---- assignment forms


def tuple_patterns(t: tuple[int, tuple[str, float]]) -> tuple[float, str, int]:
    a, (s, f) = t
    x = y = a * 2
    (p, q), r = (x, y), s
    p, q = q, p + 1
    return f + p, r, q


def test_tuple_patterns_chained_and_swapping_assignments():
    check(tuple_patterns, ((1, ("a", 2.5)),), ((-3, ("", 0.0)),))


def starred_targets(xs: list[int]) -> tuple[int, list[int], int]:
    first, *middle, last = xs
    return first, middle, last


def starred_tuple(t: tuple[int, str, float, bool]):
    a, *rest = t
    *init, z = t
    return a, rest, init, z


def starred_empty_middle(t: tuple[int, str]):
    a, *rest, b = t
    return a, rest, b


def starred_front(xs: list[int]) -> tuple[list[int], int]:
    *init, last = xs
    return init, last


def test_starred_targets_on_lists_and_tuples():
    check(starred_targets, ([1, 2],), ([1, 2, 3, 4],), ([1],))
    check(starred_tuple, ((1, "a", 2.0, True),))
    check(starred_front, ([5],), ([1, 2, 3],), ([],))
    check(starred_empty_middle, ((1, "a"),))


def list_unpack(xs: list[int]) -> int:
    a, b, c = xs
    return a * 100 + b * 10 + c


def test_list_unpack_checks_length_at_run_time():
    check(list_unpack, ([1, 2, 3],), ([1, 2],), ([1, 2, 3, 4],))


def augmented(a: int, f: float, s: str, xs: list[int]) -> tuple[int, float, str, list[int]]:
    a += 3
    a -= 1
    a *= -2
    a //= 3
    a %= 7
    a **= 2
    a <<= 2
    a >>= 1
    a |= 8
    a &= 0xFF
    a ^= 5
    f /= 4.0
    f += a
    s += "!"
    s *= 2
    xs += [a]
    xs *= 2
    return a, f, s, xs


def test_augmented_assignment_every_operator():
    check(augmented, (1, 2.0, "x", [1]), (-8, -0.5, "", []))


def aug_list_aliases(xs: list[int]) -> list[int]:
    ys = xs
    ys += [9]
    return xs


def aug_array_in_place(x: np.ndarray) -> np.ndarray:
    y = x
    y += 1
    y *= 2
    return x


def aug_int_does_not_alias(a: int) -> tuple[int, int]:
    b = a
    b += 1
    return a, b


def test_augmented_assignment_mutates_lists_and_arrays_in_place():
    check(aug_list_aliases, ([1],), ([],))
    check(aug_array_in_place, (np.arange(4.0),), (np.arange(3, dtype=np.int32),))
    check(aug_int_does_not_alias, (4,))


def aug_subscripts_and_attributes(xs: list[int], d: dict[str, float], x: np.ndarray):
    xs[0] += 5
    xs[-1] *= 2
    d["a"] -= 0.5
    x[1:3] += 10.0
    x[0] **= 2
    return xs, d, x


def test_augmented_assignment_to_subscripts():
    check(aug_subscripts_and_attributes, ([1, 2, 3], {"a": 1.0}, np.arange(4.0)),
          ([7], {"b": 1.0}, np.arange(4.0)))


def annotated(n: int) -> tuple[list[int], dict[str, list[float]], int | None, float]:
    xs: list[int] = []
    d: dict[str, list[float]] = {}
    maybe: int | None = None
    total: float = 0.0
    for i in range(n):
        xs.append(i)
        d[str(i)] = [float(i)]
        maybe = i
        total += i
    return xs, d, maybe, total


def test_annotated_assignments_type_empty_containers_and_widen():
    check(annotated, (0,), (3,))


def subscript_assignment(xs: list[int], d: dict[int, str], x: np.ndarray):
    xs[0] = 5
    xs[-1] = 7
    d[3] = "three"
    x[0, 1] = -1.0
    x[1] = 2.0
    x[:, 2] = np.array([8.0, 9.0])
    return xs, d, x


def test_subscript_assignment_mutates_arguments():
    check(subscript_assignment, ([1, 2, 3], {1: "one"}, np.zeros((2, 3))))


def out_of_range_assignment(xs: list[int], i: int) -> list[int]:
    xs[i] = 0
    return xs


def test_subscript_assignment_out_of_range_raises_index_error():
    check(out_of_range_assignment, ([1, 2], 5), ([1, 2], -3), ([1, 2], -2))


# ---- raise / assert


def raises(kind: int) -> int:
    if kind == 0:
        raise ValueError("zero")
    elif kind == 1:
        raise KeyError("one")
    elif kind == 2:
        raise IndexError
    elif kind == 3:
        raise RuntimeError(f"kind {kind}")
    elif kind == 4:
        raise TypeError("t")
    elif kind == 5:
        raise ZeroDivisionError()
    return kind


def test_raise_each_exception_class():
    check(raises, *[(k,) for k in range(7)])


def always_raises(kind: int) -> int:
    if kind > 0:
        raise ValueError("positive")
    else:
        raise KeyError("other")


def raises_under_constant_condition(x: int):
    if True:
        raise IndexError("always")
    return x


def test_functions_whose_every_path_raises():
    check(always_raises, (1,), (0,))
    check(raises_under_constant_condition, (3,))


def raise_in_loop(xs: list[int]) -> int:
    total = 0
    for x in xs:
        if x < 0:
            raise ValueError("negative")
        total += x
    return total


def test_raise_inside_a_loop():
    check(raise_in_loop, ([1, 2],), ([1, -1, 2],))


def asserts(a: int, b: int | None) -> int:
    assert a >= 0
    assert a < 100, "too big"
    assert b is not None, f"b missing for {a}"
    return a + b


def test_assert_with_and_without_message():
    check(asserts, (1, 2), (-1, 2), (200, 1), (5, None))


def test_assert_message_is_the_formatted_expression():
    f = tsjit.script(asserts)
    with pytest.raises(AssertionError, match="b missing for 7"):
        f(7, None)
    with pytest.raises(AssertionError, match="too big"):
        f(100, 1)


def test_raise_message_reaches_the_caller():
    f = tsjit.script(raises)
    with pytest.raises(RuntimeError, match="kind 3"):
        f(3)


# ---- del, pass, print, with


def deletes(xs: list[int], d: dict[str, int]) -> tuple[list[int], dict[str, int]]:
    del xs[0]
    del xs[-1]
    del d["a"]
    tmp = 5
    del tmp
    return xs, d


def test_del_of_list_items_dict_keys_and_names():
    check(deletes, ([1, 2, 3, 4], {"a": 1, "b": 2}))
    check(deletes, ([1], {"a": 1}))         # IndexError on the second del
    check(deletes, ([1, 2], {"b": 1}))      # KeyError


def del_slice(xs: list[int]) -> list[int]:
    del xs[1:3]
    return xs


def test_del_of_a_list_slice():
    check(del_slice, ([1, 2, 3, 4],), ([1],))


def passes(n: int) -> int:
    if n > 0:
        pass
    else:
        pass
    for _ in range(n):
        pass
    while False:
        pass
    return n


def test_pass_everywhere():
    check(passes, (0,), (3,))


def printer(a: int, f: float, s: str, xs: list[int], x: np.ndarray) -> None:
    print("values:", a, f, s)
    print(xs, (a, s), {"k": a})
    print(x)
    print()


def test_print_writes_what_python_prints(capsys):
    x = np.arange(3.0)
    printer(3, 2.5, "hi", [1, 2], x)
    want = capsys.readouterr().out
    tsjit.script(printer)(3, 2.5, "hi", [1, 2], x)
    assert capsys.readouterr().out == want


class Recorder:
    def __init__(self, log: list[str]):
        self.log = log
        self.depth = 0

    def __enter__(self) -> int:
        self.depth += 1
        self.log.append("enter")
        return self.depth

    def __exit__(self, exc_type: int | None, exc: int | None, tb: int | None) -> None:
        self.depth -= 1
        self.log.append("exit")


def with_statement(log: list[str], n: int) -> tuple[list[str], int]:
    r = Recorder(log)
    with r as depth:
        log.append(f"body {depth}")
        for i in range(n):
            with r:
                log.append(f"inner {i} {r.depth}")
    return log, r.depth


def with_return(log: list[str], early: bool) -> int:
    r = Recorder(log)
    with r:
        if early:
            return 1
        log.append("late")
    return 2


def test_with_statement_on_a_script_class():
    check(with_statement, ([], 0), ([], 2))


def test_with_exit_runs_on_early_return():
    check(with_return, ([], True), ([], False))
