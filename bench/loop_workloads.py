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
