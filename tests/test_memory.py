"""Peak memory of scripted code: the interpreter releases every value at its last use,
so a chain of large temporaries holds about two of them at a time, never all of them
(tracemalloc sees NumPy's buffers)."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import tsjit

N = 1 << 20                  # float64 elements: 8 MiB per array
ARRAY_BYTES = N * 8


def rebinding_chain(x: np.ndarray) -> np.ndarray:
    y = x * 2.0
    y = y + 1.0
    y = y * 3.0
    y = y - 4.0
    y = y / 5.0
    y = y + x
    y = y * y
    y = y - 1.0
    return y


def distinct_names_chain(x: np.ndarray) -> np.ndarray:
    a = x * 2.0
    b = a + 1.0
    c = b * 3.0
    d = c - 4.0
    e = d / 5.0
    f = e + x
    g = f * f
    h = g - 1.0
    return h


def nested_expression(x: np.ndarray) -> np.ndarray:
    return ((((x * 2.0 + 1.0) * 3.0 - 4.0) / 5.0 + x) * 0.5 - 1.0) * 2.0


def loop_chain(x: np.ndarray, n: int) -> np.ndarray:
    y = x + 0.0
    for _ in range(n):
        y = y * 1.5 + 1.0
    return y


def branch_chain(x: np.ndarray, flag: bool) -> np.ndarray:
    if flag:
        a = x * 2.0
        b = a + 1.0
        c = b * 3.0
        y = c - 4.0
    else:
        a = x / 2.0
        b = a - 1.0
        c = b / 3.0
        y = c + 4.0
    return y


def peak_bytes(fn, *args) -> int:
    """Peak traced allocation while `fn(*args)` runs (the result included)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = fn(*args)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    del result
    return peak


@pytest.mark.parametrize("fn,extra", [
    (rebinding_chain, ()),
    (distinct_names_chain, ()),
    (nested_expression, ()),
    (loop_chain, (8,)),
    (branch_chain, (True,)),
    (branch_chain, (False,)),
])
def test_chain_of_temporaries_holds_about_two_arrays_at_a_time(fn, extra):
    x = np.linspace(-1.0, 1.0, N)
    scripted = tsjit.script(fn)
    np.testing.assert_array_equal(scripted(x, *extra), fn(x, *extra))   # warm and check
    peak = peak_bytes(scripted, x, *extra)
    assert peak <= 2.5 * ARRAY_BYTES, f"peak {peak / ARRAY_BYTES:.2f} arrays"


def test_distinct_names_are_released_earlier_than_in_eager_python():
    x = np.linspace(-1.0, 1.0, N)
    scripted = tsjit.script(distinct_names_chain)
    scripted(x)
    eager = peak_bytes(distinct_names_chain, x)
    assert eager >= 7 * ARRAY_BYTES           # Python keeps a..h alive until the return
    assert peak_bytes(scripted, x) <= 2.5 * ARRAY_BYTES


def in_place_chain(x: np.ndarray) -> np.ndarray:
    y = x.copy()
    for _ in range(10):
        y *= 1.5
        y += 1.0
    return y


def test_in_place_updates_allocate_nothing_new():
    x = np.linspace(-1.0, 1.0, N)
    scripted = tsjit.script(in_place_chain)
    scripted(x)
    assert peak_bytes(scripted, x) <= 1.2 * ARRAY_BYTES


def list_of_temporaries(x: np.ndarray, n: int) -> float:
    total = 0.0
    for i in range(n):
        t = x * float(i)
        total += float(t[0])
    return total


def test_loop_temporaries_do_not_accumulate():
    x = np.linspace(-1.0, 1.0, N)
    scripted = tsjit.script(list_of_temporaries)
    scripted(x, 2)
    assert peak_bytes(scripted, x, 12) <= 2.2 * ARRAY_BYTES
