"""The elementwise workloads of issue 3, each written the way its peers' users write it.

Every workload has one plain NumPy function: it is NumPy's entry, the reference every
other output is checked against, and the function tsjit scripts. JAX and torch.compile
run that same function with `np` rebound to their array module (bench/peers.py), so the
math cannot drift between peers. Numba's entries are the explicit loops a Numba user
writes (`prange`, which is a plain `range` unless compiled with parallel=True), and
numexpr's evaluate expression strings.

Float32 code in Numba and numexpr gets float32 constants: both type a Python float as
float64 and would compute a float32 workload in double precision, a different (and
slower) workload than the one NumPy, tsjit, JAX and torch run.
"""

from __future__ import annotations

import math

import numpy as np

try:
    from numba import prange
except ImportError:  # Numba is an optional peer: the other forms need none of it
    prange = range
try:
    import numexpr
except ImportError:  # and so is numexpr
    numexpr = None

F32_HALF = np.float32(0.5)
F32_ONE = np.float32(1.0)
F32_ZERO = np.float32(0.0)
F32_GELU_SCALE = np.float32(0.79788456)
F32_GELU_CUBIC = np.float32(0.044715)

# Abramowitz & Stegun 26.2.17: the normal CDF's upper tail as a polynomial in 1/(1 + p|d|).
CND_P = 0.2316419
CND_A1, CND_A2, CND_A3, CND_A4, CND_A5 = (
    0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429)
RSQRT_2PI = 0.39894228040143267793994605993438


def numexpr_evaluate(expression: str, variables: dict[str, object],
                     out: np.ndarray | None = None) -> np.ndarray:
    """numexpr.evaluate with the Python floats among `variables` cast to the arrays' dtype."""
    dtype = np.result_type(*(v for v in variables.values() if isinstance(v, np.ndarray)))
    local = {name: dtype.type(v) if isinstance(v, float) else v for name, v in variables.items()}
    return numexpr.evaluate(expression, local_dict=local, out=out)


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(0.79788456 * (x + 0.044715 * x**3)))


def gelu_cubed_by_products(x: np.ndarray) -> np.ndarray:
    """NumPy's best form of gelu: its `x**3` calls pow, ~50x slower than two multiplies."""
    return 0.5 * x * (1.0 + np.tanh(0.79788456 * (x + 0.044715 * x * x * x)))


def gelu_numexpr(x):
    return numexpr_evaluate("half * x * (1 + tanh(scale * (x + cubic * x**3)))",
                            {"x": x, "half": 0.5, "scale": 0.79788456, "cubic": 0.044715})


def gelu_loop(x):
    out = np.empty_like(x)
    for i in prange(x.size):
        v = x[i]
        out[i] = F32_HALF * v * (F32_ONE + np.tanh(F32_GELU_SCALE * (v + F32_GELU_CUBIC * v**3)))
    return out


