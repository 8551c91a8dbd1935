"""Programs ported from peers' test suites (PyTorch test/jit, Numba's tests, JAX's
lax_numpy tests) that were refused or differed from eager Python: each runs eagerly and
scripted on several calls (the profiling call, optimized calls, and calls with other
dtypes or shapes whose guards fail), and through save/load where saving was the defect."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from _differential import check


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
