"""Scalar loops (issue 4): native scalar code against Numba's @njit and CPython.

    python bench/scalar_loops.py [--quick] [--only WORD ...]

1. collatz: total steps of the Collatz sequences of 1..300000 (int `//`, `%`, branches,
   a while loop inside a for loop);
2. recurrence: `s += (i % 7) * 0.5 - s * 1e-7` over 10**7 iterations (a float
   recurrence: every step depends on the previous one);
3. mandelbrot: escape counts (at most 200 iterations) of a 400x400 grid written into an
   int32 array by nested loops (`out[r, c] = k`);
4. counted loops (bench/loop_workloads.py's COUNTED_LOOPS): a range() counter and a body
   without branches, which Numba unrolls and vectorizes: int sums of `i % 1000`,
   `i & 255`, a multiplicative hash, an LCG; float64 sum and dot product of arrays (a
   float sum is sequential in Python: no reordering for anyone, Numba included), an int64
   sum, `out[i] = a[i] * 2 + b[i]`, a matrix-vector product, a float64 prefix sum, a
   bincount (`counts[values[i]] += 1`). CPython is left out of these (its 1M iterations
   take 50-150 ms a call); the CPython function computes the reference.
Every implementation runs the same Python function (tsjit.script, numba.njit, CPython);
results are checked against the CPython function (collatz, recurrence) or a vectorized
NumPy computation of the same arithmetic (mandelbrot, which CPython takes about a minute
for).  Times per call are medians of interleaved samples (bench/harness.py); results go
to bench/results/scalar_loops.json and .png.  The per-call overhead of a small native
function (`add(a: int, b: int) -> int`) is measured by bench/call_overhead.py.
"""

from __future__ import annotations

import sys

import numpy as np
import peers
from element_loops import fresh_arrays, numba_returning
from harness import Case, Implementation, parse_selection, run_suite
from loop_workloads import COUNTED_LOOPS

import tsjit


def collatz(n: int) -> int:
    total = 0
    for i in range(1, n + 1):
        x = i
        while x != 1:
            if x % 2 == 0:
                x = x // 2
            else:
                x = 3 * x + 1
            total += 1
    return total


def recurrence(n: int) -> float:
    s = 0.0
    for i in range(n):
        s += (i % 7) * 0.5 - s * 1e-7
    return s


def mandelbrot(out: tsjit.Tensor, x0: float, y0: float, step: float,
               max_iter: int) -> tsjit.Tensor:
    for r in range(out.shape[0]):
        ci = y0 + r * step
        for c in range(out.shape[1]):
            cr = x0 + c * step
            zr = 0.0
            zi = 0.0
            k = 0
            while k < max_iter and zr * zr + zi * zi <= 4.0:
                zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
                k += 1
            out[r, c] = k
    return out


def mandelbrot_numpy(out: np.ndarray, x0: float, y0: float, step: float,
                     max_iter: int) -> np.ndarray:
    """The same arithmetic on whole arrays (the reference for `mandelbrot`)."""
    rows, cols = out.shape
    cr = np.broadcast_to(x0 + np.arange(cols) * step, out.shape)
    ci = np.broadcast_to((y0 + np.arange(rows) * step)[:, None], out.shape)
    zr, zi = np.zeros(out.shape), np.zeros(out.shape)
    count = np.zeros(out.shape, dtype=out.dtype)
    active = np.ones(out.shape, dtype=bool)
    with np.errstate(all="ignore"):        # escaped points may overflow; they are frozen
        for _ in range(max_iter):
            active &= zr * zr + zi * zi <= 4.0
            if not active.any():
                break
            zr, zi = (np.where(active, zr * zr - zi * zi + cr, zr),
                      np.where(active, 2.0 * zr * zi + ci, zi))
            count += active
    return count


def _implementations(fn, cpython: bool) -> list[Implementation]:
    impls = [peers.tsjit_script(fn)]
    if peers.installed("numba"):
        import numba
        impls.append(Implementation("numba njit", lambda: numba.njit(fn)))
    if cpython:
        impls.append(peers.plain("CPython", fn))
    return impls


def _own_output(args: tuple) -> tuple:
    """Each implementation writes its own array (a stale one cannot pass the check)."""
    return (np.zeros_like(args[0]), *args[1:])


def counted_cases() -> list[Case]:
    """The counted loops (the same sizes with --quick: a call takes about a millisecond)."""
    chosen = []
    for name, (fn, inputs) in COUNTED_LOOPS.items():
        impls = [peers.tsjit_script(fn)]
        if peers.installed("numba"):
            impls.append(numba_returning(fn, type(fn(*inputs()))))
        chosen.append(Case(name, fn, inputs(), [
            Implementation(i.name, i.compile, fresh_arrays(inputs), i.ours) for i in impls]))
    return chosen


def cases(quick: bool) -> list[Case]:
    n_collatz, n_recurrence, size = (30_000, 10**5, 64) if quick else (300_000, 10**7, 400)
    grid = (np.zeros((size, size), dtype=np.int32), -2.0, -1.25, 2.5 / size, 200)
    mandelbrot_impls = [Implementation(i.name, i.compile, _own_output, i.ours)
                        for i in _implementations(mandelbrot, cpython=False)]
    return [
        Case(f"collatz 1..{n_collatz}", collatz, (n_collatz,),
             _implementations(collatz, cpython=True)),
        Case(f"recurrence {n_recurrence} steps", recurrence, (n_recurrence,),
             _implementations(recurrence, cpython=True)),
        Case(f"mandelbrot {size}x{size} int32, 200 iterations", mandelbrot_numpy, grid,
             mandelbrot_impls, notes=("CPython is left out: about a minute per call",)),
    ]


def main(argv: list[str] | None = None) -> None:
    settings, only = parse_selection(__doc__.splitlines()[0], argv)
    chosen = cases(settings.quick) + counted_cases()
    if only:
        chosen = [c for c in chosen if any(word in c.name for word in only)]
    peers.report_missing()
    run_suite("scalar_loops", chosen, settings)

if __name__ == "__main__":
    main(sys.argv[1:])
