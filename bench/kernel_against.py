"""The cost of a change to the elementwise kernel generator: this tree's kernels against
another git revision's, one process, interleaved.

    python bench/kernel_against.py REV [--workloads gelu,lstm,black_scholes] [--large]
                                       [--threads N] [--samples K] [--placements P]

Each workload (bench/elementwise_workloads.py) is scripted and run once; every fused
kernel it launches is compiled twice, by this tree's generator and by REV's
(bench/revision_vmath.py loads REV's tsjit/codegen), and both versions run on the same
arguments and write into the same output arrays. Their results must be the same bits (or,
for a change of the math library's bits, within --rtol of each output's scale).
Timings: one thread's CPU time (wall time with --threads above 1) of calls of each
version, alternating; the figure is the median of the per-pair ratios (this / REV) and
their quartiles. Data placement within a page changes a kernel's time by several percent
in ways that differ between versions, so each sample runs on P copies of the arguments
and outputs at random offsets from a page boundary. Small sizes by default (64k elements,
LSTM 64x512: in L2); --large takes the elementwise suite's (16M, 1024x1024, 10M).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Iterator

import numpy as np
import revision_vmath

import tsjit
from tsjit.codegen import launch
from tsjit.codegen.engine import generator_fingerprint, get_engine
from tsjit.codegen.kernel_abi import ensure_driver, resume_symbol

sys.path.insert(0, os.path.dirname(__file__))
import elementwise_workloads as workloads  # noqa: E402


class Versions:
    """A kernel's two versions, launched as the executor launches a kernel (``call``): by
    ``current`` (0 this tree's, 1 REV's); the arguments of each launch are recorded."""

    current = 0
    launches: list[tuple[Versions, tuple, dict]] = []

    def __init__(self, spec, kernels) -> None:
        self.spec, self.kernels = spec, kernels

    def call(self, *args, **kwargs):
        Versions.launches.append((self, args, kwargs))
        return self.kernels[Versions.current].call(*args, **kwargs)


def compile_both(revision: str) -> None:
    """Make the executor's kernels ``Versions`` of this tree's and ``revision``'s."""
    generator = revision_vmath.load(revision, "elementwise")
    compile_current = launch.compile_kernel

    def compile_kernel(spec):
        engine = get_engine()
        ensure_driver(engine)
        name = f"{launch._kernel_name(spec)}_{revision_vmath.package_name(revision)}"
        compiled = engine.compile_keyed(
            f"{revision}|{generator_fingerprint()}|kernel|{spec!r}",
            lambda: generator.build_kernel_module(spec, name), [name, resume_symbol(name)],
            launch.KERNEL_PIPELINE)
        return Versions(spec, (compile_current(spec), launch.Kernel(spec, name, compiled)))

    launch.compile_kernel = compile_kernel


def cases(names: list[str], large: bool) -> Iterator[tuple[str, object, tuple]]:
    rng = np.random.default_rng(0)
    for name in names:
        if name == "gelu":
            n = 16 << 20 if large else 1 << 16
            yield f"gelu f32 {n}", workloads.gelu, (rng.standard_normal(n, np.float32),)
        elif name == "lstm":
            batch, hidden = (1024, 1024) if large else (64, 512)
            yield (f"lstm_cell f32 B={batch} H={hidden}", workloads.lstm_cell,
                   (rng.standard_normal((batch, 4 * hidden), np.float32),
                    rng.standard_normal((batch, hidden), np.float32)))
        elif name == "black_scholes":
            n = 10_000_000 if large else 1 << 16
            yield (f"black_scholes f64 {n}", workloads.black_scholes,
                   (rng.uniform(5.0, 30.0, n), rng.uniform(1.0, 100.0, n),
                    rng.uniform(0.25, 10.0, n), 0.02, 0.30))
        else:
            raise SystemExit(f"unknown workload {name!r} (gelu, lstm, black_scholes)")


def placed(value, offset: int):
    """A copy of an array starting ``offset`` bytes past a page boundary."""
    if not isinstance(value, np.ndarray):
        return value
    raw = np.empty(value.nbytes + 8192, np.uint8)
    start = (-raw.ctypes.data) % 4096 + offset
    copy = raw[start:start + value.nbytes].view(value.dtype).reshape(value.shape)
    copy[...] = value
    return copy


