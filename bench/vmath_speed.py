"""Throughput of the inline math library (tsjit.codegen.vmath) against NumPy, one thread.

    python bench/vmath_speed.py [--size N] [--samples K] [--functions exp,log,...]
    python bench/vmath_speed.py --against REV [--functions ...]   # this tree's vmath / REV's
    python bench/vmath_speed.py --every-float32 [--functions ...]     # accuracy only, ~1 h

Each function runs as a JIT-compiled vectorized loop (tests/_llvm_harness.py) over N
elements (default 16M) of float32 and float64, writing into a preallocated array; NumPy
writes into a preallocated array too (`out=`), so neither side pays for page faults. Times
are medians of K interleaved samples. sin, cos and tan run a second time on huge arguments
(every exponent from the inline Cody-Waite limit up: nearly every vector takes the
out-of-line Payne-Hanek path).
Before timing, every output is checked: its largest error in ulp against a higher-precision
reference (the tests' reference) is printed and must be at most 4. --every-float32 instead
measures the error of each one-argument function on every float32 input. --against REV
times the library of git revision REV (bench/revision_vmath.py) in place of NumPy, in the
same process, interleaved: the cost of a change to it, as "REV ms" and this tree's
speedup over REV.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import revision_vmath

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _llvm_harness import MathKernels, arity  # noqa: E402
from test_vmath import (  # noqa: E402
    CASES,
    MAX_ULP,
    log_uniform_magnitudes,
    reference,
    ulp_distance,
)

from tsjit.codegen import vmath, vmath_trig  # noqa: E402

# Inputs where each function does its typical work (neither saturated nor trivial).
DOMAINS: dict[str, tuple[tuple[float, float], ...]] = {
    "exp": ((-80, 80),), "expm1": ((-5, 5),), "log": ((1e-3, 1e3),), "log2": ((1e-3, 1e3),),
    "log10": ((1e-3, 1e3),), "log1p": ((-0.9, 10),), "tanh": ((-5, 5),),
    "sigmoid": ((-20, 20),), "sqrt": ((0, 1e3),), "sin": ((-100, 100),),
    "cos": ((-100, 100),), "tan": ((-100, 100),), "arctan": ((-10, 10),),
    "arctan2": ((-1, 1), (-1, 1)), "pow": ((0.1, 10), (-10, 10)), "erf": ((-4, 4),),
}
VERIFIED_ELEMENTS = 1 << 20  # compared against the (slow) long double reference


def numpy_into(name: str) -> Callable[..., np.ndarray] | None:
    """NumPy's fastest spelling of the function writing into ``out`` (None: no NumPy one)."""
    if name == "sigmoid":
        def sigmoid(x: np.ndarray, out: np.ndarray) -> np.ndarray:
            np.negative(x, out=out)
            np.exp(out, out=out)
            out += 1
            return np.reciprocal(out, out=out)

        return sigmoid
    if name == "erf":
        try:
            from scipy.special import erf
        except ImportError:
            return None
        return erf
    return {"pow": np.power}.get(name, getattr(np, name, None))


def seconds(run: Callable[..., object], *args: object, **kwargs: object) -> float:
    start = time.perf_counter()
    run(*args, **kwargs)
    return time.perf_counter() - start


def workloads(dtype: type, names: list[str], size: int) -> list[tuple[str, str, list]]:
    """(label, function, inputs) of each timed row."""
    rng = np.random.default_rng(0)
    rows = [(name, name, [rng.uniform(lo, hi, size).astype(dtype) for lo, hi in DOMAINS[name]])
            for name in names]
    limit = vmath_trig.LIMIT[np.dtype(dtype).name]
    rows += [(f"{name} huge", name, [log_uniform_magnitudes(dtype, limit, size, seed=0)])
             for name in names if name in ("sin", "cos", "tan")]
    return rows