def lstm_cell(gates: np.ndarray, cx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hidden = cx.shape[1]
    ingate = 1.0 / (1.0 + np.exp(-gates[:, :hidden]))
    forgetgate = 1.0 / (1.0 + np.exp(-gates[:, hidden:2 * hidden]))
    cellgate = np.tanh(gates[:, 2 * hidden:3 * hidden])
    outgate = 1.0 / (1.0 + np.exp(-gates[:, 3 * hidden:]))
    cy = forgetgate * cx + ingate * cellgate
    hy = outgate * np.tanh(cy)
    return hy, cy


def lstm_cell_numexpr(gates, cx):
    i, f, g, o = np.split(gates, 4, axis=1)   # views (numexpr has no sigmoid: spelled out)
    cy = numexpr_evaluate("1 / (1 + exp(-f)) * cx + 1 / (1 + exp(-i)) * tanh(g)",
                          {"i": i, "f": f, "g": g, "cx": cx})
    hy = numexpr_evaluate("1 / (1 + exp(-o)) * tanh(cy)", {"o": o, "cy": cy})
    return hy, cy


def lstm_cell_loop(gates, cx):
    batch, hidden = cx.shape
    hy = np.empty_like(cx)
    cy = np.empty_like(cx)
    for b in prange(batch):
        for j in range(hidden):
            ingate = F32_ONE / (F32_ONE + np.exp(-gates[b, j]))
            forgetgate = F32_ONE / (F32_ONE + np.exp(-gates[b, hidden + j]))
            cellgate = np.tanh(gates[b, 2 * hidden + j])
            outgate = F32_ONE / (F32_ONE + np.exp(-gates[b, 3 * hidden + j]))
            c = forgetgate * cx[b, j] + ingate * cellgate
            cy[b, j] = c
            hy[b, j] = outgate * np.tanh(c)
    return hy, cy


def normal_tail(d):
    """Upper tail of the normal CDF at |d|; written with np so it also serves scalars in loops."""
    k = 1.0 / (1.0 + CND_P * np.abs(d))
    poly = k * (CND_A1 + k * (CND_A2 + k * (CND_A3 + k * (CND_A4 + k * CND_A5))))
    return RSQRT_2PI * np.exp(-0.5 * d * d) * poly


def cnd(d: np.ndarray) -> np.ndarray:
    tail = normal_tail(d)
    return np.where(d > 0, 1.0 - tail, tail)


def black_scholes(price: np.ndarray, strike: np.ndarray, years: np.ndarray,
                  rate: float, volatility: float) -> tuple[np.ndarray, np.ndarray]:
    sqrt_years = np.sqrt(years)
    d1 = (np.log(price / strike) + (rate + 0.5 * volatility * volatility) * years) / (
        volatility * sqrt_years)
    d2 = d1 - volatility * sqrt_years
    cnd_d1 = cnd(d1)
    cnd_d2 = cnd(d2)
    discount = np.exp(-rate * years)
    call = price * cnd_d1 - strike * discount * cnd_d2
    put = strike * discount * (1.0 - cnd_d2) - price * (1.0 - cnd_d1)
    return call, put


def _cnd_numexpr(d: np.ndarray) -> np.ndarray:
    k = "(1 / (1 + p * abs(d)))"
    poly = f"{k} * (a1 + {k} * (a2 + {k} * (a3 + {k} * (a4 + {k} * a5))))"
    tail = f"(rsqrt_2pi * exp(-0.5 * d * d) * {poly})"
    return numexpr_evaluate(f"where(d > 0, 1 - {tail}, {tail})", {
        "d": d, "p": CND_P, "a1": CND_A1, "a2": CND_A2, "a3": CND_A3, "a4": CND_A4,
        "a5": CND_A5, "rsqrt_2pi": RSQRT_2PI})


def black_scholes_numexpr(price, strike, years, rate, volatility):
    inputs = {"price": price, "strike": strike, "years": years, "rate": rate, "vol": volatility}
    d1 = numexpr_evaluate(
        "(log(price / strike) + (rate + 0.5 * vol * vol) * years) / (vol * sqrt(years))", inputs)
    d2 = numexpr_evaluate("d1 - vol * sqrt(years)", {"d1": d1, **inputs})
    terms = {"cnd_d1": _cnd_numexpr(d1), "cnd_d2": _cnd_numexpr(d2), **inputs}
    call = numexpr_evaluate("price * cnd_d1 - strike * exp(-rate * years) * cnd_d2", terms)
    put = numexpr_evaluate(
        "strike * exp(-rate * years) * (1 - cnd_d2) - price * (1 - cnd_d1)", terms)
    return call, put


def black_scholes_loop(price, strike, years, rate, volatility):
    call = np.empty_like(price)
    put = np.empty_like(price)
    for i in prange(price.size):
        sqrt_years = math.sqrt(years[i])
        drift = (rate + 0.5 * volatility * volatility) * years[i]
        d1 = (math.log(price[i] / strike[i]) + drift) / (volatility * sqrt_years)
        d2 = d1 - volatility * sqrt_years
        tail1 = normal_tail(d1)
        tail2 = normal_tail(d2)
        cnd_d1 = 1.0 - tail1 if d1 > 0 else tail1
        cnd_d2 = 1.0 - tail2 if d2 > 0 else tail2
        discount = math.exp(-rate * years[i])
        call[i] = price[i] * cnd_d1 - strike[i] * discount * cnd_d2
        put[i] = strike[i] * discount * (1.0 - cnd_d2) - price[i] * (1.0 - cnd_d1)
    return call, put


def bias_relu(x: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return np.maximum(x + bias, 0.0)


def bias_relu_numexpr(x, bias):
    return numexpr_evaluate("where(x + bias > 0, x + bias, 0)", {"x": x, "bias": bias})


def bias_relu_loop(x, bias):
    rows, cols = x.shape
    out = np.empty_like(x)
    for r in prange(rows):
        for c in range(cols):
            out[r, c] = max(x[r, c] + bias[c], F32_ZERO)
    return out


def triad(a: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return a * x + y


def triad_numexpr(a, x, y):
    return numexpr_evaluate("a * x + y", {"a": a, "x": x, "y": y})


def triad_loop(a, x, y):
    out = np.empty_like(x)
    scale = x.dtype.type(a)
    for i in prange(x.size):
        out[i] = scale * x[i] + y[i]
    return out


def triad_into(a: float, x: np.ndarray, y: np.ndarray, out: np.ndarray) -> np.ndarray:
    out[:] = a * x + y
    return out


def triad_into_ufuncs(a: float, x: np.ndarray, y: np.ndarray, out: np.ndarray) -> np.ndarray:
    """NumPy's best form of the in-place triad: ufuncs writing into `out`, no temporary."""
    np.multiply(x, a, out=out)
    np.add(out, y, out=out)
    return out


def triad_into_numexpr(a, x, y, out):
    return numexpr_evaluate("a * x + y", {"a": a, "x": x, "y": y}, out=out)


def triad_into_loop(a, x, y, out):
    scale = x.dtype.type(a)
    for i in prange(x.size):
        out[i] = scale * x[i] + y[i]
    return out


def softplus(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def softplus_numexpr(x):
    return numexpr_evaluate("where(x > 0, x, 0) + log1p(exp(-abs(x)))", {"x": x})


def softplus_loop(x):
    out = np.empty_like(x)
    for i in prange(x.size):
        v = x[i]
        out[i] = max(v, F32_ZERO) + np.log1p(np.exp(-abs(v)))
    return out
