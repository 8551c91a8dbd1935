"""Micro-benchmarks of the fused elementwise kernel path (codegen + launcher), no frontend.

    python bench/kernel_micro.py [--json out.json]

Reports per-call cost at 16 elements, gelu and triad (a*x+y, fresh output and in place)
at 16M float32 against NumPy, and the compile latency of the gelu kernel in a fresh
process, cold and from the disk cache. Timings interleave tsjit and NumPy in one process
and report the median of 15+ samples; every output is checked against NumPy first.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_elementwise_kernels import GELU_CONSTANTS, gelu_spec, triad_spec  # noqa: E402

from tsjit.codegen.launch import compile_kernel  # noqa: E402

SAMPLES = 15


def compare(label: str, contenders: dict[str, Callable[[], object]], calls: int) -> dict:
    """Time the contenders interleaved (round-robin per sample), print and return medians."""
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(SAMPLES):
        for name, fn in contenders.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            samples[name].append((time.perf_counter() - start) / calls)
    medians = {name: statistics.median(s) for name, s in samples.items()}
    base = medians["numpy"]
    cells = "  ".join(
        f"{name} {t * 1e6:10.2f} us ({base / t:5.2f}x numpy)" for name, t in medians.items()
    )
    print(f"{label:34s} {cells}")
    return {"label": label, "seconds": medians}


def numpy_gelu(x: np.ndarray) -> np.ndarray:
    c = [np.float32(v) for v in GELU_CONSTANTS]
    return c[0] * x * (c[1] + np.tanh(c[2] * (x + c[3] * x * x * x)))


def bench_gelu(n: int, calls: int) -> dict:
    kernel = compile_kernel(gelu_spec())
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    got, want = kernel(x, *GELU_CONSTANTS)[0], numpy_gelu(x)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-6)
    return compare(
        f"gelu float32 n={n}",
        {"numpy": lambda: numpy_gelu(x), "tsjit": lambda: kernel(x, *GELU_CONSTANTS)},
        calls,
    )


def bench_triad(n: int, calls: int) -> list[dict]:
    fresh, inplace = compile_kernel(triad_spec()), compile_kernel(triad_spec(inplace=True))
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    a = np.float32(1.5)
    assert np.array_equal(fresh(x, y, a)[0], a * x + y)
    out, tmp = y.copy(), np.empty_like(y)

    def numpy_inplace() -> None:
        np.multiply(x, a, out=tmp)
        np.add(out, tmp, out=out)

    # "tsjit-new-page": a new np.empty output every call, as without the output pool: on
    # large arrays the first touch of fresh pages is what the pool saves.
    return [
        compare(f"triad a*x+y fresh n={n}",
                {"numpy": lambda: a * x + y, "tsjit": lambda: fresh(x, y, a),
                 "tsjit-new-pages": lambda: fresh(x, y, a, out=(np.empty_like(y),))}, calls),
        compare(f"triad y += a*x in place n={n}",
                {"numpy": numpy_inplace, "tsjit": lambda: inplace(x, out, a)}, calls),
    ]


_LATENCY_SNIPPET = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {tests!r})
    import numpy as np
    from test_elementwise_kernels import GELU_CONSTANTS, gelu_spec
    from tsjit.codegen.launch import compile_kernel
    x = np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32)
    start, start_cpu = time.perf_counter(), time.process_time()
    kernel = compile_kernel(gelu_spec())
    kernel(x, *GELU_CONSTANTS)
    print((time.perf_counter() - start) * 1e3, (time.process_time() - start_cpu) * 1e3)
    """
)


def bench_compile_latency() -> dict:
    """Fresh processes: compile gelu and run it on 1M elements (imports excluded; the C
    runtime is loaded inside the timed part, as on a real first call). Wall and CPU time:
    on a shared machine the CPU time is the stable figure."""
    snippet = _LATENCY_SNIPPET.format(tests=str(Path(__file__).resolve().parents[1] / "tests"))
    results = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "TSJIT_CACHE_DIR": cache}
        for label, runs in (("cold", 1), ("disk cached", 5)):
            times = [
                [float(t) for t in
                 subprocess.check_output([sys.executable, "-c", snippet], env=env).split()]
                for _ in range(runs)
            ]
            wall, cpu = (statistics.median(column) for column in zip(*times))
            results[label] = {"wall_ms": wall, "cpu_ms": cpu}
            print(f"gelu 1M: compile + first call, fresh process, {label}: "
                  f"{wall:.1f} ms wall, {cpu:.1f} ms CPU")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    report = {
        "small": [bench_gelu(16, 20000), *bench_triad(16, 20000)],
        "medium": [bench_gelu(10_000, 2000)],
        "large": [bench_gelu(1 << 24, 3), *bench_triad(1 << 24, 3)],
        "compile_ms": bench_compile_latency(),
    }
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
