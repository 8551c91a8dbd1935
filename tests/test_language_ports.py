"""Programs ported from peers' test suites (PyTorch test/jit, Numba's tests, JAX's
lax_numpy tests) that were refused or differed from eager Python: each runs eagerly and
scripted on several calls (the profiling call, optimized calls, and calls with other
dtypes or shapes whose guards fail), and through save/load where saving was the defect."""
from __future__ import annotations

import math
import pickle
from typing import Any

import numpy as np
import pytest
from _differential import check

import tsjit


def format_with_keywords(x: int, y: float) -> str:
    return "{0}:{a:>5}:{b!r}:{1:.2f}".format(x, y, b="q", a=x * 2)


def format_keyword_missing(x: int) -> str:
    return "{a}".format(b=x)  # noqa: F522, F524  (a KeyError, as eager)


def format_keywords_only(name: str, n: int) -> str:
    return "{name} has {n} item{s}".format(n=n, name=name, s="" if n == 1 else "s")


def test_str_format_takes_keyword_arguments():
    # PyTorch test_string_formatting-style programs: "{a}".format(a=x) was refused
    # ("format() got an unexpected keyword argument 'a'").
    scripted = check(format_with_keywords, (3, 1.5), (4, 2.25), (-5, -0.0), (True, 2.0))
    check(format_keyword_missing, (1,), (2,), (3,))            # KeyError, as eager
    check(format_keywords_only, ("xs", 1), ("ys", 3), ("", 0))
    assert "keywords" in str(scripted.graph)
    restored = pickle.loads(pickle.dumps(scripted))           # saved form: names are data
    assert restored(7, 0.5) == format_with_keywords(7, 0.5)


def numpy_abstract_classes(x: np.ndarray) -> tuple[bool, ...]:
    a = x[0]
    return (isinstance(a, np.integer), isinstance(a, np.floating), isinstance(a, np.number),
            isinstance(a, np.signedinteger), isinstance(a, np.unsignedinteger),
            isinstance(a, np.inexact), isinstance(a, np.complexfloating),
            isinstance(a, np.generic), isinstance(a, (np.integer, float)),
            isinstance(x, np.generic), isinstance(x, np.number), isinstance(3, np.integer),
            isinstance(2.5, np.floating))


def narrowed_by_numpy_class(x: np.ndarray) -> float:
    total = x.sum()
    if isinstance(total, np.integer):
        return float(total) + 0.5
    if isinstance(total, np.floating):
        return float(total) * 2.0
    return -1.0


@pytest.mark.parametrize("dtype", [np.int8, np.uint64, np.float32, np.float64, np.complex64,
                                   np.bool_, np.float16, np.longdouble])
def test_isinstance_of_abstract_numpy_classes_is_decided_by_the_value(dtype):
    # Numba's and JAX's tests test np.integer / np.floating / np.number; they were refused
    # ("isinstance() with np.integer is not supported").
    x = np.arange(1, 4).astype(dtype)
    check(numpy_abstract_classes, (x,), (x,), (x[::-1],), (np.arange(3.0),))
    check(narrowed_by_numpy_class, (x,), (x,), (np.arange(3),), (np.ones(2, np.float32),))


def dict_of_empty_list(n: int) -> dict[str, int]:
    d: dict[str, int] = dict([])
    for i in range(n):
        d[str(i)] = i
    return d


def empty_constructors(n: int) -> tuple[dict[int, float], list[int]]:
    d: dict[int, float] = dict(())
    d[n] = 1.5
    xs: list[int] = list([])
    xs.append(n)
    return d, xs


def dict_of_pairs(n: int) -> tuple[dict[str, int], dict[int, str]]:
    return dict([("a", n), ("b", n + 1)]), dict([(i, str(i)) for i in range(n)])


def test_dict_and_list_of_an_empty_literal_are_the_empty_literal():
    # dict([]) was typed from the List[Tensor] of `[]`, and refused.
    check(dict_of_empty_list, (3,), (0,), (5,))
    check(empty_constructors, (3,), (0,), (-1,))
    check(dict_of_pairs, (3,), (0,), (1,))


def views_returned(d: dict[str, int]):
    return d.keys(), d.values(), d.items()


