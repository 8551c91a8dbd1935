"""Issue 9's reduction suite: tsjit against NumPy, JAX, torch.compile, Numba and numexpr.

    python bench/reductions.py [--quick] [--only NAME [NAME ...]]

Workloads (bench/reduction_workloads.py), float32: softmax, layer norm, logsumexp over
rows, a mean-squared-error loss, cross-entropy (logsumexp minus the picked logit, meaned),
L2-normalized rows and the variance of rows; each at 64 rows of 1024 and at 4096 rows
of 1024 (the loss: 16M elements).  Prints a table per case (time per call, ratio to the
best peer), writes bench/results/reductions.json and .png, and the loss's bandwidth
against a triad's (a * 2.5 + b, fresh output) on the same arrays, both in tsjit, and
against the fastest read of them (Numba's unordered parallel sum, where Numba is there).
--quick divides the large sizes by 16 and takes 3 samples.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator

import numpy as np
import peers
import reduction_workloads as w
from harness import Case, Implementation, Settings, run_suite, settle

import tsjit

WORKLOADS = {
    # name: (NumPy form, torch form, Numba loop, numexpr form)
    "softmax": (w.softmax, w.softmax_torch, w.softmax_loop, None),
    "layer_norm": (w.layer_norm, w.layer_norm_torch, w.layer_norm_loop, None),
    "logsumexp": (w.logsumexp, w.logsumexp_torch, w.logsumexp_loop, None),
    "mse_loss": (w.mse_loss, w.mse_loss_torch, w.mse_loss_loop, w.mse_loss_numexpr),
    "cross_entropy": (w.cross_entropy, w.cross_entropy_torch, w.cross_entropy_loop, None),
    "l2_normalize": (w.l2_normalize, w.l2_normalize_torch, w.l2_normalize_loop, None),
    "variance": (w.variance, w.variance_torch, w.variance_loop, None),
}


def _numpy_scalars(fn: Callable) -> Callable:
    """A peer's scalar result as the NumPy scalar NumPy returns (results are compared by
    type): a 0-d array's item, and Numba's Python float as the workloads' float32."""
    def call(*args):
        result = fn(*args)
        if isinstance(result, float):
            return np.float32(result)
        if getattr(result, "ndim", None) == 0:
            return np.asarray(result)[()]
        return result
    return call


def _peer(impl: Implementation) -> Implementation:
    return Implementation(impl.name, lambda: _numpy_scalars(impl.compile()), impl.convert)


def _torch_compile(fn: Callable) -> Implementation:
    import torch
    torch._dynamo.config.recompile_limit = 64
    return Implementation(
        "torch.compile",
        lambda: _numpy_scalars(torch.compile(fn, dynamic=False, fullgraph=True)),
        convert=lambda args: tuple(torch.from_numpy(a) if isinstance(a, np.ndarray) else a
                                   for a in args))


def implementations(name: str) -> list[Implementation]:
    numpy_form, torch_form, loop, numexpr_form = WORKLOADS[name]
    impls = [peers.tsjit_script(numpy_form), peers.plain("numpy", numpy_form)]
    if numexpr_form is not None and peers.installed("numexpr"):
        impls.append(peers.plain("numexpr", numexpr_form))
    if peers.installed("numba"):
        impls += [_peer(i) for i in peers.numba_loops(loop)]
    if peers.installed("jax"):
        impls.append(_peer(peers.jax_jit(numpy_form)))
    if peers.installed("torch"):
        impls.append(_torch_compile(torch_form))
    return impls


def cases(settings: Settings, only: list[str] | None) -> Iterator[Case]:
    rng = np.random.default_rng(0)
    shrink = 16 if settings.quick else 1

    def normal(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    for name in WORKLOADS:
        if only and name not in only:
            continue
        impls = implementations(name)
        for rows in (64, 4096 // shrink):
            label = f"{name} f32 [{rows},1024]"
            x = normal(rows, 1024)
            if name == "layer_norm":
                args = (x, normal(1024), normal(1024))
            elif name == "mse_loss":
                if rows > 64:
                    n = (16 << 20) // shrink
                    label = f"{name} f32 {n >> 20}M" if n >= 1 << 20 else f"{name} f32 {n}"
                    x = normal(n)
                args = (x, x + normal(*x.shape))
            elif name == "cross_entropy":
                args = (x, rng.integers(0, 1024, rows))
            else:
                args = (x,)
            yield Case(label, WORKLOADS[name][0], args, impls)


def _read_ceiling() -> Callable | None:
    """Numba's fastest read of two arrays: a parallel sum of ``a[i] + b[i]`` that may
    reorder its additions (fastmath), so nothing but memory bounds it; None without
    Numba."""
    try:
        import numba
    except ImportError:
        return None

    def read_both(a, b):
        total = np.float32(0)
        for i in numba.prange(a.size):
            total += a[i] + b[i]
        return total

    return numba.njit(parallel=True, fastmath=True)(read_both)


def triad_bandwidth(settings: Settings) -> None:
    """The loss's bytes per second next to a triad's and to the fastest read of the same
    arrays (Numba's unordered parallel sum), timed interleaved (medians): how close a fused
    reduction gets to the memory bound."""
    n = (16 << 20) // (16 if settings.quick else 1)
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    loss = tsjit.script(w.mse_loss)

    def triad(a, b):
        return a * 2.5 + b

    kernels = {"loss": loss, "triad": tsjit.script(triad), "read": _read_ceiling()}
    kernels = {name: fn for name, fn in kernels.items() if fn is not None}
    for _ in range(3):
        for fn in kernels.values():
            fn(a, b)
    times = {name: [] for name in kernels}
    for _ in range(5 if settings.quick else 25):
        for name, fn in kernels.items():
            # Numba's OpenMP workers spin for milliseconds after a call: on two cores that
            # stole a core from the next kernel (the loss took 14 ms here, 8 in the table)
            settle(settings.settle_seconds)
            start = time.perf_counter()
            fn(a, b)
            times[name].append(time.perf_counter() - start)
    seconds = {name: float(np.median(t)) for name, t in times.items()}
    loss_bw, triad_bw = 8 * n / seconds["loss"] / 1e9, 12 * n / seconds["triad"] / 1e9
    print(f"\nmse_loss {n} f32: {seconds['loss'] * 1e3:.2f} ms = {loss_bw:.1f} GB/s read; "
          f"triad a*2.5+b: {seconds['triad'] * 1e3:.2f} ms = {triad_bw:.1f} GB/s (read + "
          f"write); the loss reaches {loss_bw / triad_bw:.0%} of the triad's bandwidth")
    if "read" in seconds:
        read_bw = 8 * n / seconds["read"] / 1e9
        print(f"read ceiling (Numba prange, unordered sum of a + b; no access pattern in "
              f"bench/read_ceiling.c reads faster): {seconds['read'] * 1e3:.2f} ms = "
              f"{read_bw:.1f} GB/s; the loss reaches {loss_bw / read_bw:.0%} of it")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="smaller inputs, 3 samples: a smoke run of every path")
    parser.add_argument("--only", nargs="+", choices=list(WORKLOADS), metavar="NAME",
                        help=f"run only these workloads: {', '.join(WORKLOADS)}")
    args = parser.parse_args(argv)
    settings = Settings.for_mode(args.quick)
    peers.report_missing()
    run_suite("reductions", cases(settings, args.only), settings)
    triad_bandwidth(settings)


if __name__ == "__main__":
    main(sys.argv[1:])
