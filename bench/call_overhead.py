"""Per-call overhead (issues 2 and 4): what calling a compiled function costs over its work.

    python bench/call_overhead.py [--quick]

1. `add(a: int, b: int) -> int: return a + b` on (1, 2) through tsjit.script, CPython,
   Numba njit and torch.jit.script: the cost of a call that does no work.
2. A guarded fused kernel on 16 float32 elements, the triad `2.5 * x + y`: argument and
   guard checks plus a kernel launch, against NumPy, Numba (loop) and JAX jit.
Times per call are medians of interleaved samples, each a batch of thousands of calls
(bench/harness.py); results go to bench/results/call_overhead.json and .png.
"""

from __future__ import annotations

import sys

import elementwise_workloads as w
import numpy as np
import peers
from harness import Case, Implementation, parse_settings, run_suite


def add(a: int, b: int) -> int:
    return a + b


def _add_case() -> Case:
    impls = [peers.tsjit_script(add), peers.plain("CPython", add)]
    if peers.installed("numba"):
        import numba
        impls.append(Implementation("numba njit", lambda: numba.njit(add)))
    if peers.installed("torch"):
        impls.append(peers.torch_jit_script(add))
    return Case("add(1, 2) on ints", add, (1, 2), impls)


def _fused_kernel_case() -> Case:
    impls = [peers.tsjit_script(w.triad), peers.plain("numpy", w.triad)]
    if peers.installed("numba"):
        impls += peers.numba_loops(w.triad_loop)[:1]   # no threads for 16 elements
    if peers.installed("jax"):
        impls.append(peers.jax_jit(w.triad))
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(16).astype(np.float32) for _ in range(2))
    return Case("triad 2.5 * x + y, 16 float32", w.triad, (2.5, x, y), impls)


def main(argv: list[str] | None = None) -> None:
    settings = parse_settings(__doc__.splitlines()[0], argv)
    peers.report_missing()
    run_suite("call_overhead", [_add_case(), _fused_kernel_case()], settings)


if __name__ == "__main__":
    main(sys.argv[1:])