def views_follow_their_dict(d: dict[str, int]):
    ks, vs = d.keys(), d.values()
    before = len(ks)
    d["new"] = 3
    seen: list[str] = []
    for k in ks:                    # a stored view, iterated after the change
        seen.append(k)
    return before, len(ks), "new" in ks, list(vs), seen, ks


def views_compare_as_python_views(d: dict[str, int], e: dict[str, int]):
    return (d.keys() == e.keys(), d.items() == e.items(), d.keys() == ["a"],
            d.values() == d.values(), d.keys() != e.keys(),
            str(d.keys()) + repr(d.values()) + f"{d.items()}")


def views_consumed(d: dict[str, int], e: dict[str, int]):
    out: list[str] = []
    for i, k in enumerate(d.keys()):
        out.append(str(i) + k)
    for k, v in zip(d.keys(), d.values()):
        out.append(k * v)
    d.update(e.items())
    return (out, sorted(d.keys()), sum(d.values()), tuple(d.items()), ",".join(d.keys()),
            {v: k for k, v in d.items()}, isinstance(d.keys(), list))


def grows_while_iterating(d: dict[str, int]) -> dict[str, int]:
    for k in d.keys():
        if k == "a":
            d["grown"] = 1
    return d


def rekeyed_while_iterating(d: dict[str, int]) -> dict[str, int]:
    for k in d:
        if k == "a":
            del d["a"]
            d["b2"] = 5             # same size, other keys: Python still raises
    return d


def test_dict_views_are_views():
    # d.keys() / values() / items() were lists (TorchScript's List): a scripted function
    # returned ['a'] where eager returns dict_keys(['a']), a stored view missed later
    # changes of its dict, d.keys() == ['a'] was True, str() printed a list, and a loop
    # over a dict whose keys changed at the same size did not raise.
    d, e = {"a": 1, "b": 2}, {"a": 1, "c": 3}
    check(views_returned, (d,), ({},), (e,))
    check(views_follow_their_dict, (d,), ({"x": 0},), (d,))
    check(views_compare_as_python_views, (d, d), (d, e), ({"a": 5}, {"a": 5}))
    check(views_consumed, (d, e), ({}, {}), (e, d))
    check(grows_while_iterating, (d,), ({"b": 1},), (d,))          # RuntimeError, as eager
    check(rekeyed_while_iterating, (d,), ({"b": 1},), ({"a": 1},))
    restored = pickle.loads(pickle.dumps(tsjit.script(views_returned)))
    assert [type(v) for v in restored(d)] == [type(v) for v in views_returned(d)]


def indexes_a_view(d: dict[str, int]) -> str:
    return d.keys()[0]


def test_indexing_a_view_is_refused_where_python_raises():
    # was 'a' (an index into the list), where eager raises TypeError
    with pytest.raises(tsjit.CompilationError, match=r"(?s)not subscriptable.*d\.keys\(\)\[0\]"
                       r".*~~~~ <--- HERE"):
        tsjit.script(indexes_a_view)


def iterables_returned(n: int, xs: list[int]):
    return range(n), range(1, n, 2)[1:], zip(xs, xs), enumerate(xs, 5), reversed(xs)


def iterators_are_exhausted_once(xs: list[int], names: list[str]):
    z, e, r = zip(xs, names), enumerate(names), reversed(xs)
    return list(z), list(z), list(e), list(e), list(r), list(r)


def range_attributes(start: int, stop: int, step: int):
    r = range(start, stop, step)
    return (r.start, r.stop, r.step, range(start).stop, len(r), start in r, r == range(0, 0),
            str(r), r[-1] if len(r) > 0 else -1, list(r[::-1]))


def range_as_numpy_data(n: int):
    return np.array(range(n)), np.sum(range(1, n)), np.asarray(range(2, n)).dtype.name


def reversed_in_loops(xs: list[int], s: str, a: np.ndarray):
    out: list[int] = []
    for i in reversed(range(1, len(xs) + 3, 2)):
        out.append(i)
    for x in reversed(xs):
        out.append(x)
        if len(out) == 4:
            xs.pop()                # a list shrunk below the index ends the loop
            xs.pop()
    text = ""
    for i, c in enumerate(reversed(s)):
        text += c + str(i)
    rows = np.zeros(a.shape[1:])
    for row in reversed(a):
        rows = rows * 2 + row
    return out, xs, text, rows, [k for k in reversed({"a": 1, "b": 2})]


