"""Issue 3's elementwise suite: tsjit against NumPy, numexpr, Numba, JAX and torch.compile.

    python bench/elementwise.py [--quick]

Workloads (bench/elementwise_workloads.py) at small and large sizes: gelu, the LSTM
cell's pointwise part, Black-Scholes (float64), bias+relu, the triad a*x+y into a fresh
array and into out[:], softplus. Prints a table per case (time per call, ratio to the
best peer, samples, first call), writes bench/results/elementwise.json and .png, then
times "script -> first optimized result" of gelu on 1M float32 in fresh processes
(bench/first_result.py). --quick divides the large sizes by 16 and takes 3 samples.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import elementwise_workloads as w
import first_result
import numpy as np
import peers
from harness import Case, Implementation, Settings, parse_settings, run_suite


@dataclass(frozen=True)
class Workload:
    """One formula in every peer's form; absent forms mean the peer has no way to write it."""

    name: str
    numpy: Callable
    numexpr: Callable | None = None
    numba_loop: Callable | None = None
    numpy_variants: dict[str, Callable] = field(default_factory=dict)
    overwritten_args: tuple[int, ...] = ()

    def implementations(self) -> tuple[list[Implementation], tuple[str, ...]]:
        impls = [peers.tsjit_script(self.numpy), peers.plain("numpy", self.numpy)]
        impls += [peers.plain(f"numpy {label}", fn) for label, fn in self.numpy_variants.items()]
        notes = []
        if self.numexpr and peers.installed("numexpr"):
            impls.append(peers.plain("numexpr", self.numexpr))
        if self.numba_loop and peers.installed("numba"):
            impls += peers.numba_loops(self.numba_loop)
        if self.overwritten_args:
            notes.append("jax.jit absent: JAX arrays are immutable, it cannot write into out")
        elif peers.installed("jax"):
            impls.append(peers.jax_jit(self.numpy))
        if peers.installed("torch"):
            impls.append(peers.torch_compile(self.numpy))
        return impls, tuple(notes)


GELU = Workload("gelu", w.gelu, w.gelu_numexpr, w.gelu_loop,
                numpy_variants={"x*x*x": w.gelu_cubed_by_products})
LSTM_CELL = Workload("lstm_cell", w.lstm_cell, w.lstm_cell_numexpr, w.lstm_cell_loop)
BLACK_SCHOLES = Workload("black_scholes", w.black_scholes, w.black_scholes_numexpr,
                         w.black_scholes_loop)
BIAS_RELU = Workload("bias_relu", w.bias_relu, w.bias_relu_numexpr, w.bias_relu_loop)
TRIAD = Workload("triad", w.triad, w.triad_numexpr, w.triad_loop)
TRIAD_INTO = Workload("triad_into", w.triad_into, w.triad_into_numexpr, w.triad_into_loop,
                      numpy_variants={"ufuncs out=": w.triad_into_ufuncs},
                      overwritten_args=(3,))
SOFTPLUS = Workload("softplus", w.softplus, w.softplus_numexpr, w.softplus_loop)

M = 1 << 20


def _case(workload: Workload, label: str, args: tuple) -> Case:
    impls, notes = workload.implementations()
    return Case(f"{workload.name} {label}", workload.numpy, args, impls,
                workload.overwritten_args, notes)


def _size_label(n: int) -> str:
    """16M is 16 * 2**20 and 64k is 2**16 (powers of two); 10M is 10**7 and 10k 10**4."""
    for unit, scale in (("M", M), ("M", 1_000_000), ("k", 1024), ("k", 1000)):
        if n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def cases(settings: Settings) -> Iterator[Case]:
    """Inputs are made as each case starts, so one case's arrays are alive at a time."""
    rng = np.random.default_rng(0)
    shrink = 16 if settings.quick else 1

    def normal(*shape: int, dtype: type = np.float32) -> np.ndarray:
        return rng.standard_normal(shape).astype(dtype)

    for n in (16, 10_000, M // shrink, 16 * M // shrink):
        yield _case(GELU, f"f32 {_size_label(n)}", (normal(n),))
    for batch, hidden in ((16, 128), (1024 // shrink, 1024)):
        yield _case(LSTM_CELL, f"f32 B={batch} H={hidden}",
                    (normal(batch, 4 * hidden), normal(batch, hidden)))
    for n in (1000, 10_000_000 // shrink):
        options = (rng.uniform(5.0, 30.0, n), rng.uniform(1.0, 100.0, n),
                   rng.uniform(0.25, 10.0, n))
        yield _case(BLACK_SCHOLES, f"f64 {_size_label(n)}", (*options, 0.02, 0.30))
    rows = 4096 // shrink
    yield _case(BIAS_RELU, f"f32 [{rows},1024]+[1024]", (normal(rows, 1024), normal(1024)))
    n = 16 * M // shrink
    yield _case(TRIAD, f"f32 {_size_label(n)} fresh output", (2.5, normal(n), normal(n)))
    yield _case(TRIAD_INTO, f"f32 {_size_label(n)} into out[:]",
                (2.5, normal(n), normal(n), np.empty(n, np.float32)))
    for n in (10_000, 16 * M // shrink):
        yield _case(SOFTPLUS, f"f32 {_size_label(n)}", (10 * normal(n),))


def main(argv: list[str] | None = None) -> None:
    settings = parse_settings(__doc__.splitlines()[0], argv)
    peers.report_missing()
    run_suite("elementwise", cases(settings), settings)
    first_result.report(processes=1 if settings.quick else 3)


if __name__ == "__main__":
    main(sys.argv[1:])
