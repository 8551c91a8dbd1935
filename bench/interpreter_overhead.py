"""Cost of the reference interpreter against CPython running the plain function.

    python bench/interpreter_overhead.py [--quick]

1. Call overhead of the graph of `a + b` (ints): the generated function, the
   CompiledGraph wrapper, and a full `tsjit.script` call (argument checks, executor).
2. Scalar loops, interpreter only (the canonical graph compiled by the interpreter,
   called directly): collatz total steps for 1..300000, and
   `s += (i % 7) * 0.5 - s * 1e-7` for 10**6 iterations.
Each figure is the median of several runs.
"""
from __future__ import annotations

import argparse
import statistics
import time
import timeit

from scalar_loops import collatz, recurrence  # the workloads issue 4 times against Numba

import tsjit
from tsjit.interpreter import compile_graph
from tsjit.passes import run_canonical_passes


def add(a: int, b: int) -> int:
    return a + b


def per_call_ns(fn, *args, number: int = 200_000, repeat: int = 7) -> float:
    timer = timeit.Timer("fn(*args)", globals={"fn": fn, "args": args})
    return statistics.median(timer.repeat(repeat, number)) / number * 1e9


def median_seconds(fn, *args, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interpreted(python_fn):
    """The interpreter's function for the scripted graph after the canonical passes."""
    graph = tsjit.script(python_fn).graph.copy()
    run_canonical_passes(graph)
    return compile_graph(graph, python_fn.__name__)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller loops, fewer runs")
    quick = parser.parse_args().quick
    repeat = 3 if quick else 5

    compiled = interpreted(add)
    scripted = tsjit.script(add)
    assert compiled(1, 2) == scripted(1, 2) == add(1, 2)
    python_ns = per_call_ns(add, 1, 2)
    print("call overhead of `a + b` (ints), ns per call (median of 7 x 200000 calls)")
    print(f"  CPython function                 {python_ns:8.0f}")
    for label, fn in (("generated function (.fn)", compiled.fn),
                      ("CompiledGraph.__call__", compiled),
                      ("tsjit.script function", scripted)):
        ns = per_call_ns(fn, 1, 2)
        print(f"  {label:32} {ns:8.0f}   (+{ns - python_ns:.0f} over CPython)")

    print(f"\nscalar loops, seconds (median of {repeat} runs), interpreter only")
    for fn, arg in ((collatz, 30_000 if quick else 300_000),
                    (recurrence, 100_000 if quick else 1_000_000)):
        compiled = interpreted(fn)
        assert compiled(arg) == fn(arg)
        cpython = median_seconds(fn, arg, repeat=repeat)
        ours = median_seconds(compiled.fn, arg, repeat=repeat)
        print(f"  {fn.__name__}({arg}):  CPython {cpython:.3f}  interpreter {ours:.3f}  "
              f"ratio {ours / cpython:.2f}x")


if __name__ == "__main__":
    main()
