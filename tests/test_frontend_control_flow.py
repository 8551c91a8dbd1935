"""Control flow in script code: if/elif/else, while and for loops over every iterable
(ranges of every step, lists that change while iterated, tuples unrolled, dicts, strings,
arrays, enumerate, zip), break/continue at any depth and return anywhere — results,
exceptions and argument mutation must match Python."""
from __future__ import annotations

import itertools

import numpy as np
from _differential import check

# ---- if / elif / else


def classify(a: int, b: float) -> str:
    if a < 0:
        r = "neg"
    elif a == 0:
        r = "zero"
    elif b > a:
        r = "small"
    else:
        r = "big"
    return r


def test_if_elif_else_chains():
    check(classify, *itertools.product([-1, 0, 2, 10], [1.5, 100.0]))


def implicit_truth(i: int, f: float, xs: list[int], s: str, x: np.ndarray) -> int:
    n = 0
    if i:
        n += 1
    if f:
        n += 2
    if xs:
        n += 4
    if s:
        n += 8
    if x:
        n += 16
    return n


def test_conditions_cast_ints_floats_containers_and_arrays_to_bool():
    check(implicit_truth, (0, 0.0, [], "", np.zeros(1)), (3, -0.1, [0], "x", np.ones(1)),
          (1, 1.0, [], "", np.ones(3)))


def if_defines_in_both(c: bool) -> int:
    if c:
        x = 1
    else:
        x = 2
    return x


def if_without_else_keeps_outer_value(c: bool, x: int) -> int:
    if c:
        x = x * 10
    return x


def test_variables_joined_after_if():
    check(if_defines_in_both, (True,), (False,))
    check(if_without_else_keeps_outer_value, (True, 3), (False, 3))


# ---- while


def collatz(n: int) -> int:
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def test_while_loop():
    check(collatz, (1,), (6,), (27,))


def while_with_break_continue(n: int) -> tuple[int, list[int]]:
    i = 0
    seen: list[int] = []
    while True:
        i += 1
        if i % 3 == 0:
            continue
        if i > n:
            break
        seen.append(i)
    return i, seen


def test_while_true_with_break_and_continue():
    check(while_with_break_continue, (0,), (7,), (10,))


def while_condition_has_side_effects(xs: list[int]) -> int:
    total = 0
    while xs and xs.pop() > 0:
        total += 1
    return total


def return_from_while_true(x: int) -> int:
    while True:
        x += 3
        if x > 10:
            return x


def raise_from_while_true(xs: list[int]) -> int:
    i = 0
    while True:
        if xs[i] < 0:              # IndexError when no element is negative
            return i
        i += 1


def while_true_in_a_branch(x: int) -> str:
    if x > 0:
        while True:
            x -= 1
            if x < 3:
                return "counted down"
    return "skipped"


def test_while_true_without_break_only_exits_by_return_or_raise():
    check(return_from_while_true, (0,), (11,))
    check(raise_from_while_true, ([1, -1],), ([1, 2],))
    check(while_true_in_a_branch, (5,), (-1,))


class Link:
    def __init__(self, value: int, next: Link | None):
        self.value = value
        self.next = next


def walk_from_a_non_optional_head(head: Link) -> int:
    total = 0
    node = head                     # a Link before the loop, Optional[Link] in it
    while node is not None:
        total += node.value
        node = node.next
    return total


def narrowed_after_the_loop(x: int | None, n: int) -> int:
    while x is None:                # left only once x is not None
        x = n
    return x + 1


def starts_none(n: int) -> int:
    x = None
    while x is None:
        x = n
    return x


def test_while_narrows_for_the_types_at_the_loop_head_and_after_it():
    check(walk_from_a_non_optional_head, (Link(1, Link(2, None)),), (Link(5, None),))
    check(narrowed_after_the_loop, (None, 3), (4, 3))
    check(starts_none, (7,))


def test_while_condition_reevaluated_with_side_effects():
    check(while_condition_has_side_effects, ([1, 2, -1, 3],), ([],), ([1, 1],))


# ---- for loops


def for_range(a: int, b: int, c: int) -> tuple[list[int], int]:
    out: list[int] = []
    last = -999
    for i in range(a, b, c):
        out.append(i)
        last = i
    return out, last


def test_for_over_range_every_sign_of_step():
    cases = [(0, 5, 1), (5, 0, -1), (5, 0, -2), (0, 5, 3), (0, 0, 1), (3, 1, 1), (-5, 5, 4),
             (0, 5, 0), (1, 1, 0), (10, -10, -7)]
    check(for_range, *cases)


