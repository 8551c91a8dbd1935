"""How long a user waits for a first result, in fresh processes, with cold and warm caches.

    python bench/first_result.py [--processes N] [--only import|gelu|loops|large|workloads]

0. Import: `python -X importtime -c "import numpy"` and `... "import tsjit"`, interleaved, the
   medians of their cumulative times and their difference (issue 10: at most 0.15 s), with
   the tsjit modules whose own import time is largest.
1. gelu on 1M float32: from `tsjit.script(gelu)` to the first *optimized* result (calls
   until the executor reports a launched kernel: profiling calls and calls served by the
   interpreter while the kernel compiles come first; if none launches within 30 s the
   figure is the first call's and marked "interpreter only"), and the first call's own
   time (interpreted when the kernel needs LLVM); for JAX, `jax.jit` and the
   first call; for Numba, `njit` of the loop and the first call.  tsjit is timed twice: with
   the disk cache off, and with a warm one (a private directory that one process filled
   first: the kernel and its driver load from disk, only the back end loads); Numba too:
   without a cache, and `njit(cache=True)` with a warm one.
2. Loop programs (bench/loop_workloads.py): decorate plus first call, for CPython (the
   plain function), tsjit and Numba `@njit` (its figure includes its whole compile), each
   compiler also with a warm cache ("tsjit warm": the disk cache, "numba cache":
   `njit(cache=True)`; one process per program fills them first). The summary gives
   tsjit's sums over Numba's, cold and warm, and tsjit's first call over CPython's where
   CPython takes 50 ms or more.
3. A 150-statement elementwise function (large_elementwise): time to its first result,
   and until its optimized code is in use (a kernel launched; calls repeat meanwhile).
4. Representative workloads (WORKLOADS: gelu and the LSTM cell, softmax, layer norm and
   the mse loss at a small and a large size, a scalar loop), each in fresh processes with
   the disk cache off (cold) and with a warm one: the first call (from `tsjit.script`) and
   the first result of optimized code (calls repeat until one runs no interpreter), with
   the default background compilation, interleaved (cold, warm) per round.

Each child process imports NumPy and its compiler first (reported apart for gelu), so no
figure includes another's warm caches but those it names. Each figure is the median over
N processes. The tsjit children run with the default background compilation, and with
TSJIT_DISK_CACHE=0 unless a warm cache is named.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from harness import Record, format_seconds, write_results

SIZE = 1 << 20
OPTIMIZED_WAIT_SECONDS = 30.0
LARGE_STATEMENTS = 150
LARGE_WAIT_SECONDS = 30.0


def _time_tsjit() -> tuple[float, int, bool, float]:
    import elementwise_workloads as w

    import tsjit
    x = np.random.default_rng(0).standard_normal(SIZE).astype(np.float32)
    start = time.perf_counter()
    gelu = tsjit.script(w.gelu)
    gelu(x)
    first_call = time.perf_counter() - start
    calls = 1
    while gelu.stats().get("kernel_launches", 0) == 0:
        if time.perf_counter() - start > OPTIMIZED_WAIT_SECONDS:
            return first_call, 1, False, first_call
        gelu(x)
        calls += 1
    return time.perf_counter() - start, calls, True, first_call


def _time_jax() -> tuple[float, int, bool, float]:
    import elementwise_workloads as w
    import jax
    import jax.numpy as jnp
    from peers import rebind
    x = np.random.default_rng(0).standard_normal(SIZE).astype(np.float32)
    start = time.perf_counter()
    jax.jit(rebind(w.gelu, {"np": jnp}))(x).block_until_ready()
    seconds = time.perf_counter() - start
    return seconds, 1, True, seconds


def _time_numba(cache: bool = False) -> tuple[float, int, bool, float]:
    import elementwise_workloads as w
    import numba
    x = np.random.default_rng(0).standard_normal(SIZE).astype(np.float32)
    start = time.perf_counter()
    numba.njit(fastmath=False, cache=cache)(w.gelu_loop)(x)
    seconds = time.perf_counter() - start
    return seconds, 1, True, seconds


# name -> (package, measure(): first optimized result (s), calls, optimized, first call (s))
MEASUREMENTS: dict[str, tuple[str, Callable[[], tuple[float, int, bool, float]]]] = {
    "tsjit": ("tsjit", _time_tsjit),
    "jax.jit": ("jax", _time_jax),
    "numba njit": ("numba", _time_numba),
    "numba njit cache=True": ("numba", lambda: _time_numba(cache=True)),
}

# loop programs: implementation -> (package imported first, decorator factory)
LOOP_IMPLEMENTATIONS: dict[str, tuple[str | None, Callable[[], Callable]]] = {
    "CPython": (None, lambda: (lambda fn: fn)),
    "tsjit": ("tsjit", lambda: __import__("tsjit").script),
    "tsjit warm": ("tsjit", lambda: __import__("tsjit").script),
    "numba njit": ("numba", lambda: __import__("numba").njit),
    "numba cache": ("numba", lambda: __import__("numba").njit(cache=True)),
}
# The implementations that run with a warm cache: a private directory filled by one
# process first (tsjit's disk cache, Numba's cache=True files).
WARM = ("tsjit warm", "numba cache")


def _block_other_compilers(package: str | None) -> None:
    for other in ("numba", "numexpr"):   # the workloads modules import them if they can: a
        if other != package:             # compiler warming up LLVM here would help another
            sys.modules[other] = None    # (None in sys.modules makes the import fail)


def _child(name: str) -> dict[str, object]:
    package, measure = MEASUREMENTS[name]
    _block_other_compilers(package)
    start = time.perf_counter()
    __import__(package)
    import_seconds = time.perf_counter() - start
    seconds, calls, optimized, first = measure()
    return {"seconds": seconds, "calls": calls, "optimized": optimized,
            "first_seconds": first, "import_seconds": import_seconds}


def _loop_child(implementation: str, program: str) -> dict[str, object]:
    package, decorator = LOOP_IMPLEMENTATIONS[implementation]
    _block_other_compilers(package)
    if package:
        __import__(package)
    import loop_workloads
    fn, inputs = loop_workloads.WORKLOADS[program]
    args = inputs()
    start = time.perf_counter()
    result = decorator()(fn)(*args)
    seconds = time.perf_counter() - start
    want = fn(*inputs())
    same = bool(np.array_equal(result, want)) if isinstance(want, np.ndarray) else \
        result == want
    return {"seconds": seconds, "same_as_cpython": same}


def large_elementwise_source(statements: int) -> str:
    """A function of `statements` elementwise statements, each reading the two before."""
    lines = ["def large(x: np.ndarray) -> np.ndarray:", "    a0 = x * 0.5", "    a1 = x + 1.0"]
    for k in range(2, statements):
        op = ("+", "-", "*")[k % 3]
        lines.append(f"    a{k} = a{k - 1} {op} a{k - 2} * {1 + k % 7}.0 / 8.0")
    lines.append(f"    return a{statements - 1}")
    return "\n".join(lines) + "\n"


def _large_child() -> dict[str, object]:
    import importlib
    import tempfile

    import tsjit
    folder = tempfile.mkdtemp()       # tsjit.script reads the function's source file
    Path(folder, "large_workload.py").write_text(
        "import numpy as np\n\n\n" + large_elementwise_source(LARGE_STATEMENTS))
    sys.path.insert(0, folder)
    large = importlib.import_module("large_workload").large
    x = np.random.default_rng(0).standard_normal(10_000)
    start = time.perf_counter()
    fn = tsjit.script(large)
    fn(x)
    first = time.perf_counter() - start
    while fn.stats()["kernel_launches"] == 0 and time.perf_counter() - start < LARGE_WAIT_SECONDS:
        fn(x)
        time.sleep(0.005)
    optimized = time.perf_counter() - start if fn.stats()["kernel_launches"] else None
    return {"first_seconds": first, "optimized_seconds": optimized}


def _workload(name: str) -> tuple[Callable, tuple]:
    """The function and arguments of a row of section 4."""
    import elementwise_workloads as ew
    import loop_workloads
    import reduction_workloads as rw
    rng = np.random.default_rng(0)

    def f32(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)
    rows = 4096 if name.endswith("large") else 64
    if name.startswith("mse loss"):
        x = f32(16 << 20) if name.endswith("large") else f32(64, 1024)
        return rw.mse_loss, (x, x + f32(*x.shape))
    made = {"gelu 1M": lambda: (ew.gelu, (f32(1 << 20),)),
            "lstm cell 256x1024": lambda: (ew.lstm_cell, (f32(256, 4096), f32(256, 1024))),
            "softmax": lambda: (rw.softmax, (f32(rows, 1024),)),
            "layer norm": lambda: (rw.layer_norm, (f32(rows, 1024), f32(1024), f32(1024)))}
    for prefix, make in made.items():
        if name.startswith(prefix):
            return make()
    fn, inputs = loop_workloads.WORKLOADS[name.removeprefix("loop: ")]
    return fn, inputs()


WORKLOADS = ["gelu 1M", "lstm cell 256x1024", "softmax [64,1024]", "softmax [4096,1024] large",
             "layer norm [64,1024]", "layer norm [4096,1024] large", "mse loss [64,1024]",
             "mse loss 16M large", "loop: count primes 30k"]
WORKLOAD_WAIT_SECONDS = 30.0


def _workload_child(name: str) -> dict[str, object]:
    _block_other_compilers("tsjit")
    import tsjit
    fn, args = _workload(name)
    start = time.perf_counter()
    scripted = tsjit.script(fn)
    scripted(*args)
    first = time.perf_counter() - start
    slow = None     # the calls so far that ran the interpreter (profiling or while compiling)
    while time.perf_counter() - start < WORKLOAD_WAIT_SECONDS:
        stats = scripted.stats()
        interpreted = stats["profiled_runs"] + stats["interpreted_runs"]
        if interpreted == slow and stats["specializations"]:
            return {"first_seconds": first, "optimized_seconds": time.perf_counter() - start}
        slow = interpreted
        scripted(*args)
    return {"first_seconds": first, "optimized_seconds": None}


def workloads_report(processes: int) -> list[Record]:
    import tempfile
    print(f"\nworkloads: first call and first optimized result, fresh processes (median of "
          f"{processes}; cold: disk cache off, warm: filled by one process first)")
    records = []
    for name in WORKLOADS:
        warm_cache = tempfile.mkdtemp(prefix="tsjit_first_result_")
        _fresh_process("workload", name, cache_dir=warm_cache)
        rounds = [{mode: _fresh_process("workload", name, cache_dir=directory)
                   for mode, directory in (("cold", None), ("warm", warm_cache))}
                  for _ in range(processes)]
        shutil.rmtree(warm_cache, ignore_errors=True)
        line = f"  {name:<30}"
        for mode in ("cold", "warm"):
            runs = [r[mode] for r in rounds]
            errors = [r["error"] for r in runs if "error" in r]
            for what in ("first", "optimized"):
                record = Record("first_result", f"{name}: {what} ({mode} disk cache)", "tsjit",
                                ours=True, samples=len(runs) - len(errors))
                done = [r[f"{what}_seconds"] for r in runs if r.get(f"{what}_seconds")]
                if errors:
                    record.status = f"failed: {errors[0]}"
                elif len(done) < len(runs):
                    record.status = f"no optimized result within {WORKLOAD_WAIT_SECONDS:.0f} s"
                if done:
                    record.first_call_seconds = statistics.median(done)
                records.append(record)
                line += f"  {mode} {what} {format_seconds(record.first_call_seconds):>9}"
        print(line)
    return records


def _fresh_process(*child_args: str, cache_dir: str | None = None) -> dict[str, object]:
    """Run a child; with ``cache_dir``, tsjit's disk cache and Numba's cache are there."""
    env = {**os.environ, "TSJIT_DISK_CACHE": "0"}
    if cache_dir is not None:
        env.update(TSJIT_DISK_CACHE="1", TSJIT_CACHE_DIR=cache_dir, NUMBA_CACHE_DIR=cache_dir)
    env.pop("TSJIT_BACKGROUND_COMPILE", None)
    completed = subprocess.run([sys.executable, __file__, "--child", *child_args],
                               capture_output=True, text=True, cwd=Path(__file__).parent,
                               env=env, check=False)
    if completed.returncode != 0:
        return {"error": (completed.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(completed.stdout.strip().splitlines()[-1])


def _installed(package: str | None) -> bool:
    if package is None:
        return True
    try:
        __import__(package)
    except ImportError:
        return False
    return True


def gelu_report(processes: int) -> list[Record]:
    print(f"\ngelu f32 1M: compile -> first optimized result, fresh processes "
          f"(median of {processes}; imports apart)")
    import tempfile
    records = []
    warm_cache = tempfile.mkdtemp(prefix="tsjit_first_result_")
    _fresh_process("gelu", "tsjit", cache_dir=warm_cache)      # fill the caches
    if _installed("numba"):
        _fresh_process("gelu", "numba njit cache=True", cache_dir=warm_cache)
    rows = [(name, name, warm_cache if "cache=True" in name else None)
            for name in MEASUREMENTS]
    rows.insert(1, ("tsjit", "tsjit, warm disk cache", warm_cache))
    width = max(len(label) for _, label, _ in rows)
    for name, label, cache_dir in rows:
        package = MEASUREMENTS[name][0]
        if not _installed(package):
            print(f"  {label:<{width}} not installed")
            continue
        runs = [_fresh_process("gelu", name, cache_dir=cache_dir) for _ in range(processes)]
        errors = [run["error"] for run in runs if "error" in run]
        record = Record("first_result", "gelu f32 1M: compile -> first optimized result", label,
                        ours=name == "tsjit", samples=len(runs) - len(errors))
        if errors:
            record.status = f"failed: {errors[0]}"
            print(f"  {label:<{width}} {record.status}")
        else:
            record.first_call_seconds = statistics.median(run["seconds"] for run in runs)
            imports = statistics.median(run["import_seconds"] for run in runs)
            first = statistics.median(run["first_seconds"] for run in runs)
            if not all(run["optimized"] for run in runs):
                record.status = (f"interpreter only: no kernel launched in "
                                 f"{OPTIMIZED_WAIT_SECONDS:.0f} s")
            calls = max(run["calls"] for run in runs)
            print(f"  {label:<{width}} {format_seconds(record.first_call_seconds):>9}  after "
                  f"{calls} call(s), the first {format_seconds(first)}  (import "
                  f"{format_seconds(imports)})"
                  + ("" if record.status == "ok" else f"  [{record.status}]"))
        records.append(record)
    shutil.rmtree(warm_cache, ignore_errors=True)
    return records


def loops_report(processes: int) -> list[Record]:
    import tempfile

    import loop_workloads
    print(f"\nloop programs: decorate + first call, fresh processes, caches off but for "
          f"{' and '.join(WARM)} (median of {processes})")
    implementations = [i for i, (package, _) in LOOP_IMPLEMENTATIONS.items()
                       if _installed(package)]
    print("  " + f"{'program':<28}" + "".join(f"{i:>13}" for i in implementations))
    records, totals = [], dict.fromkeys(implementations, 0.0)
    slow_ratios = []
    for program in loop_workloads.WORKLOADS:
        seconds = {}
        warm_cache = tempfile.mkdtemp(prefix="tsjit_first_result_")
        for implementation in WARM:
            if implementation in implementations:
                _fresh_process("loop", implementation, program, cache_dir=warm_cache)
        # interleaved: each round visits every implementation once (the machine's load
        # drifts; CPython's figure is the yardstick of tsjit's)
        rounds = [{i: _fresh_process("loop", i, program,
                                     cache_dir=warm_cache if i in WARM else None)
                   for i in implementations}
                  for _ in range(processes)]
        shutil.rmtree(warm_cache, ignore_errors=True)
        for implementation in implementations:
            runs = [r[implementation] for r in rounds]
            errors = [r["error"] for r in runs if "error" in r]
            record = Record("first_result", f"loop: {program}", implementation,
                            ours=implementation.startswith("tsjit"),
                            samples=len(runs) - len(errors))
            if errors:
                record.status = f"failed: {errors[0]}"
            else:
                record.first_call_seconds = statistics.median(r["seconds"] for r in runs)
                if not all(r["same_as_cpython"] for r in runs):
                    record.status = "result differs from CPython's"
                seconds[implementation] = record.first_call_seconds
                totals[implementation] += record.first_call_seconds
            records.append(record)
        peers = [s for i, s in seconds.items() if not i.startswith("tsjit")]
        for record in records[-len(implementations):]:
            if record.first_call_seconds is not None and peers:
                record.ratio_to_best_peer = record.first_call_seconds / min(peers)
        print("  " + f"{program:<28}" + "".join(
            f"{format_seconds(seconds.get(i)):>13}" for i in implementations)
            + "".join(f"  [{r.implementation}: {r.status}]"
                      for r in records[-len(implementations):] if r.status != "ok"))
        if "tsjit" in seconds and seconds.get("CPython", 0) >= 0.05:
            slow_ratios.append((program, seconds["tsjit"] / seconds["CPython"]))
    print("  " + f"{'sum':<28}" + "".join(f"{format_seconds(totals[i]):>13}"
                                           for i in implementations))
    for ours, theirs in (("tsjit", "numba njit"), ("tsjit warm", "numba cache")):
        if ours in totals and totals.get(theirs):
            print(f"  {ours} / {theirs}, summed: {totals[ours] / totals[theirs]:.2f}")
    for program, ratio in slow_ratios:
        print(f"  tsjit / CPython, {program}: {ratio:.2f}")
    return records


def large_report(processes: int) -> list[Record]:
    print(f"\n{LARGE_STATEMENTS}-statement elementwise function on 10k float64, fresh "
          f"processes (median of {processes})")
    runs = [_fresh_process("large") for _ in range(processes)]
    errors = [r["error"] for r in runs if "error" in r]
    first = Record("first_result", f"large elementwise ({LARGE_STATEMENTS} statements): first "
                   "result", "tsjit", ours=True, samples=len(runs) - len(errors))
    optimized = Record("first_result", f"large elementwise ({LARGE_STATEMENTS} statements): "
                       "optimized code in use", "tsjit", ours=True,
                       samples=len(runs) - len(errors))
    if errors:
        first.status = optimized.status = f"failed: {errors[0]}"
        print(f"  {first.status}")
        return [first, optimized]
    first.first_call_seconds = statistics.median(r["first_seconds"] for r in runs)
    done = [r["optimized_seconds"] for r in runs if r["optimized_seconds"] is not None]
    if len(done) < len(runs):
        optimized.status = f"no kernel launched within {LARGE_WAIT_SECONDS:.0f} s"
    if done:
        optimized.first_call_seconds = statistics.median(done)
    print(f"  first result {format_seconds(first.first_call_seconds)}, optimized code in use "
          f"after {format_seconds(optimized.first_call_seconds)}"
          + ("" if optimized.status == "ok" else f"  [{optimized.status}]"))
    return [first, optimized]


def _import_times(module: str) -> tuple[float, dict[str, float]]:
    """`module`'s cumulative import time in a fresh `python -X importtime` (s), and the self
    time of each tsjit module it imported."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                          capture_output=True, text=True, check=True)
    cumulative, own = None, {}
    for line in done.stderr.splitlines()[1:]:
        self_us, cumulative_us, name = line.split("|")
        name = name.strip()
        if name == module:
            cumulative = int(cumulative_us) / 1e6
        if name.startswith("tsjit"):
            own[name] = int(self_us.split(":")[1]) / 1e6
    return cumulative, own