def bench(dtype: type, names: list[str], size: int, samples: int,
          against: ModuleType | None = None) -> list[str]:
    """One row per workload: this tree's time, the other side's (NumPy, or the library
    ``against``), the speedup over it and the largest error in ulp."""
    kernels = MathKernels(dtype, names)
    other = None if against is None else MathKernels(dtype, names, library=against)
    rows = []
    for label, name, inputs in workloads(dtype, names, size):
        out, numpy_out = np.empty_like(inputs[0]), np.empty_like(inputs[0])
        kernels(name, *inputs, out=out)
        head = [a[:VERIFIED_ELEMENTS] for a in inputs]
        worst = float(ulp_distance(out[:VERIFIED_ELEMENTS], reference(name, *head)).max())
        if worst > MAX_ULP:
            raise AssertionError(f"{name} {np.dtype(dtype)}: {worst} ulp")
        numpy_fn = numpy_into(name) if other is None else functools.partial(other, name)
        vmath_times, numpy_times = [], []
        for _ in range(samples):  # interleaved: drift in machine load hits both sides
            vmath_times.append(seconds(kernels, name, *inputs, out=out))
            if numpy_fn is not None:
                numpy_times.append(seconds(numpy_fn, *inputs, out=numpy_out))
        vmath_ms = 1e3 * statistics.median(vmath_times)
        numpy_ms = 1e3 * statistics.median(numpy_times) if numpy_times else float("nan")
        rows.append(f"{label:9} {np.dtype(dtype).name:8} {vmath_ms:9.2f} {numpy_ms:9.2f} "
                    f"{numpy_ms / vmath_ms:8.2f}x {worst:8.0f}")
    return rows


def every_float32(names: list[str]) -> None:
    """Largest error and error histogram of each one-argument function over all 2**32
    float32 bit patterns, in chunks of 2**24."""
    names = [name for name in names if arity(name) == 1]
    kernels = MathKernels(np.float32, names)
    chunk = 1 << 24
    print(f"{'function':8} {'max ulp':>8}  count of results 0, 1, 2, 3, 4, >4 ulp off; worst x")
    for name in names:
        counts = np.zeros(MAX_ULP + 2, dtype=np.int64)
        worst, worst_x = 0.0, None
        for start in range(0, 1 << 32, chunk):
            bits = np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32)
            x = bits.view(np.float32)
            distance = ulp_distance(kernels(name, x), reference(name, x))
            counts += np.bincount(np.minimum(distance, MAX_ULP + 1).astype(np.int64),
                                  minlength=MAX_ULP + 2)
            i = int(np.argmax(distance))
            if distance[i] > worst:
                worst, worst_x = float(distance[i]), x[i]
        print(f"{name:8} {worst:8.0f}  {counts.tolist()}; {worst_x!r}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 24)
    parser.add_argument("--samples", type=int, default=7)
    parser.add_argument("--functions", default=",".join(sorted(vmath.SUPPORTED)))
    parser.add_argument("--every-float32", action="store_true",
                        help="measure accuracy on every float32 input instead of speed")
    parser.add_argument("--against", metavar="REV",
                        help="compare with the library of this git revision, not NumPy")
    args = parser.parse_args()
    names = args.functions.split(",")
    unknown = set(names) - set(CASES)
    if unknown:
        parser.error(f"unknown functions {sorted(unknown)}")
    if args.every_float32:
        every_float32(names)
        return
    print(f"{args.size} elements, median of {args.samples}, one thread; "
          f"max ulp measured on the first {VERIFIED_ELEMENTS} outputs")
    against = None if args.against is None else revision_vmath.load(args.against)
    other = "numpy" if against is None else args.against[:8]
    print(f"{'function':9} {'dtype':8} {'vmath ms':>9} {other + ' ms':>9} {'speedup':>9} "
          f"{'max ulp':>8}")
    for dtype in (np.float32, np.float64):
        for row in bench(dtype, names, args.size, args.samples, against):
            print(row, flush=True)


if __name__ == "__main__":
    main()