def test_range_zip_enumerate_reversed_are_python_objects():
    # As values they were lists (TorchScript's materialization): a scripted function
    # returned [0, 1, 2] for range(3) and a list for zip(...); a zip, enumerate or
    # reversed iterator consumed twice gave its elements twice (eager: then nothing);
    # r.start was refused.
    xs, names = [3, 1, 4], ["a", "b"]
    check(iterables_returned, (3, xs), (0, []), (6, xs))
    check(iterators_are_exhausted_once, (xs, names), ([], []), (xs, ["c", "d", "e", "f"]))
    check(range_attributes, (1, 10, 2), (3, -5, -2), (0, 0, 1), (0, 5, 0))
    check(range_as_numpy_data, (4,), (0,), (3,))
    a = np.arange(6.0).reshape(3, 2)
    check(reversed_in_loops, ([1, 2, 3, 4, 5], "abc", a), ([], "", a[:0]),
          ([7, 8], "x", a.astype(np.float32)), ([1, 2, 3], "ab", np.arange(4).reshape(2, 2)))


def repeated_tuples(t: tuple[int, int, int], n: int):
    return (t * 2, 2 * t, t * n, (0,) * n, () * 3, t * 0, t * -1, (1.5,) * True,
            (1, "a") * 2, tuple([n]) * 2)


def loop_over_repeated(n: int) -> int:
    s = 0
    for v in (1, 2) * n:
        s += v
    return s


def test_tuple_repetition():
    # Numba's and PyTorch's tuple tests: `t * 2` was refused ("unsupported operand types
    # for *: 'Tuple[int, int, int]' and 'int'").
    check(repeated_tuples, ((1, 2, 3), 2), ((0, 0, 1), 0), ((5, 6, 7), -3))
    check(loop_over_repeated, (3,), (0,), (1,))


def returns_keys_as_list(d: dict[str, int]) -> list[str]:
    return d.keys()


def test_a_view_returned_as_a_list_says_how_to_convert_it():
    # TorchScript accepts this (its keys() is a List); eager returns a dict_keys
    with pytest.raises(tsjit.CompilationError, match=r"dict_keys object here, not a list or "
                                                     r"tuple: convert it with list\(\.\.\.\)"):
        tsjit.script(returns_keys_as_list)


def iter_and_next(xs: list[int]):
    it = iter(xs)
    first = next(it, -1)
    second = next(it, -1)
    return first, second, list(it), next(iter(xs))         # StopIteration on []: as eager


def zip_stops_before_advancing_later_iterators(xs: list[int]):
    it = iter(xs)
    out: list[int] = []
    for a, b in zip(range(2), it):
        out.append(a + b)
    for a, b in zip(it, range(1)):
        out.append(a * 10 + b)
    front = list(zip(range(1), it))
    return out, front, list(it)


def int_with_base_keyword(text: str, base: int) -> tuple[int, int, int]:
    return int(text, base=base), int(text, 36), int(float(base))


def test_iter_next_and_int_base_keyword():
    # Numba's test_builtins: iter() / next() were refused, int(x, base=b) too; a loop over
    # zip(range(2), it) took a third element from `it` after the range ran out (eager
    # zip stops at its first exhausted part without advancing the later ones).
    check(iter_and_next, ([1, 2, 3],), ([5],), ([],))
    check(zip_stops_before_advancing_later_iterators, ([1, 2, 3, 4, 5, 6],), ([],), ([7],))
    check(int_with_base_keyword, ("ff", 16), ("0x1f", 0), ("12", 3), ("z", 10))
    restored = pickle.loads(pickle.dumps(tsjit.script(int_with_base_keyword)))
    assert restored("ff", 16) == int_with_base_keyword("ff", 16)


def narrowed_by_walrus(d: dict[str, int], k: str) -> int:
    if (v := d.get(k)) is not None:
        return v * 2
    if w := d.get(k + k):
        return w + 1
    return 0


def test_an_assignment_expression_in_a_none_test_narrows_its_target():
    # `(v := d.get(k)) is not None` did not narrow v: v * 2 was refused
    # ("unsupported operand types for *: 'Optional[int]' and 'int'")
    check(narrowed_by_walrus, ({"a": 2}, "a"), ({"a": 0, "aa": 4}, "a"), ({}, "b"),
          ({"bb": 0}, "b"))