def for_range_forms(n: int) -> tuple[int, int]:
    a = 0
    for i in range(n):
        a += i
    b = 0
    for i in range(2, n):
        b += i
    return a, b


def test_for_over_range_one_and_two_arguments():
    check(for_range_forms, (0,), (1,), (6,), (-3,))


def loop_variable_after_loop(n: int) -> int:
    i = -1
    for i in range(n):  # noqa: B007  (the last value is the point)
        pass
    return i


def test_loop_variable_keeps_last_value_or_previous_binding():
    check(loop_variable_after_loop, (0,), (4,))


def loop_variable_rebound_in_body(n: int) -> list[int]:
    out: list[int] = []
    for i in range(n):
        out.append(i)
        i = 100
    return out


def test_rebinding_the_loop_variable_does_not_change_iteration():
    check(loop_variable_rebound_in_body, (3,))


def for_containers(xs: list[float], t: tuple[int, str, float], d: dict[str, int],
                   s: str) -> tuple[float, str, list[str], str]:
    total = 0.0
    for v in xs:
        total += v
    parts = ""
    for item in t:
        parts += str(item) + ","
    keys: list[str] = []
    for k in d:
        keys.append(k + str(d[k]))
    letters = ""
    for ch in s:
        letters = ch + letters
    return total, parts, keys, letters


def test_for_over_lists_tuples_dicts_strings():
    check(for_containers, ([1.5, 2.5], (1, "a", 2.0), {"x": 1, "y": 2}, "abc"),
          ([], (0, "", -1.0), {}, ""))


def for_dict_views(d: dict[str, int]) -> tuple[list[str], list[int], int]:
    ks: list[str] = []
    vs: list[int] = []
    n = 0
    for k, v in d.items():
        ks.append(k)
        n += v
    for v in d.values():
        vs.append(v)
    for k in d.keys():
        n += len(k)
    return ks, vs, n


def test_for_over_dict_items_keys_values():
    check(for_dict_views, ({"ab": 1, "c": 2},), ({},))


def for_enumerate_zip(xs: list[int], names: list[str]) -> list[str]:
    out: list[str] = []
    for i, x in enumerate(xs):
        out.append(str(i * x))
    for i, name in enumerate(names, 10):
        out.append(name + str(i))
    for x, name in zip(xs, names):
        out.append(name * x)
    for i, (x, name) in enumerate(zip(xs, names)):
        out.append(f"{i}{x}{name}")
    for a, b, c in zip(xs, names, range(100)):
        out.append(f"{a}{b}{c}")
    return out


def test_for_over_enumerate_and_zip_of_unequal_lengths():
    check(for_enumerate_zip, ([1, 2, 3], ["a", "b"]), ([], ["z"]), ([2], []))


def for_array_rows(x: np.ndarray) -> list[float]:
    out: list[float] = []
    for row in x:
        out.append(float(row.sum()))
    return out


def test_for_over_an_array_iterates_rows():
    check(for_array_rows, (np.arange(6.0).reshape(3, 2),), (np.zeros((0, 2)),))


def for_unrolled_tuple(t: tuple[int, float, str]) -> str:
    out = ""
    for item in t:
        out = out + str(item) + "|"
    return out


def for_unrolled_heterogeneous(x: np.ndarray, k: int) -> list[str]:
    out: list[str] = []
    for v in (k, 2.5, "s", x.shape[0]):
        out.append(str(v))
    return out


def test_for_over_heterogeneous_tuples_unrolls():
    check(for_unrolled_tuple, ((1, 2.5, "x"),))
    check(for_unrolled_heterogeneous, (np.zeros(3), 4))


def for_list_mutated_while_iterating(xs: list[int]) -> list[int]:
    for x in xs:
        if x > 0 and len(xs) < 6:
            xs.append(-x)
    return xs


def breadth_first(start: int, limit: int) -> list[int]:
    queue = [start]
    for node in queue:                    # the queue grows while it is iterated
        if len(queue) < limit:
            queue.append(node * 2)
            queue.append(node * 2 + 1)
    return queue


def shrink_while_iterating(xs: list[int]) -> tuple[list[int], int]:
    seen = 0
    for x in xs:
        seen += 1
        if x % 2 == 0:
            xs.remove(x)
    return xs, seen


