"""Time from compiling gelu to its first optimized result on 1M float32, in fresh processes.

    python bench/first_result.py [--processes N]

What a user waits for once the modules are imported: for tsjit, `tsjit.script(gelu)` and
then calls until the executor reports a launched kernel (`stats()["kernel_launches"]`;
profiling calls come first; if none launches within 10 calls the figure is the first
call's and marked "interpreter only"); for JAX, `jax.jit` and the first call; for Numba,
`njit` of the loop and the first call. Each child process imports NumPy and its
compiler first (reported apart), so no figure includes another's warm caches. Each
figure is the median over N processes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from harness import Record, format_seconds, write_results

SIZE = 1 << 20
MAX_CALLS = 10


def _time_tsjit() -> tuple[float, int, bool]:
    import elementwise_workloads as w

    import tsjit
    x = np.random.default_rng(0).standard_normal(SIZE).astype(np.float32)
    start = time.perf_counter()
    gelu = tsjit.script(w.gelu)
    gelu(x)
    first_call = time.perf_counter() - start
    calls = 1
    while gelu.stats().get("kernel_launches", 0) == 0:
        if calls == MAX_CALLS:
            return first_call, 1, False
        gelu(x)
        calls += 1
    return time.perf_counter() - start, calls, True


def _time_jax() -> tuple[float, int, bool]:
    import elementwise_workloads as w
    import jax
    import jax.numpy as jnp
    from peers import rebind
    x = np.random.default_rng(0).standard_normal(SIZE).astype(np.float32)
    start = time.perf_counter()
    jax.jit(rebind(w.gelu, {"np": jnp}))(x).block_until_ready()
    return time.perf_counter() - start, 1, True


def _time_numba() -> tuple[float, int, bool]:
    import elementwise_workloads as w
    import numba
    x = np.random.default_rng(0).standard_normal(SIZE).astype(np.float32)
    start = time.perf_counter()
    numba.njit(fastmath=False)(w.gelu_loop)(x)
    return time.perf_counter() - start, 1, True


MEASUREMENTS: dict[str, tuple[str, Callable[[], tuple[float, int, bool]]]] = {
    "tsjit": ("tsjit", _time_tsjit),
    "jax.jit": ("jax", _time_jax),
    "numba njit": ("numba", _time_numba),
}


def _child(name: str) -> None:
    package, measure = MEASUREMENTS[name]
    for other in ("numba", "numexpr"):   # the workloads module imports them if it can: a
        if other != package:             # compiler warming up LLVM here would help another
            sys.modules[other] = None    # (None in sys.modules makes the import fail)
    start = time.perf_counter()
    __import__(package)
    import_seconds = time.perf_counter() - start
    seconds, calls, optimized = measure()
    print(json.dumps({"seconds": seconds, "calls": calls, "optimized": optimized,
                      "import_seconds": import_seconds}))


def _fresh_process(name: str) -> dict[str, object]:
    completed = subprocess.run([sys.executable, __file__, "--child", name], capture_output=True,
                               text=True, cwd=Path(__file__).parent, check=False)
    if completed.returncode != 0:
        return {"error": (completed.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(completed.stdout.strip().splitlines()[-1])


def report(processes: int) -> list[Record]:
    print(f"\ngelu f32 1M: compile -> first optimized result, fresh processes "
          f"(median of {processes}; imports apart)")
    records = []
    for name, (package, _) in MEASUREMENTS.items():
        try:
            __import__(package)
        except ImportError:
            print(f"  {name:<12} not installed")
            continue
        runs = [_fresh_process(name) for _ in range(processes)]
        errors = [run["error"] for run in runs if "error" in run]
        record = Record("first_result", "gelu f32 1M: compile -> first optimized result", name,
                        ours=name == "tsjit", samples=len(runs) - len(errors))
        if errors:
            record.status = f"failed: {errors[0]}"
            print(f"  {name:<12} {record.status}")
        else:
            record.first_call_seconds = statistics.median(run["seconds"] for run in runs)
            imports = statistics.median(run["import_seconds"] for run in runs)
            if not all(run["optimized"] for run in runs):
                record.status = f"interpreter only: no kernel launched in {MAX_CALLS} calls"
            calls = max(run["calls"] for run in runs)
            print(f"  {name:<12} {format_seconds(record.first_call_seconds):>9}  after {calls} "
                  f"call(s)  (import {format_seconds(imports)})"
                  + ("" if record.status == "ok" else f"  [{record.status}]"))
        records.append(record)
    write_results("first_result", records, {"processes": processes, "max_calls": MAX_CALLS})
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--child", choices=sorted(MEASUREMENTS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child)
    else:
        report(args.processes)


if __name__ == "__main__":
    main()