def import_report(processes: int) -> list[Record]:
    print(f"\nimport: `python -X importtime -c 'import M'`, cumulative, fresh processes "
          f"(median of {processes}, interleaved)")
    runs = {"numpy": [], "tsjit": []}
    own: dict[str, list[float]] = {}
    for _ in range(processes):
        for module, times in runs.items():
            seconds, modules = _import_times(module)
            times.append(seconds)
            for name, s in modules.items():
                own.setdefault(name, []).append(s)
    records = []
    for module, times in runs.items():
        record = Record("first_result", "import", module, ours=module == "tsjit",
                        samples=len(times))
        record.first_call_seconds = statistics.median(times)
        records.append(record)
        print(f"  {module:<6} {format_seconds(record.first_call_seconds):>9}")
    over = records[1].first_call_seconds - records[0].first_call_seconds
    print(f"  tsjit over numpy: {format_seconds(over)}; its largest own (self) times:")
    for name, times in sorted(own.items(), key=lambda kv: -statistics.median(kv[1]))[:6]:
        print(f"    {name:<40} {format_seconds(statistics.median(times)):>9}")
    return records


SECTIONS = {"import": import_report, "gelu": gelu_report, "loops": loops_report,
            "large": large_report, "workloads": workloads_report}


def report(processes: int, only: str | None = None) -> list[Record]:
    records = []
    for name, section in SECTIONS.items():
        if only in (None, name):
            records += section(processes)
    write_results("first_result" if only is None else f"first_result_{only}", records,
                  {"processes": processes, "optimized_wait_seconds": OPTIMIZED_WAIT_SECONDS})
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--only", choices=sorted(SECTIONS))
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        child = {"gelu": _child, "loop": _loop_child, "large": _large_child,
                 "workload": _workload_child}[kind]
        print(json.dumps(child(*rest)))
    else:
        report(args.processes, args.only)


if __name__ == "__main__":
    main()