def measure(fn, args, samples: int, placements: int, threads: int,
            rtol: float = 0.0) -> list[float]:
    """Per-sample ratios of this tree's time to REV's, over ``placements`` copies; the
    versions' results may differ by ``rtol`` of each output's largest magnitude."""
    scripted = tsjit.script(fn)
    for _ in range(3):
        scripted(*args)
    rng = np.random.default_rng()
    runs = []
    for _ in range(placements):
        Versions.launches.clear()
        scripted(*(placed(a, 16 * int(rng.integers(256))) for a in args))
        for versions, launch_args, kwargs in Versions.launches:
            results = [k.call(*launch_args, **kwargs) for k in versions.kernels]
            for mine, theirs in zip(*results):
                if not _close(mine, theirs, rtol):
                    raise SystemExit(f"{fn.__name__}: the two versions' results differ"
                                     + (f" (by more than --rtol {rtol})" if rtol else ""))
            outs = tuple(placed(r, 16 * int(rng.integers(256))) for r in results[0])
            runs.append((versions, launch_args, kwargs, outs))

    def run(version: int) -> None:
        for versions, launch_args, kwargs, outs in runs:
            versions.kernels[version].call(*launch_args, out=outs, **kwargs)

    return alternating_ratios(run, samples, threads)


def _close(mine: np.ndarray, theirs: np.ndarray, rtol: float) -> bool:
    """The same bits, or (``rtol`` > 0) floats within ``rtol`` of the largest magnitude
    and NaN at the same places: a math function's other bits, within its ulps, move a
    composite's results by that much relative to its scale, not to each (cancelling)
    result."""
    if np.array_equal(mine.view(np.uint8), theirs.view(np.uint8)):
        return True
    if rtol == 0 or mine.dtype.kind != "f" or not np.array_equal(np.isnan(mine),
                                                                 np.isnan(theirs)):
        return False
    finite = ~np.isnan(mine)
    scale = np.max(np.abs(theirs[finite]), initial=0.0)
    return bool(np.all(np.abs(mine[finite] - theirs[finite]) <= rtol * scale))


def alternating_ratios(run, samples: int, threads: int) -> list[float]:
    """Per-sample ratios of the time of ``run(0)`` (this tree's kernels) to ``run(1)``'s
    (REV's), the two alternating: one thread's CPU time, wall time with more threads."""
    clock = time.thread_time if threads == 1 else time.perf_counter
    times: dict[int, list[float]] = {0: [], 1: []}
    for sample in range(samples):
        for version in (0, 1) if sample % 2 == 0 else (1, 0):
            start = clock()
            run(version)
            times[version].append(clock() - start)
    return [mine / theirs for mine, theirs in zip(times[0], times[1])]


def summary(ratios: list[float], revision: str, threads: int) -> str:
    """The median ratio, its quartiles, the threads and the machine's load."""
    ratios = sorted(ratios)
    quarter = len(ratios) // 4
    return (f"this / {revision}: {statistics.median(ratios):.3f} "
            f"[{ratios[quarter]:.3f}-{ratios[-1 - quarter]:.3f}]  "
            f"threads {threads}, load {os.getloadavg()[0]:.1f}")


def prepare(threads: int) -> None:
    """Compile in the foreground, without the disk cache, for ``threads`` threads."""
    os.environ["TSJIT_DISK_CACHE"] = "0"
    tsjit.set_background_compilation(False)
    tsjit.set_num_threads(threads)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revision")
    parser.add_argument("--workloads", default="gelu,lstm,black_scholes")
    parser.add_argument("--large", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--samples", type=int, default=61)
    parser.add_argument("--placements", type=int, default=8)
    parser.add_argument("--rtol", type=float, default=0.0,
                        help="results may differ by this much relative to each output's "
                             "largest magnitude (a change of the math library's bits); "
                             "default: the same bits")
    args = parser.parse_args(argv)
    prepare(args.threads)
    compile_both(args.revision)
    placements = min(args.placements, 2) if args.large else args.placements
    for label, fn, fn_args in cases(args.workloads.split(","), args.large):
        ratios = measure(fn, fn_args, args.samples, placements, args.threads, args.rtol)
        print(f"{label:32s} {summary(ratios, args.revision, args.threads)}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
