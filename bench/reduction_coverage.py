"""The reductions beyond rows of C arrays: tsjit against NumPy and JAX.

    python bench/reduction_coverage.py [--quick] [--only NAME [NAME ...]]

Each workload is a plain NumPy function that tsjit scripts (and JAX jits with `np`
rebound to jax.numpy), float32 [4096, 1024] unless named otherwise:
- column_standardize: `(x - x.mean(axis=0)) / x.std(axis=0)` (a column kernel, 3 passes);
- column_sum: `(x * w).sum(axis=0)`; weighted_column_sum, the same with `w` of shape
  (4096, 1), one weight per row (a column kernel reading `w` once per reduced row);
- fortran_column_sum: `(x * s).sum(axis=0)` of a Fortran-ordered x (NumPy's pairwise
  runs per column; with a row vector `w` instead of `s` the kernel does not take it: a
  value broadcast along its rows);
- argmax_logits: `np.argmax(x * s + b, axis=-1)`;
- int_mean: `(x * 3).mean(axis=-1)` of int32 (float64 sums through NumPy's cast buffers);
- row_prod: `np.prod(1 + x * 1e-3, axis=-1)`;
- layouts the strided row kernel walks (``codegen/reduction_strided.py``): slice_sum,
  `np.sum(x * s)` of a 2-D slice `x[:, :1024]` of a [4096, 2048] array; weighted_sum,
  `np.sum(x * w)` with `w` of shape (4096, 1); reversed_row_sum, `np.sum(x * s, axis=-1)`
  of `x[:, ::-1]`; strided_loss, `np.mean((a - b) ** 2)` of `v[::2]` and `v[1::2]`
  (2M each);
- max/min ties (``codegen/reduction_ties.py``): row_max, `np.max(x * s, axis=-1)` of
  negative rows, and row_max_zero_last, the same with a zero where NumPy's order reaches
  it last (the first element of its lowest-priority lane): every row searched for NumPy's
  zero; column_max, `np.max(x * s, axis=0)` of negative columns, and column_max_zero_top,
  the same with zeros in the first row (NumPy's loop keeps the last zero: the kernel
  follows its rule at every step).
tsjit's results are NumPy's bits (checked before timing); JAX's are within the harness's
tolerance.  Prints a table per case, writes bench/results/reduction_coverage.json/.png.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
import peers
from harness import Case, Settings, run_suite


def column_standardize(x):
    return (x - x.mean(axis=0)) / x.std(axis=0)


def column_sum(x, w):
    return (x * w).sum(axis=0)


def scaled_column_sum(x, s):
    return (x * s).sum(axis=0)


def argmax_logits(x, s, b):
    return np.argmax(x * s + b, axis=-1)


def int_mean(x):
    return (x * 3).mean(axis=-1)


def row_prod(x):
    return np.prod(1 + x * np.float32(1e-3), axis=-1)


def scaled_sum(x, s):
    return np.sum(x * s)


def weighted_sum(x, w):
    return np.sum(x * w)


def scaled_row_sum(x, s):
    return np.sum(x * s, axis=-1)


def mse_loss(a, b):
    return np.mean((a - b) ** 2)


def scaled_row_max(x, s):
    return np.max(x * s, axis=-1)


def scaled_column_max(x, s):
    return np.max(x * s, axis=0)


def cases(quick: bool, only: list[str] | None = None):
    rng = np.random.default_rng(0)
    rows = 4096 // (16 if quick else 1)
    x = rng.standard_normal((rows, 1024)).astype(np.float32)
    w, b = (rng.standard_normal(1024).astype(np.float32) for _ in range(2))
    negative = -np.abs(x) - np.float32(0.5)
    zero_last = negative.copy()
    zero_last[:, 1] = 0.0
    zero_top = negative.copy()
    zero_top[0] = 0.0
    workloads = [
        ("column_standardize", column_standardize, (x,)),
        ("column_sum", column_sum, (x, w)),
        ("weighted_column_sum", column_sum,
         (x, rng.standard_normal((rows, 1)).astype(np.float32))),
        ("fortran_column_sum", scaled_column_sum, (np.asfortranarray(x), np.float32(1.5))),
        ("argmax_logits", argmax_logits, (x, np.float32(0.5), b)),
        ("int_mean", int_mean, (rng.integers(-1000, 1000, (rows, 1024)).astype(np.int32),)),
        ("row_prod", row_prod, (x,)),
        ("slice_sum", scaled_sum,
         (rng.standard_normal((rows, 2048)).astype(np.float32)[:, :1024], np.float32(1.5))),
        ("weighted_sum", weighted_sum, (x, rng.standard_normal((rows, 1)).astype(np.float32))),
        ("reversed_row_sum", scaled_row_sum, (x[:, ::-1], np.float32(1.5))),
        ("strided_loss", mse_loss, (x.ravel()[::2], x.ravel()[1::2])),
        ("row_max", scaled_row_max, (negative, np.float32(1.5))),
        ("row_max_zero_last", scaled_row_max, (zero_last, np.float32(1.5))),
        ("column_max", scaled_column_max, (negative, np.float32(1.5))),
        ("column_max_zero_top", scaled_column_max, (zero_top, np.float32(1.5))),
    ]
    for name, fn, args in workloads:
        if only and name not in only:
            continue
        impls = [peers.tsjit_script(fn), peers.plain("numpy", fn)]
        if peers.installed("jax"):
            impls.append(peers.jax_jit(fn))
        shape = "x".join(map(str, args[0].shape))
        yield Case(f"{name} {args[0].dtype} [{shape}]", fn, args, impls)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="smaller inputs, 3 samples: a smoke run of every path")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these workloads")
    args = parser.parse_args(argv)
    settings = Settings.for_mode(args.quick)
    peers.report_missing()
    run_suite("reduction_coverage", cases(settings.quick, args.only), settings)


if __name__ == "__main__":
    main(sys.argv[1:])
