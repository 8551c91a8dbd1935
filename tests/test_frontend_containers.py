"""Lists, dicts, tuples and named tuples in script code: construction, nesting,
aliasing and mutation of arguments behave as in Python."""
from __future__ import annotations

import collections
from typing import NamedTuple

import numpy as np
from _differential import check

import tsjit


def list_building(n: int) -> tuple[list[int], list[list[int]], list[str], list[float]]:
    xs = [1, 2, 3]
    grid = [[i * j for j in range(n)] for i in range(n)]
    words = ["a"] * n + ["b"]
    floats = [float(i) / 2 for i in range(n)]
    return xs + [n], grid, words, floats


def test_list_literals_repetition_and_nesting():
    check(list_building, (0,), (3,))


def list_aliasing(xs: list[int]) -> tuple[list[int], bool, bool]:
    ys = xs
    zs = xs.copy()
    ys.append(1)
    zs.append(2)
    return zs, ys is xs, zs is xs


def test_lists_alias_like_python_objects():
    check(list_aliasing, ([],), ([5],))


def nested_mutation(xss: list[list[int]], d: dict[str, list[int]]) -> int:
    xss[0].append(9)
    d["a"].append(len(xss))
    inner = xss[1]
    inner[0] = -1
    return len(xss[0])


def test_mutating_nested_containers_is_visible_to_the_caller():
    check(nested_mutation, ([[1], [2]], {"a": []}), ([[], [0, 0]], {"a": [7]}))


def list_of_arrays(xs: list[np.ndarray]) -> tuple[np.ndarray, int, list[np.ndarray]]:
    total = xs[0] * 0
    for x in xs:
        total = total + x
    xs[0][0] = 100.0
    return total, len(xs), [x * 2 for x in xs]


def test_lists_of_arrays_and_in_place_writes_through_them():
    check(list_of_arrays, ([np.arange(3.0), np.ones(3)],), ([np.zeros(2, np.float32)],))


def list_equality(a: list[int], b: list[int]) -> tuple[bool, bool, bool, bool]:
    return a == b, a != b, a < b, [a] == [b]


def test_list_comparisons():
    check(list_equality, ([1, 2], [1, 2]), ([1], [1, 2]), ([], []), ([3], [2, 9]))


def list_builtins(xs: list[int]) -> tuple[list[int], list[int], int, bool, bool, list[int]]:
    return sorted(xs), list(reversed(xs)), sum(xs), any([x > 2 for x in xs]), \
        all([x > 0 for x in xs]), list(range(len(xs)))


def test_builtins_over_lists():
    check(list_builtins, ([3, 1, 2],), ([],), ([-1, 5],))


def list_pop_errors(xs: list[int], i: int) -> int:
    return xs.pop(i)


def test_list_pop_out_of_range():
    check(list_pop_errors, ([1, 2], 0), ([1, 2], -1), ([], 0), ([1], 3))


def list_remove_missing(xs: list[int], v: int) -> list[int]:
    xs.remove(v)
    return xs


def test_list_remove_missing_raises_value_error():
    check(list_remove_missing, ([1, 2], 2), ([1], 3))


def dict_building(keys: list[str]) -> tuple[dict[str, int], dict[int, list[str]], int]:
    d = {"x": 1, "y": 2}
    by_len: dict[int, list[str]] = {}
    for k in keys:
        d[k] = len(k)
        if len(k) not in by_len:
            by_len[len(k)] = []
        by_len[len(k)].append(k)
    return d, by_len, len(d)


def test_dict_literals_insertion_order_and_nested_values():
    check(dict_building, (["ab", "x", "cde", "q"],), ([],))


def dict_keys_of_every_type(i: int, f: float, b: bool) -> tuple[dict[int, str], dict[float, int],
                                                                dict[bool, int]]:
    return {i: "i", i + 1: "j"}, {f: 1, f * 2: 2}, {b: 1, not b: 0}


def test_dict_keys_int_float_bool():
    check(dict_keys_of_every_type, (1, 0.5, True), (0, 0.0, False))


def dict_mutation(d: dict[str, float]) -> dict[str, float]:
    d["new"] = 1.5
    if "old" in d:
        del d["old"]
    d.pop("gone", 0.0)
    d.clear() if len(d) > 5 else None
    return d


def test_dict_mutation_is_visible_to_the_caller():
    check(dict_mutation, ({"old": 1.0},), ({},), ({"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0,
                                                  "e": 5.0},))


