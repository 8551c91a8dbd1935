"""The reduction workloads of issue 9, each written the way its peers' users write it.

The plain NumPy function of each workload is NumPy's entry, the reference, the function
tsjit scripts and (with `np` rebound to jax.numpy) JAX's.  torch.compile gets the same
formula in torch's spelling (`amax`, `dim=`, `keepdim=`), Numba the row loop a Numba user
writes (`prange` over rows), numexpr its `sum()` form where it has one (the loss).
Float32 loops use float32 constants (Numba would compute in float64 otherwise).
"""
from __future__ import annotations

import math

import numpy as np

try:
    from numba import prange
except ImportError:  # Numba is an optional peer
    prange = range
try:
    import numexpr
except ImportError:
    numexpr = None
try:
    import torch
except ImportError:
    torch = None

EPS = np.float32(1e-5)


# ---------------------------------------------------------------- NumPy (tsjit, JAX)

def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def logsumexp(x):
    m = x.max(axis=-1, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))[:, 0]


def mse_loss(a, b):
    return np.mean((a - b) ** 2)


def cross_entropy(x, labels):
    m = x.max(axis=-1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))[:, 0]
    return np.mean(lse - x[np.arange(x.shape[0]), labels])


def l2_normalize(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def variance(x):
    return np.var(x, axis=-1)


# ---------------------------------------------------------------- torch

def softmax_torch(x):
    m = x.amax(dim=-1, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(dim=-1, keepdim=True)


def layer_norm_torch(x, g, b):
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + 1e-5) * g + b


def logsumexp_torch(x):
    m = x.amax(dim=-1, keepdim=True)
    return (m + torch.log(torch.exp(x - m).sum(dim=-1, keepdim=True)))[:, 0]


def mse_loss_torch(a, b):
    return torch.mean((a - b) ** 2)


def cross_entropy_torch(x, labels):
    m = x.amax(dim=-1, keepdim=True)
    lse = (m + torch.log(torch.exp(x - m).sum(dim=-1, keepdim=True)))[:, 0]
    return torch.mean(lse - x[torch.arange(x.shape[0]), labels])


def l2_normalize_torch(x):
    return x / torch.linalg.norm(x, dim=-1, keepdim=True)


def variance_torch(x):
    return torch.var(x, dim=-1, correction=0)


# ---------------------------------------------------------------- numexpr

def mse_loss_numexpr(a, b):
    return np.float32(numexpr.evaluate("sum((a - b) ** 2)") / np.float32(a.size))


# ---------------------------------------------------------------- Numba loops

def softmax_loop(x):
    out = np.empty_like(x)
    rows, n = x.shape
    for i in prange(rows):
        m = x[i, 0]
        for j in range(1, n):
            m = max(m, x[i, j])
        s = x.dtype.type(0)
        for j in range(n):
            e = math.exp(x[i, j] - m)
            out[i, j] = e
            s += e
        for j in range(n):
            out[i, j] /= s
    return out


def layer_norm_loop(x, g, b):
    out = np.empty_like(x)
    rows, n = x.shape
    for i in prange(rows):
        s = x.dtype.type(0)
        for j in range(n):
            s += x[i, j]
        mu = s / n
        v = x.dtype.type(0)
        for j in range(n):
            d = x[i, j] - mu
            v += d * d
        scale = 1 / math.sqrt(v / n + EPS)
        for j in range(n):
            out[i, j] = (x[i, j] - mu) * scale * g[j] + b[j]
    return out


def logsumexp_loop(x):
    rows, n = x.shape
    out = np.empty(rows, x.dtype)
    for i in prange(rows):
        m = x[i, 0]
        for j in range(1, n):
            m = max(m, x[i, j])
        s = x.dtype.type(0)
        for j in range(n):
            s += math.exp(x[i, j] - m)
        out[i] = m + math.log(s)
    return out


def mse_loss_loop(a, b):
    flat_a, flat_b = a.ravel(), b.ravel()
    s = 0.0
    for i in prange(flat_a.size):
        d = flat_a[i] - flat_b[i]
        s += d * d
    return np.float32(s / flat_a.size)


def cross_entropy_loop(x, labels):
    rows, n = x.shape
    losses = np.empty(rows, x.dtype)
    for i in prange(rows):
        m = x[i, 0]
        for j in range(1, n):
            m = max(m, x[i, j])
        s = x.dtype.type(0)
        for j in range(n):
            s += math.exp(x[i, j] - m)
        losses[i] = m + math.log(s) - x[i, labels[i]]
    return np.float32(losses.mean())


def l2_normalize_loop(x):
    out = np.empty_like(x)
    rows, n = x.shape
    for i in prange(rows):
        s = x.dtype.type(0)
        for j in range(n):
            s += x[i, j] * x[i, j]
        scale = 1 / math.sqrt(s)
        for j in range(n):
            out[i, j] = x[i, j] * scale
    return out


def variance_loop(x):
    rows, n = x.shape
    out = np.empty(rows, x.dtype)
    for i in prange(rows):
        s = x.dtype.type(0)
        for j in range(n):
            s += x[i, j]
        mu = s / n
        v = x.dtype.type(0)
        for j in range(n):
            d = x[i, j] - mu
            v += d * d
        out[i] = v / n
    return out
