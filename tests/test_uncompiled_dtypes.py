"""Arrays of dtypes tsjit does not compile (str, bytes, void and structured, object,
datetime and timedelta, complex, byte-swapped) passed as Tensor behave exactly as eager
NumPy: same results or the same exception class, on the profiling calls and after, mixed
with float calls of the same function, and with nothing logged or printed."""
from __future__ import annotations

import logging

import numpy as np
import pytest
from _differential import check

import tsjit
from tsjit.executor.profiling import dtype_name

STRUCTURED = np.dtype([("f", "<f8"), ("i", "<i4")])
UNCOMPILED = {
    "str": np.array(["ab", "c", "de"]),
    "bytes": np.array([b"x", b"yz", b""]),
    "structured": np.array([(1.5, 2), (-1.0, 7), (0.0, 0)], dtype=STRUCTURED),
    "void": np.array([b"abcdefgh", b"12345678", b"zzzzzzzz"], dtype="V8"),
    "object": np.array([1, 2.5, "s"], dtype=object),
    "datetime": np.array(["2020-01-01", "2021-06-30", "1999-12-31"], dtype="M8[D]"),
    "timedelta": np.array([1, -2, 3], dtype="m8[s]"),
    "complex": np.array([1 + 2j, -3j, 0.5]),
    "byteswapped": np.array([1.5, -2.0, 3.25], dtype=">f8"),
}
FLOATS = np.array([0.5, -1.25, 3.0])


def add(a, b):
    return a + b


def equal(a, b):
    return a == b


def affine(a):
    return a * 2 + 1


def pick(a, b):
    return np.where(a == b, a, b)[::-1]


def negate_first(a):
    return -a[0]


def total(a):
    return a.sum()


def _calls(fn, first: str | None):
    """Argument tuples for ``fn``: each uncompiled dtype between float calls, starting
    with the dtype ``first`` (its profile is the first one) or with floats."""
    arity = fn.__code__.co_argcount

    def args(x):
        return (x, x[::-1]) if arity == 2 else (x,)

    names = list(UNCOMPILED)
    if first is not None:
        names.remove(first)
        names.insert(0, first)
    calls = [] if first is not None else [args(FLOATS), args(FLOATS)]
    for name in names:
        calls += [args(UNCOMPILED[name]), args(UNCOMPILED[name]), args(FLOATS)]
    return calls


@pytest.mark.parametrize("first", [None, *UNCOMPILED])
@pytest.mark.parametrize("fn", [add, equal, affine, pick, negate_first, total])
def test_uncompiled_dtypes_behave_as_eager(fn, first, caplog, capfd, default_settings):
    tsjit.set_profiling_runs(2)
    with caplog.at_level(logging.DEBUG - 1, logger="tsjit"):
        check(fn, *_calls(fn, first))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    out, err = capfd.readouterr()
    assert not out and not err


@pytest.mark.parametrize("name", list(UNCOMPILED))
def test_a_dtype_is_recorded_only_when_its_name_gives_it_back(name):
    dtype = UNCOMPILED[name].dtype
    recorded = dtype_name(dtype)
    assert recorded is None or np.dtype(recorded) == dtype
    assert dtype_name(np.dtype(np.float32)) == "float32"