def extended_shapes(x: np.ndarray):
    s = x.shape + (1,)
    return (np.zeros(x.shape + (3,)).shape, x.reshape(s).shape, (2,) + x.shape,
            x.shape + x.shape, x.shape[:-1] + (x.shape[-1] * 2,))


def test_a_shape_plus_a_tuple_is_a_shape():
    # JAX's lax_numpy tests build shapes as x.shape + (1,): refused ("unsupported operand
    # types for +: 'Tuple[int, ...]' and 'Tuple[int]'")
    check(extended_shapes, (np.ones((2, 3)),), (np.ones(4, np.float32),),
          (np.ones((1, 2, 3)),))


def arithmetic_on_unions(x: int | float | str, y: int | bool):
    if isinstance(x, (int, float)):
        a = x * 2
        b = -x
        c = x + y
        c += 1
        return str(a) + str(b) + str(c) + str(x / 2) + str(x // 3) + str(x ** 2)
    return x


def test_arithmetic_on_a_union_of_numbers():
    # TorchScript's isinstance(x, (int, float)) refinement leaves a Union[int, float]:
    # x * 2 was refused (unsupported operand types for *: 'Union[int, float]' and 'int')
    check(arithmetic_on_unions, (3, 2), (1.5, True), (-0.0, False), ("s", 1))


def folded_specials():
    return float("inf") > 1e308, float("-inf"), -0.0 == 0.0, str(-0.0), 2 ** -1, 10 ** 20


def test_a_folded_constant_keeps_its_static_type():
    # constant propagation folded 2 ** -1 (typed int, the usual case) into the constant
    # 0.5, which save then refused as a constant not of its type
    scripted = check(folded_specials, (), ())
    assert pickle.loads(pickle.dumps(scripted))() == folded_specials()


def appends_to_empty_literals(n: int, s: str):
    squares = []
    for i in range(n):
        squares.append(i * i)
    rows = []
    for i in range(n):
        row = []
        for j in range(i):
            row.append(j * 1.5)
        rows.append(row)
    words = []
    words.extend(s.split())
    words.insert(0, "first")
    nested = []
    nested.append([])
    nested[0].append(np.ones(1))
    empty = []
    return squares, rows, words, nested, len(empty), empty, [[] for _ in range(n)]


def test_an_empty_list_takes_the_type_of_what_is_first_stored_in_it():
    # Numba's list tests build lists as `l = []; l.append(42)`: refused, `[]` was a
    # List[Tensor] (TorchScript's rule, which still holds for an empty list used first
    # in any other way)
    check(appends_to_empty_literals, (3, "a b"), (0, ""), (1, "x"))


def extended_in_place(n: int, xs: list[str]):
    found = []
    found += [n]
    found += (n * 2, n * 3)
    letters = ["z"]
    letters += "ab"
    return found, letters, "".join([]), "-".join(xs)


def test_augmented_list_extension_and_empty_joins():
    # `xs += "ab"` (list.__iadd__ takes any iterable) and `found = []; found += [n]` were
    # refused, and so was "".join([]) ([] was a List[Tensor])
    check(extended_in_place, (1, ["a", "b"]), (0, []), (-3, ["x"]))


def consumed_twice(xs: list[int]):
    it = iter(xs)
    z = zip(xs, xs)
    return sum(it), sum(it), len(list(z)), len(list(z))


def test_reading_an_iterator_twice_is_not_one_read():
    # CSE merged the two sum(it): (6, 6) where eager gives (6, 0)
    check(consumed_twice, ([1, 2, 3],), ([],), ([5],))


def generators_that_stop_early(xs: list[int]):
    # 10 // 0 is reached only if the generator is read past the deciding element
    return (any(10 // x > 4 for x in xs), all(10 // x > 0 for x in xs),
            any(x for x in xs if x > 2), all(y < x for x in xs for y in range(x) if y % 2 == 0))


def generators_read_whole(xs: list[int], words: list[str]):
    x = -1          # the generator's own x does not leak
    return (sum(x * x for x in xs), max(x % 3 for x in xs), sorted((x for x in xs if x),
                                                                   reverse=True),
            tuple(x for x in xs), ",".join(w.upper() for w in words),
            dict((w, len(w)) for w in words), x)


def generator_of_array_elements(a: np.ndarray, n: int):
    return sum(a[i] * 2 for i in range(n)), any(a[i] > 0.5 for i in range(n))


def first_matches(xs: list[int], n: int):
    return (next((i for i, x in enumerate(xs) if x > 3), -1),
            next((x * 2 for x in xs if x % 2 == 0), None),
            next((y for x in xs for y in range(x) if y > 2), 0),
            next((10 // x for x in xs if x != 1), 5),          # stops before a 0 after it
            next((i for i in range(n) if i * i > n), n + 1))


def first_or_stop(xs: list[int], ws: list[str]):
    return next(x * 2 for x in xs if x > 1), next(w for w in ws if w)


def test_generator_arguments_of_builtins():
    # Numba/PyTorch-style `sum(x * x for x in xs)`, `any(... for ...)` were refused
    # ("script code does not support generator expressions")
    scripted = check(generators_that_stop_early, ([1, 20, 0],), ([20, 0],), ([],), ([5, 1],),
                     ([2, 0],))
    restored = pickle.loads(pickle.dumps(scripted))
    assert restored([1, 20, 0]) == generators_that_stop_early([1, 20, 0])
    check(generators_read_whole, ([1, 2, 0], ["a", "bc"]), ([], []), ([3], [""]))
    check(first_or_stop, ([1, 3], ["", "a"]), ([], ["a"]), ([3], [""]))   # StopIteration
    check(first_matches, ([1, 5, 2, 0], 10), ([], 0), ([4, 1], 1), ([1, 1], 3), ([1, 0], 2))
    check(generator_of_array_elements, (np.array([0.25, 0.75, 0.1]), 2),
          (np.array([0.25, 0.75], np.float32), 1), (np.array([0.1]), 0))


def fill_when_absent(xs: list[int] | None = None, flag: bool = True) -> int:
    if xs is None:
        xs = []             # a List[int], as the other path's xs
    xs.append(1)
    ys: list[int] | None = [2] if flag else None
    if ys is None:
        ys = []
    return len(xs) + len(ys)


def test_an_empty_list_assigned_beside_a_typed_list_takes_its_type():
    # torchvision-style `if xs is None: xs = []` was refused ("set to type
    # List[Uninitialized] in the true branch and type List[int] in the false branch")
    check(fill_when_absent, ([3],), (None,), (None, False), ([], False))


class Tally:
    def __init__(self, log: list[str]):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, kind: Any, value: Any, traceback: Any):
        self.log.append("exit")


def tally_twice(log: list[str], x: int) -> int:
    with Tally(log) as t:
        t.log.append(str(x))
    return len(log)


def test_a_function_with_a_context_manager_class_is_saved():
    # pickling refused the class: "method name '__enter__' is not ... a special method a
    # script class may define"
    restored = pickle.loads(pickle.dumps(tsjit.script(tally_twice)))
    log: list[str] = []
    assert restored(log, 3) == 3 and log == ["enter", "3", "exit"]


class Scaler:
    def __init__(self, k: int):
        self.k = k

    def __call__(self, x: int) -> int:
        return x * self.k

    def __floordiv__(self, d: int) -> Scaler:
        return Scaler(self.k // d)

    def __ifloordiv__(self, d: int) -> Scaler:
        self.k //= d
        return self

    def __ior__(self, other: int) -> Scaler:
        self.k |= other
        return self

    @tsjit.unused
    def debug_dump(self) -> str:
        import json  # not script code: calls of it raise
        return json.dumps(self.k)

    def scaled_or_dump(self, x: int) -> int:
        if x < 0:
            return len(self.debug_dump())
        return self(x)


def call_scalers(x: int) -> int:
    s = Scaler(6)
    s //= 2
    s |= 4
    return s(x) + (s // 2)(1) + s.scaled_or_dump(x)


def test_classes_with_call_in_place_operators_and_unused_methods_are_saved():
    # pickling refused '__call__' and '__ior__' as method names, and tried to compile the
    # @tsjit.unused method's body
    scripted = check(call_scalers, (2,), (0,))
    restored = pickle.loads(pickle.dumps(scripted))
    assert restored(3) == call_scalers(3)


def extremes_with_defaults(xs: list[int], d: dict[str, float]):
    return (max(xs, default=-1), min(xs, default=None), max(d.values(), default=0.0),
            min(d, default=""), max((x for x in xs if x > 2), default=0))


def test_min_max_take_a_default_for_empty_iterables():
    # max(xs, default=-1) was refused ("max() got an unexpected keyword argument")
    check(extremes_with_defaults, ([1, 5], {"a": 1.5}), ([], {}), ([2], {"b": -0.0}))


def tripled(x: int) -> int:
    return x * 3


def maps_and_filters(xs: list[int]):
    out: list[int] = []
    for y in map(tripled, xs):
        if y > 6:
            break
        out.append(y)
    for z in filter(None, xs):
        out.append(-z)
    for a, b in map(divmod, xs, [2, 2, 2, 2]):
        out.append(a * 10 + b)
    v = 100                             # the generator's own v does not leak
    for w in (v * v for v in xs if v % 2):
        out.append(w + v)
    return (out, list(map(tripled, xs)), sum(map(abs, xs)), sorted(map(str, xs)),
            any(map(abs, xs)), next(filter(None, xs), -1), list(filter(tripled, xs)))


def test_map_filter_and_generators_in_loops_and_consumers():
    # Numba's map/filter use cases with a named function; refused before ("class map
    # cannot be used in script code", "script code does not support generator expressions")
    check(maps_and_filters, ([1, 2, 0, 5],), ([],), ([3],), ([-4, 0, 7],))


def optional_defaults(x: int | None, s: str | None, xs: list[int] | None):
    a = x or 5                          # an int: x is not None where it is kept
    b = (s or "default").upper()
    c = len(xs or [])                   # [] is a List[int] beside xs
    d = x and x + 1                     # x + 1 only where x is not None
    return a + 1, b, c, d


def test_and_or_operands_narrow_optionals():
    # each line was refused ("unsupported operand types for +: 'Optional[int]' and 'int'",
    # "the two alternatives have different types: List[int] and List[Uninitialized]")
    check(optional_defaults, (None, None, None), (0, "", []), (3, "ab", [1]))


def size_of_union(x: list[int] | dict[str, int] | int | str) -> int:
    if isinstance(x, (list, dict)):
        return len(x)                   # Union[List[int], Dict[str, int]]: both sized
    if isinstance(x, int):
        return x
    return len(x) * 10


def test_len_of_a_union_of_sized_types():
    # PyTorch test_union-style refinement by a tuple of classes: len() was refused
    check(size_of_union, ([1],), ({"a": 1, "b": 2},), (3,), ("ab",))


def negated(x: int) -> int:
    return -x


def ordered_by_keys(xs: list[int], ws: list[str], fs: list[float]):
    return (sorted(ws, key=len), sorted(ws, key=len, reverse=True), max(ws, key=len),
            min(ws, key=len), sorted(xs, key=abs), max(xs, key=abs), min(xs, key=negated),
            sorted(fs, key=abs), max(fs, key=math.fabs))


def test_sort_and_extremes_by_a_key_function():
    # sorted(ws, key=len) was refused (key= functions); ties keep Python's order: stable
    # sorts (also reversed), the first extreme
    check(ordered_by_keys, ([3, -1, 1, -3, 2], ["bb", "a", "cc", "", "d"],
                            [1.5, float("nan"), -1.5, 0.0, -0.0]), ([], [], []))
    check(max_by_abs, ([],), ([1, -1],))


def sorted_in_place_by_keys(ws: list[str], xs: list[int]):
    ws.sort(key=len)
    result = xs.sort(key=abs, reverse=True)
    return ws, xs, result


def most_common(counts: dict[str, int]):
    return max(counts, key=counts.get), sorted(counts.keys(), key=counts.get, reverse=True)


def test_the_key_of_a_dict_by_its_values():
    # max(d, key=d.get) was refused ("'<' not supported between ... Optional[int]"): over
    # d's own keys d.get(k) is d[k]
    check(most_common, ({"a": 3, "bb": 5, "c": 5},), ({"z": -1},))


def test_list_sort_by_a_key_function():
    check(sorted_in_place_by_keys, (["bb", "a", "cc", ""], [3, -1, 1, -3]), ([], []))


def max_by_abs(xs: list[int]) -> int:
    return max(xs, key=abs)             # of [], ValueError, as eager