def dict_items_list(d: dict[str, int]) -> list[tuple[str, int]]:
    return list(d.items())


def test_dict_items_as_list_of_tuples():
    check(dict_items_list, ({"a": 1, "b": 2},), ({},))


def tuples(a: int, s: str) -> tuple[tuple[int, str], tuple[int, ...], int, bool, tuple[()]]:
    t = (a, s)
    u = (a,) + (a * 2,)
    nested = ((a, s), (s, a))
    empty = ()
    return t, u, len(nested), t == (a, s), empty


def test_tuple_construction_concatenation_and_comparison():
    check(tuples, (1, "x"), (0, ""))


def tuple_of_arrays(x: np.ndarray) -> tuple[np.ndarray, tuple[int, ...], int]:
    shape = x.shape
    rows, cols = shape
    return x.reshape(cols, rows), shape, rows * cols


def test_shapes_are_tuples():
    check(tuple_of_arrays, (np.zeros((2, 3)),), (np.ones((4, 1), np.int8),))


class Point(NamedTuple):
    x: float
    y: float
    label: str = "p"


Pair = collections.namedtuple("Pair", ["first", "second"])


def named_tuples(p: Point, k: float) -> tuple[Point, float, str, Point, float]:
    q = Point(p.x * k, y=p.y + 1.0)
    r = Point(1.0, 2.0, "r")
    a, b, c = q
    return q, q[0] + q.y, r.label, r, a + b


def test_typing_named_tuples_fields_defaults_and_unpacking():
    check(named_tuples, (Point(1.0, 2.0), 3.0), (Point(-1.0, 0.5, "z"), 0.0))


def collections_named_tuple(p: Pair) -> Pair:
    return Pair(p.second, p.first)


def test_collections_named_tuples_hold_arrays():
    check(collections_named_tuple, (Pair(np.arange(2.0), np.ones(3)),))


def named_tuple_list(ps: list[Point]) -> list[str]:
    return [p.label for p in ps if p.x > 0]


def test_lists_of_named_tuples():
    check(named_tuple_list, ([Point(1.0, 0.0, "a"), Point(-1.0, 0.0, "b")],), ([],))


def empty_containers() -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    return [], {}


def test_empty_literals_default_to_tensor_elements():
    check(empty_containers, ())
    assert "List[Tensor]" in tsjit.script(empty_containers).schema


def annotated_empty(n: int) -> tuple[list[tuple[int, float]], dict[str, list[int]]]:
    pairs: list[tuple[int, float]] = []
    groups: dict[str, list[int]] = {}
    for i in range(n):
        pairs.append((i, i * 0.5))
        groups.setdefault(str(i % 2), tsjit.annotate(list[int], [])).append(i)
    return pairs, groups


def test_annotated_empty_containers():
    check(annotated_empty, (0,), (5,))


def list_in_dict_in_list(data: list[dict[str, list[int]]]) -> int:
    total = 0
    for d in data:
        for k, v in d.items():
            total += len(k) * sum(v)
    return total


def test_deeply_nested_container_arguments():
    check(list_in_dict_in_list, ([{"ab": [1, 2]}, {}, {"c": [3], "dd": []}],), ([],))


def string_containers(s: str) -> tuple[list[str], str, dict[str, int]]:
    counts: dict[str, int] = {}
    for ch in s:
        counts[ch] = counts.get(ch, 0) + 1
    return list(s), "".join(sorted(counts.keys())), counts


def test_strings_as_sequences():
    check(string_containers, ("banana",), ("",))


def grow_while_looping(d: dict[str, int]) -> dict[str, int]:
    for k in d:
        if d[k] > 0:
            d[k + "!"] = 0
    return d


def shrink_while_looping_items(d: dict[str, int]) -> int:
    seen = 0
    for k, v in d.items():
        seen += v
        if v == 2:
            d.pop(k)
    return seen


def overwrite_while_looping_values(d: dict[str, int]) -> dict[str, int]:
    for v in d.values():
        d["a"] = v + 1         # same size: no error
    return d


def test_a_dict_whose_size_changes_under_its_loop_raises_as_in_python():
    # Python's dict iterator raises RuntimeError at the step after the size changed,
    # even when that step would have ended the loop
    check(grow_while_looping, ({"a": 1, "b": 0},), ({"a": 0},), ({},))
    check(shrink_while_looping_items, ({"a": 1, "b": 2, "c": 3},), ({"a": 2},),
          ({"a": 1},))
    check(overwrite_while_looping_values, ({"a": 1, "b": 5},))