def enumerate_and_zip_growing(xs: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for i, x in enumerate(xs):
        if len(xs) < 6:
            xs.append(x + 10)
        out.append((i, x))
    for a, b in zip(xs, range(100)):
        out.append((a, b))
    return out


def comprehension_over_growing_list(xs: list[int]) -> list[int]:
    return [x for x in xs if len(xs) > 5 or xs.append(x) is None]


def test_for_over_list_sees_appends_and_removals_like_python():
    check(for_list_mutated_while_iterating, ([1, 2],), ([],), ([1, -1, 3],))
    check(breadth_first, (1, 10), (5, 0))
    check(shrink_while_iterating, ([1, 2, 4, 5, 6],), ([],), ([2, 2, 2],))
    check(enumerate_and_zip_growing, ([1],), ([],), ([1, 2, 3],))
    check(comprehension_over_growing_list, ([1, 2],), ([],))


def for_with_tuple_target(pairs_: list[tuple[int, str]]) -> str:
    out = ""
    for n, s in pairs_:
        out += s * n
    return out


def test_for_with_tuple_targets():
    check(for_with_tuple_target, ([(2, "a"), (0, "b"), (1, "c")],), ([],))


# ---- break / continue / return in loops


def nested_break_continue(n: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for i in range(n):
        if i == 1:
            continue
        for j in range(n):
            if j > i:
                break
            if (i + j) % 2 == 1:
                continue
            out.append((i, j))
        if len(out) > 6:
            break
    return out


def test_break_and_continue_in_nested_loops():
    check(nested_break_continue, (0,), (3,), (6,))


def inner_loop_break_then_more_statements(n: int) -> list[int]:
    out: list[int] = []
    for i in range(n):
        if i % 2 == 0:
            for j in range(n):
                if j > i:
                    break
                out.append(j)
            out.append(-i)
        out.append(100 + i)
    return out


def test_statements_after_an_inner_loop_with_break():
    check(inner_loop_break_then_more_statements, (0,), (4,))


def inner_loop_in_unrolled_loop(t: tuple[int, int]) -> int:
    total = 0
    for limit in t:
        for j in range(10):
            if j >= limit:
                break
            total += j
    return total


def test_break_of_an_inner_loop_inside_an_unrolled_loop():
    check(inner_loop_in_unrolled_loop, ((3, 5),), ((0, 20),))


def while_inside_for(n: int) -> int:
    total = 0
    for i in range(n):
        k = i
        while k > 0:
            k -= 1
            if k == 2:
                break
            total += k
        else_ = total
        if else_ > 20:
            break
    return total


def test_while_nested_in_for_with_breaks():
    check(while_inside_for, (0,), (5,), (12,))


def find_first(xs: list[int], target: int) -> int:
    for i, x in enumerate(xs):
        if x == target:
            return i
    return -1


def return_from_nested(xss: list[list[int]]) -> tuple[int, int]:
    i = 0
    while i < len(xss):
        for j in range(len(xss[i])):
            if xss[i][j] < 0:
                return i, j
        i += 1
    return -1, -1


def return_in_branches(a: int) -> str:
    if a > 0:
        if a > 10:
            return "big"
        return "small"
    elif a == 0:
        return "zero"
    return "neg"


def test_return_inside_loops_and_branches():
    check(find_first, ([1, 2, 3], 2), ([], 1), ([4], 5))
    check(return_from_nested, ([[1], [2, -3]],), ([[1]],), ([],))
    check(return_in_branches, (20,), (5,), (0,), (-1,))


def code_after_conditional_return(a: int, log: list[int]) -> int:
    if a > 0:
        log.append(1)
        return a
    log.append(2)
    for i in range(a, 0):
        if i == -2:
            return i
        log.append(i)
    log.append(3)
    return 0


def test_statements_after_a_conditional_return_run_only_when_it_did_not():
    check(code_after_conditional_return, *[(a, []) for a in (3, 0, -1, -5)])


def return_type_from_loop(n: int) -> float:
    for i in range(n):
        if i == 3:
            return i * 0.5
    return -1.0


def test_return_of_a_value_first_set_inside_a_loop():
    check(return_type_from_loop, (10,), (2,))


def loop_carried_widening(n: int) -> int | None:
    found = None
    for i in range(n):
        if i * i > 10:
            found = i
            break
    return found


def test_loop_carried_variable_widens_from_none_to_optional():
    check(loop_carried_widening, (2,), (10,))
