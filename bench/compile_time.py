"""How compile time grows with program size (issue 10): it should grow at most linearly.

    python bench/compile_time.py [--quick]

Four dimensions, each in a fresh process per point (disk cache off, compilation
synchronous, one warm-up compile first so LLVM's start-up is not counted):
1. statements: an elementwise function of N statements, each reading the two before
   (bench/first_result.py's large function);
2. ops per expression: one statement of N elementwise ops;
3. loop nesting: N nested loops around a scalar update of an array element (native code);
4. specializations: one function called with N dtypes (a specialization each).
The figure is the first call (specialization and compile; inputs are small, so running
takes microseconds), and for 4 the sum over the N first calls.  Results go to
bench/results/compile_time.json and .png (time against size, log-log, with the linear
trend through the smallest point for comparison).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from first_result import large_elementwise_source
from harness import RESULTS_DIR, format_seconds, machine_description

DTYPES = ("float64", "float32", "int64", "int32", "int16", "int8", "uint32", "uint16")


def statements_source(n: int) -> str:
    return large_elementwise_source(max(n, 3))


def expression_source(n: int) -> str:
    terms = " + ".join(f"x * {k + 1}.5" for k in range((n + 1) // 2))
    return f"def large(x: np.ndarray) -> np.ndarray:\n    return {terms}\n"


def nesting_source(n: int) -> str:
    lines = ["def large(x: np.ndarray) -> np.ndarray:"]
    for depth in range(n):
        lines.append("    " * (depth + 1) + f"for i{depth} in range(2):")
    index = " + ".join(f"i{d}" for d in range(n))
    lines.append("    " * (n + 1) + f"x[{index}] = x[{index}] * 0.5 + {n}.0")
    lines.append("    return x")
    return "\n".join(lines) + "\n"


def specializations_source(n: int) -> str:
    return "def large(x: np.ndarray) -> np.ndarray:\n    return x * 3 + x * x - (x + 1) * 2\n"


DIMENSIONS = {
    "statements": (statements_source, (10, 20, 40, 80, 160, 320)),
    "ops per expression": (expression_source, (8, 16, 32, 64, 128, 256)),
    "loop nesting": (nesting_source, (1, 2, 3, 4, 5, 6)),
    "specializations": (specializations_source, (1, 2, 4, 8)),
}


def _child(dimension: str, size: int) -> dict[str, float]:
    import tsjit
    tsjit.set_background_compilation(False)
    source, _ = DIMENSIONS[dimension]
    folder = tempfile.mkdtemp()      # tsjit.script reads the function's source file
    Path(folder, "compile_time_warmup.py").write_text(
        "import numpy as np\n\n\ndef warm(x: np.ndarray) -> np.ndarray:\n"
        "    return x * 2.0 + 1.0\n")
    Path(folder, "compile_time_workload.py").write_text(
        "import numpy as np\n\n\n" + source(size))
    sys.path.insert(0, folder)
    warm = importlib.import_module("compile_time_warmup").warm
    tsjit.script(warm)(np.ones(8))
    large = importlib.import_module("compile_time_workload").large
    if dimension == "specializations":
        inputs = [np.arange(16).astype(d) for d in DTYPES[:size]]
    elif dimension == "loop nesting":
        inputs = [np.zeros(2 * size + 1)]
    else:
        inputs = [np.linspace(-1, 1, 64)]
    start = time.perf_counter()
    fn = tsjit.script(large)
    script_seconds = time.perf_counter() - start
    compile_seconds = 0.0
    for x in inputs:
        start = time.perf_counter()
        fn(x)
        compile_seconds += time.perf_counter() - start
    return {"script_seconds": script_seconds, "compile_seconds": compile_seconds,
            "specializations": fn.stats()["specializations"]}


def _fresh_process(dimension: str, size: int) -> dict[str, float]:
    env = {**os.environ, "TSJIT_DISK_CACHE": "0"}
    completed = subprocess.run(
        [sys.executable, __file__, "--child", dimension, str(size)], capture_output=True,
        text=True, cwd=Path(__file__).parent, env=env, check=False)
    if completed.returncode != 0:
        return {"error": (completed.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(completed.stdout.strip().splitlines()[-1])


def report(processes: int) -> dict[str, list[dict[str, object]]]:
    results: dict[str, list[dict[str, object]]] = {}
    for dimension, (_, sizes) in DIMENSIONS.items():
        print(f"\n{dimension}: script() and first call(s), fresh processes "
              f"(median of {processes})")
        rows = []
        for size in sizes:
            runs = [_fresh_process(dimension, size) for _ in range(processes)]
            errors = [r["error"] for r in runs if "error" in r]
            if errors:
                print(f"  {size:>5}  failed: {errors[0]}")
                rows.append({"size": size, "error": errors[0]})
                continue
            row = {"size": size,
                   "script_seconds": statistics.median(r["script_seconds"] for r in runs),
                   "compile_seconds": statistics.median(r["compile_seconds"] for r in runs)}
            base = rows[0] if rows and "compile_seconds" in rows[0] else row
            growth = (row["compile_seconds"] / base["compile_seconds"]) / (size / base["size"])
            print(f"  {size:>5}  script {format_seconds(row['script_seconds']):>9}  first "
                  f"call(s) {format_seconds(row['compile_seconds']):>9}  "
                  f"(time/size vs the smallest: {growth:.2f}x)")
            rows.append(row)
        results[dimension] = rows
    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / "compile_time.json"
    path.write_text(json.dumps({"suite": "compile_time", "settings": {"processes": processes},
                                "machine": machine_description(), "results": results},
                               indent=1))
    print(f"\nwrote {path}")
    _plot(results)
    return results


def _plot(results: dict[str, list[dict[str, object]]]) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)")
        return
    figure, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.4))
    for axis, (dimension, rows) in zip(axes, results.items()):
        rows = [r for r in rows if "compile_seconds" in r]
        if not rows:
            continue
        sizes = [r["size"] for r in rows]
        seconds = [r["compile_seconds"] for r in rows]
        axis.loglog(sizes, seconds, "o-", color="tab:red", label="tsjit")
        axis.loglog(sizes, [seconds[0] * s / sizes[0] for s in sizes], "--", color="gray",
                    label="linear")
        axis.set_title(dimension, fontsize=9)
        axis.set_xlabel("size", fontsize=8)
        axis.set_ylabel("seconds", fontsize=8)
        axis.legend(fontsize=7)
    figure.tight_layout()
    path = RESULTS_DIR / "compile_time.png"
    figure.savefig(path, dpi=110)
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one process per point")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child[0], int(args.child[1]))))
    else:
        report(1 if args.quick else 3)


if __name__ == "__main__":
    main()
