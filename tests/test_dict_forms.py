"""Dict forms of current Python that ported programs use: `OrderedDict(...)` (TorchScript
compiles it; the object is an OrderedDict, whose equality is order-sensitive), the union
operators `d | e` and `d |= e`, and `**` unpacking in dict literals (all were refused)."""
from __future__ import annotations

import collections
import pickle
from collections import OrderedDict

import numpy as np
from _differential import check

import tsjit


def ordered(d: dict[str, int]):
    a = OrderedDict(d)
    b = collections.OrderedDict(sorted(d.items()))
    c = a.copy()
    c["z"] = 0
    e = OrderedDict([("x", 1), ("y", 2)])
    f = OrderedDict([("y", 2), ("x", 1)])
    return a, b, c, a == b, e == f, e == {"x": 1, "y": 2}, OrderedDict([(1, 2), (1, 4)]), \
        OrderedDict() == OrderedDict()


def ordered_from_a_generator(keys: list[str]):
    return OrderedDict((k, i) for i, k in enumerate(keys))


def unions(d: dict[str, int], e: dict[str, int]):
    merged = d | e
    d |= {"new": -1}                    # in place: the caller's dict changes
    return merged, d, e | d


def unpacked(d: dict[str, int], k: str):
    return {**d, k: 10}, {"first": 0, **d, **{k: 1}}, {**d}


def test_ordered_dicts_are_ordered_dicts():
    scripted = check(ordered, ({"b": 2, "a": 1},), ({},))
    assert type(pickle.loads(pickle.dumps(scripted))({"q": 1})[0]) is OrderedDict


def test_an_ordered_dict_reads_a_generator():
    check(ordered_from_a_generator, (["b", "a", "b"],), ([],))


def test_dict_union_operators():
    check(unions, ({"a": 1}, {"a": 2, "b": 3}), ({}, {}))


def test_dict_unpacking_in_literals():
    check(unpacked, ({"a": 1, "k": 5}, "k"), ({}, "x"))
    assert type(tsjit.script(unpacked)({}, "x")[2]) is dict


def index_of_each(words: list[str]):
    where = {}
    for i, w in enumerate(words):
        where[w] = i
    return where


def tally(words: list[str]):
    counts = dict()
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    return counts


def maybe_filled(n: int, a: np.ndarray):
    arrays = {}
    if n > 0:
        arrays["scaled"] = a * n
    untouched = {}
    return arrays, len(untouched), untouched


def test_an_empty_dict_literal_takes_the_types_of_its_first_store():
    # was Dict[str, Tensor] (TorchScript's default): storing an int was refused
    check(index_of_each, (["a", "b", "a"],), ([],), (["x"],))
    check(tally, (["a", "b", "a"],), ([],), (["q"],))
    check(maybe_filled, (2, np.arange(3.0)), (0, np.arange(3.0)), (1, np.ones(2, np.int8)))
    assert "Dict[str, int]" in str(tsjit.script(index_of_each).graph)
