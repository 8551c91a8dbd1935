"""Element loops: the loops over array elements users write, steady state against Numba.

    python bench/element_loops.py [--quick] [--only NAME ...]

The loop programs of bench/loop_workloads.py (pairwise distances, histogram by hand,
running max drawdown, prefix sum, 2-d smoothing, prime count) and a few more shapes:
an edit distance over int32 arrays with an int64 table, a float32 exponential moving
average (NEP 50: a Python float keeps float32 arithmetic float32), a float32 dot product
returned as a NumPy scalar, and a per-class sum of float64 values keyed by int64 labels.
Each runs the same Python function through tsjit.script, numba.njit and plain CPython,
after the harness's warmup calls (profiling and compilation are not timed: first calls
are bench/first_result.py's subject).  tsjit compiles synchronously here: with the
default background tier, a compile slower than the few warmup calls (under load) left
the timed calls in the interpreter.  The reference is the plain CPython function,
so the results are checked for the same Python type (np.float64 is not float) as well as
values.  Results go to bench/results/element_loops.json and .png.
"""

from __future__ import annotations

import sys

import numpy as np
import peers
from harness import Case, Implementation, parse_selection, run_suite
from loop_workloads import WORKLOADS

import tsjit


def edit_distance(a: np.ndarray, b: np.ndarray, table: np.ndarray) -> np.ndarray:
    n = a.shape[0]
    m = b.shape[0]
    for i in range(n + 1):
        table[i, 0] = i
    for j in range(m + 1):
        table[0, j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            best = table[i - 1, j - 1] + cost
            if table[i - 1, j] + 1 < best:
                best = table[i - 1, j] + 1
            if table[i, j - 1] + 1 < best:
                best = table[i, j - 1] + 1
            table[i, j] = best
    return table[n, m]


def ewma_float32(x: np.ndarray, out: np.ndarray, alpha: float) -> np.ndarray:
    level = x[0]
    for i in range(x.shape[0]):
        level = alpha * x[i] + (1.0 - alpha) * level
        out[i] = level
    return out


def dot_float32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    s = a[0] * b[0]
    for i in range(1, a.shape[0]):
        s += a[i] * b[i]
    return s


def class_sums(labels: np.ndarray, values: np.ndarray, sums: np.ndarray) -> np.ndarray:
    for k in range(sums.shape[0]):
        sums[k] = 0.0
    for i in range(labels.shape[0]):
        k = int(labels[i])
        sums[k] += values[i]
    return sums


def _rng() -> np.random.Generator:
    return np.random.default_rng(1)


EXTRA_WORKLOADS = {
    "edit distance int32 300x300": (
        edit_distance, lambda: (_rng().integers(0, 4, 300).astype(np.int32),
                                _rng().integers(0, 4, 300).astype(np.int32),
                                np.zeros((301, 301), np.int64))),
    "ewma float32 200k": (
        ewma_float32, lambda: (_rng().standard_normal(200_000).astype(np.float32),
                               np.zeros(200_000, np.float32), 0.125)),
    "dot float32 200k": (
        dot_float32, lambda: (_rng().standard_normal(200_000).astype(np.float32),
                              _rng().standard_normal(200_000).astype(np.float32))),
    "class sums int64 labels 200k": (
        class_sums, lambda: (_rng().integers(0, 16, 200_000), _rng().standard_normal(200_000),
                             np.zeros(16))),
}


def numba_returning(fn, result_type: type) -> Implementation:
    """Numba returns NumPy scalars as Python numbers: its result is converted back to the
    reference's type (one call's cost, against loops of 100 us and more), so that it passes
    the same check."""
    import numba

    def compile():
        compiled = numba.njit(fn)
        if not issubclass(result_type, np.generic):
            return compiled
        return lambda *args: result_type(compiled(*args))
    return Implementation("numba njit", compile)


def _tsjit(fn) -> Implementation:
    def compile():
        tsjit.set_background_compilation(False)
        return tsjit.script(fn)
    return Implementation("tsjit", compile, ours=True)


def _implementations(fn, result_type: type) -> list[Implementation]:
    impls = [_tsjit(fn)]
    if peers.installed("numba"):
        impls.append(numba_returning(fn, result_type))
    impls.append(peers.plain("CPython", fn))
    return impls


def fresh_arrays(inputs):
    """Each implementation gets its own copy of the arguments (outputs written in place
    cannot pass one implementation's result off as another's)."""
    return lambda args: tuple(a.copy() if isinstance(a, np.ndarray) else a for a in inputs())


def cases(only: list[str] | None) -> list[Case]:
    chosen = []
    for name, (fn, inputs) in {**WORKLOADS, **EXTRA_WORKLOADS}.items():
        if only and not any(word in name for word in only):
            continue
        result_type = type(fn(*inputs()))
        impls = [Implementation(i.name, i.compile, fresh_arrays(inputs), i.ours)
                 for i in _implementations(fn, result_type)]
        chosen.append(Case(name, fn, inputs(), impls))
    return chosen


def main(argv: list[str] | None = None) -> None:
    settings, only = parse_selection(__doc__.splitlines()[0], argv)
    peers.report_missing()
    run_suite("element_loops", cases(only), settings)

if __name__ == "__main__":
    main(sys.argv[1:])
