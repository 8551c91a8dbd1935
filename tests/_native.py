"""Helpers for the tests of native scalar code (test_native_scalar.py, test_native_fuzz.py).

`native(fn)` scripts `fn`, lowers its graph's native regions and runs the result in the
interpreter (a NativeCall runs its compiled code), as the executor does after
specializing (but on the unspecialized graph, without profiling, so that each test sees
the native code on every call).  `check_native` compares that with eager Python on fresh
copies of each argument tuple: results (types included), exception classes, warnings and
argument mutations; it also requires that the region really ran natively.

Native ints are 64 bits wide; where a result leaves the int64 range the region runs again
in the interpreter (codegen/scalar/__init__.py), so eager Python is the reference there
too.
"""
from __future__ import annotations

import copy
import warnings

import numpy as np
from _differential import assert_same, outcome
from numpy.lib.array_utils import byte_bounds

import tsjit
from tsjit.codegen.scalar import NativeFunction
from tsjit.executor.pipeline import LoweringContext, lower
from tsjit.executor.stats import ExecutorStats
from tsjit.interpreter import compile_graph
from tsjit.passes.lower_native_regions import lower_native_regions

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1


def native(fn):
    """(callable running fn's graph with native regions, the regions' NativeFunctions)."""
    scripted = tsjit.script(fn)
    graph = scripted.graph.copy()
    lower_native_regions(graph)
    lower(graph, LoweringContext(scripted.name, "<test>", ExecutorStats(), fallback=None))
    regions = [n.attrs["runtime"] for n in graph.nodes() if n.kind == "prim::NativeCall"]
    return compile_graph(graph, scripted.name).fn, regions


def with_warnings(fn, args: tuple) -> tuple[tuple[str, object], list[tuple[type, str]]]:
    """The outcome of fn(*args) and the warnings it emitted (NumPy's, for instance)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = outcome(fn, args)
    return result, [(w.category, str(w.message)) for w in caught]


def same_layout_copy(value):
    """A deep copy in which an array keeps its strides (copy.deepcopy of a strided or
    reversed view gives a contiguous array, which would test another layout)."""
    if not isinstance(value, np.ndarray) or value.flags.c_contiguous \
            or value.flags.f_contiguous:
        return copy.deepcopy(value)
    low, high = byte_bounds(value)
    memory = np.empty(high - low, np.uint8)
    view = np.ndarray(value.shape, value.dtype, memory,
                      value.__array_interface__["data"][0] - low, value.strides)
    view[...] = value
    return view


def check_native(fn, *calls: tuple, natively: bool = True, reference=None
                 ) -> list[NativeFunction]:
    """Compare native fn with `reference` (eager fn unless given) on each call."""
    run, regions = native(fn)
    assert regions, f"{fn.__name__} has no native region"
    reference = reference or fn
    for args in calls:
        eager_args, native_args = ([same_layout_copy(a) for a in args] for _ in range(2))
        (want, warned), (got, warns) = (with_warnings(f, a) for f, a in (
            (reference, eager_args), (run, native_args)))
        assert warns == warned, f"{fn.__name__}{args!r}: warnings {warns} != {warned}"
        assert got[0] == want[0], f"{fn.__name__}{args!r}: native {got}, eager {want}"
        if want[0] == "raise":
            assert got[1] is want[1], f"{fn.__name__}{args!r}: {got[1]} != {want[1]}"
        else:
            assert_same(got[1], want[1], f"{fn.__name__}{args!r}")
        assert_same(list(native_args), list(eager_args), f"{fn.__name__}{args!r} arguments")
    if natively:
        assert sum(r.stats()["native_calls"] for r in regions) > 0, [r.unsupported
                                                                     for r in regions]
    return regions
