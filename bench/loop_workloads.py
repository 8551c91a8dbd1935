"""Loop programs a new user writes first: plain Python loops over array elements.

Each workload is a function valid for CPython, tsjit.script and numba.njit alike, plus
`inputs()` giving its arguments. bench/first_result.py times decorate plus first call of
each in fresh processes.
"""

from __future__ import annotations

import numpy as np


def pairwise_distances(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    n = x.shape[0]
    d = x.shape[1]
    for i in range(n):
        for j in range(n):
            s = 0.0
            for k in range(d):
                t = x[i, k] - x[j, k]
                s += t * t
            out[i, j] = s ** 0.5
    return out


def histogram(values: np.ndarray, counts: np.ndarray, lo: float, hi: float) -> np.ndarray:
    bins = counts.shape[0]
    for k in range(bins):      # counts from zero: every call gives the same result
        counts[k] = 0
    scale = bins / (hi - lo)
    for i in range(values.shape[0]):
        v = values[i]
        if v >= lo and v < hi:
            b = int((v - lo) * scale)
            if b >= bins:
                b = bins - 1
            counts[b] += 1
    return counts


def max_drawdown(prices: np.ndarray) -> float:
    peak = prices[0]
    worst = 0.0
    for i in range(prices.shape[0]):
        p = prices[i]
        if p > peak:
            peak = p
        drawdown = (peak - p) / peak
        if drawdown > worst:
            worst = drawdown
    return float(worst)


def prefix_sum(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
        out[i] = s
    return out


def smooth_2d(image: np.ndarray, out: np.ndarray) -> np.ndarray:
    rows = image.shape[0]
    cols = image.shape[1]
    for r in range(1, rows - 1):
        for c in range(1, cols - 1):
            out[r, c] = (image[r - 1, c] + image[r + 1, c] + image[r, c - 1]
                         + image[r, c + 1] + 4.0 * image[r, c]) * 0.125
    return out


def count_primes(n: int) -> int:
    count = 0
    for k in range(2, n):
        d = 2
        prime = True
        while d * d <= k:
            if k % d == 0:
                prime = False
                break
            d += 1
        if prime:
            count += 1
    return count


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


# name -> (function, inputs() building fresh arguments)
WORKLOADS = {
    "pairwise distances 40x64": (
        pairwise_distances, lambda: (_rng().standard_normal((40, 64)), np.zeros((40, 40)))),
    "histogram 200k": (
        histogram, lambda: (_rng().standard_normal(200_000), np.zeros(64, np.int64), -3.0, 3.0)),
    "max drawdown 200k": (
        max_drawdown, lambda: (100.0 + np.cumsum(_rng().standard_normal(200_000)),)),
    "prefix sum 200k": (
        prefix_sum, lambda: (_rng().standard_normal(200_000), np.zeros(200_000))),
    "smooth 2d 300x300": (
        smooth_2d, lambda: (_rng().standard_normal((300, 300)), np.zeros((300, 300)))),
    "count primes 30k": (count_primes, lambda: (30_000,)),
}


# ---------------------------------------------------------------- counted loops
# The simplest loops: a range() counter and a body without branches, the kind Numba
# unrolls and vectorizes. bench/scalar_loops.py times them against Numba.

def mod_sum(n: int) -> int:
    s = 0
    for i in range(n):
        s += i % 1000
    return s


def mask_sum(n: int) -> int:
    s = 0
    for i in range(n):
        s += i & 255
    return s


def hash_sum(n: int) -> int:
    s = 0
    for i in range(n):
        s += (i * 2654435761) & 65535
    return s


def lcg(n: int, seed: int) -> int:
    x = seed
    s = 0
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2147483648
        s += x
    return s


def array_sum(a: np.ndarray) -> np.ndarray:
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    return s


def int_array_sum(a: np.ndarray) -> int:
    s = 0
    for i in range(a.shape[0]):
        s += int(a[i])
    return s


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


def axpy(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    for i in range(a.shape[0]):
        out[i] = a[i] * 2.0 + b[i]
    return out


def matvec(m: np.ndarray, x: np.ndarray, out: np.ndarray) -> np.ndarray:
    for r in range(m.shape[0]):
        s = 0.0
        for c in range(m.shape[1]):
            s += m[r, c] * x[c]
        out[r] = s
    return out


def bincount(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    for k in range(counts.shape[0]):
        counts[k] = 0
    for i in range(values.shape[0]):
        counts[values[i]] += 1
    return counts


_N = 1_000_000

# name -> (function, inputs() building fresh arguments)
COUNTED_LOOPS = {
    "i % 1000 sum 1M": (mod_sum, lambda: (_N,)),
    "i & 255 sum 1M": (mask_sum, lambda: (_N,)),
    "(i * k) & 65535 sum 1M": (hash_sum, lambda: (_N,)),
    "lcg 1M": (lcg, lambda: (_N, 7)),
    "float64 sum 1M": (array_sum, lambda: (_rng().standard_normal(_N),)),
    "int64 sum 1M": (int_array_sum, lambda: (_rng().integers(-1000, 1000, _N),)),
    "float64 dot 1M": (dot, lambda: (_rng().standard_normal(_N), _rng().standard_normal(_N))),
    "out[i] = a[i] * 2 + b[i] 1M": (
        axpy, lambda: (_rng().standard_normal(_N), _rng().standard_normal(_N), np.zeros(_N))),
    "matvec 1000x1000": (
        matvec, lambda: (_rng().standard_normal((1000, 1000)), _rng().standard_normal(1000),
                         np.zeros(1000))),
    "float64 prefix sum 1M": (
        prefix_sum, lambda: (_rng().standard_normal(_N), np.zeros(_N))),
    "bincount 1M into 256": (
        bincount, lambda: (_rng().integers(0, 256, _N), np.zeros(256, np.int64))),
}
