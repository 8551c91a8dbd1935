"""The cost of a change to the row-kernel generator: this tree's row kernels against
another git revision's, one process, interleaved.

    python bench/row_against.py REV [--workloads softmax,layer_norm,logsumexp]
                                    [--rows 128] [--threads N] [--samples K]

As bench/kernel_against.py does for the elementwise kernels: each workload
(bench/reduction_workloads.py, float32 rows of 1024) is scripted and run once; every row
kernel it launches is compiled twice, by this tree's generator and by REV's
(bench/revision_vmath.py loads REV's tsjit/codegen), and both versions run on the same
arguments; their results must be the same bits. Timings: one thread's CPU time (wall time
with --threads above 1) of calls of each version, alternating; the figure is the median
of the per-pair ratios (this / REV) and their quartiles. 128 rows by default (in L2:
what the kernel computes); --rows 4096 adds memory's share. mse_loss (a full reduction)
reduces two flat arrays of rows * 1024 (--rows 16384: the benchmark's 16M).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import revision_vmath
from kernel_against import Versions, alternating_ratios, prepare, summary

import tsjit
from tsjit.codegen import reduction_launch
from tsjit.codegen.engine import generator_fingerprint, get_engine
from tsjit.codegen.kernel_abi import PARALLEL_FOR

sys.path.insert(0, os.path.dirname(__file__))
import reduction_workloads as workloads  # noqa: E402


def compile_both(revision: str) -> None:
    """Make the executor's row kernels ``kernel_against.Versions`` of this tree's and
    ``revision``'s."""
    generator = revision_vmath.load(revision, "reduction")
    compile_current = reduction_launch.compile_row_kernel

    def compile_row_kernel(spec):
        engine = get_engine()
        parallel = PARALLEL_FOR in engine.symbols
        name = f"tsjit_rows_{abs(hash(repr(spec)))}_{revision_vmath.package_name(revision)}"
        compiled = engine.compile_keyed(
            f"{revision}|{generator_fingerprint()}|rows|{parallel}|{spec!r}",
            lambda: generator.build_row_kernel_module(spec, name, parallel), [name])
        return Versions(spec, (compile_current(spec),
                               reduction_launch.RowKernel(spec, name, compiled)))

    reduction_launch.compile_row_kernel = compile_row_kernel


def measure(fn, args, samples: int, threads: int) -> list[float]:
    """Per-sample ratios of this tree's time to REV's."""
    scripted = tsjit.script(fn)
    for _ in range(3):
        scripted(*args)
    Versions.launches.clear()
    scripted(*args)
    runs = list(Versions.launches)
    for versions, launch_args, kwargs in runs:
        results = [k.call(*launch_args, **kwargs) for k in versions.kernels]
        for mine, theirs in zip(*results):
            if not np.array_equal(np.atleast_1d(mine).view(np.uint8),
                                  np.atleast_1d(theirs).view(np.uint8)):
                raise SystemExit(f"{fn.__name__}: the two versions' bits differ")

    def run(version: int) -> None:
        for _ in range(8):
            for versions, launch_args, kwargs in runs:
                versions.kernels[version].call(*launch_args, **kwargs)

    return alternating_ratios(run, samples, threads)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revision")
    parser.add_argument("--workloads", default="softmax,layer_norm,logsumexp")
    parser.add_argument("--rows", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--samples", type=int, default=41)
    args = parser.parse_args(argv)
    prepare(args.threads)
    compile_both(args.revision)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.rows, 1024), dtype=np.float32)
    g, b = rng.standard_normal((2, 1024), dtype=np.float32)
    for name in args.workloads.split(","):
        fn_args = {"layer_norm": (x, g, b),   # the loss: a full reduction of rows * 1024
                   "mse_loss": (x.ravel(), x[::-1].ravel())}.get(name, (x,))
        ratios = measure(getattr(workloads, name), fn_args, args.samples, args.threads)
        print(f"{name:12s} [{args.rows},1024] f32 {summary(ratios, args.revision, args.threads)}",
              flush=True)

if __name__ == "__main__":
    main(sys.argv[1:])
