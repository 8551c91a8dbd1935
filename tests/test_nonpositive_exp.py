"""exp of arguments known to be <= 0 or NaN (softmax's and logsumexp's ``x - max(x)``).

Row kernels compute that exp in a cheaper form (``vmath.emit_math``'s ``nonpositive``:
no upper clamp, 2**n in one integer step, the special lanes by bit masks), which must give
the general exp's bits for every such argument and the same floating-point flags: none
where NumPy is quiet (a spurious flag would send the call back to NumPy), underflow where
NumPy reports it.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from _differential import assert_same
from _llvm_harness import MathKernels

import tsjit
from tsjit.codegen.kernel_spec import KernelInput, KernelOp
from tsjit.codegen.reduction_spec import RowKernelSpec, nonpositive_values

_UINT = {np.float32: np.uint32, np.float64: np.uint64}


def nonpositive_arguments(dtype: type) -> np.ndarray:
    """-0 and +0, each binade's ends and a dense stretch of it from the largest negative
    denormal to -max, the underflow thresholds, -inf, NaNs of both signs with payloads,
    and random negative bit patterns."""
    info = np.finfo(dtype)
    uint = _UINT[dtype]
    exponents = np.arange(info.minexp - info.nmant, info.maxexp)
    binades = -np.ldexp(np.ones(exponents.size, dtype), exponents)
    steps = np.arange(-40, 41).astype(uint)   # wraps: minus 40 ulps to plus 40
    dense = (binades.view(uint)[:, None] + steps).ravel().view(dtype)
    ramp = np.linspace(-760.0, 0.0, 50_001).astype(dtype)   # float32's underflow near -87..-104
    rng = np.random.default_rng(0)
    random_bits = rng.integers(0, 1 << (info.bits - 1), 100_000, dtype=uint)
    random_negative = (random_bits | uint(1 << (info.bits - 1))).view(dtype)
    nans = np.array([np.nan, -np.nan], dtype)
    payload = np.array([1 << (info.nmant - 1) | 0x123], uint).view(dtype)
    specials = np.array([0.0, -0.0, -np.inf, -info.max, -info.tiny,
                         -info.smallest_subnormal], dtype)
    return np.concatenate([dense[dense <= 0], ramp, random_negative, nans, payload, -payload,
                           specials])


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_nonpositive_form_gives_the_general_bits(dtype, vector_bits):
    general = MathKernels(dtype, ["exp"], vector_bits=vector_bits)
    cheap = MathKernels(dtype, ["exp"], vector_bits=vector_bits, nonpositive=True)
    x = nonpositive_arguments(dtype)
    want, got = general("exp", x), cheap("exp", x)
    uint = _UINT[dtype]
    wrong = np.nonzero(want.view(uint) != got.view(uint))[0]
    assert wrong.size == 0, (x[wrong[:5]], want[wrong[:5]], got[wrong[:5]])


F32 = np.dtype(np.float32)


def _spec(ops: list[tuple[str, tuple[int, ...]]]) -> RowKernelSpec:
    inputs = (KernelInput(F32, 2, False), KernelInput(F32, 2, False))
    return RowKernelSpec(inputs, tuple(KernelOp(op, args, F32) for op, args in ops),
                         (len(inputs) + len(ops) - 1,), (2,), False)


def test_only_a_value_less_its_own_rows_max_is_nonpositive():
    # values 0, 1: the inputs x, y; then the ops in order
    assert nonpositive_values(_spec([("reduce_max", (0,)), ("sub", (0, 2)),
                                     ("exp", (3,))])) == {3}
    assert not nonpositive_values(_spec([("reduce_max", (0,)), ("sub", (1, 2))]))   # y - max(x)
    assert not nonpositive_values(_spec([("reduce_max", (0,)), ("sub", (2, 0))]))   # max(x) - x
    assert not nonpositive_values(_spec([("reduce_min", (0,)), ("sub", (0, 2))]))   # x - min(x)


def softmax_(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def logsumexp_(x):
    m = x.max(axis=-1, keepdims=True)
    return m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def quiet_rows(dtype: type, n: int) -> np.ndarray:
    """Rows whose softmax NumPy computes with no floating-point error: ordinary values,
    -0, -inf elements, -inf but for one finite value."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, n)).astype(dtype)
    x[1, ::3] = -np.inf
    x[1, 1::7] = -0.0
    x[2, :] = -np.inf
    x[2, -1] = 1.5
    return x


def nan_rows(dtype: type, n: int) -> np.ndarray:
    """Rows where x - max is NaN: NaNs (then every x - max is NaN), -inf only (-inf - -inf),
    +inf elements (inf - inf, and -inf elsewhere)."""
    x = quiet_rows(dtype, n)
    x[0, :] = np.nan
    x[1, n // 2] = -np.nan
    x[2, :] = -np.inf
    x[3, ::2] = np.inf
    return x


def warmed_up(fn, x: np.ndarray):
    scripted = tsjit.script(fn)
    for _ in range(3):
        scripted(np.zeros_like(x))
    return scripted


@pytest.mark.parametrize("fn", [softmax_, logsumexp_], ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [5, 8, 37, 1024])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_quiet_rows_raise_no_flag(fn, n, dtype):
    x = quiet_rows(dtype, n)
    scripted = warmed_up(fn, x)
    with np.errstate(all="raise"):
        want = fn(x)
        got = scripted(x)
    assert scripted.stats()["kernel_launches"] > 0
    assert scripted.stats()["bailouts"] == 0
    assert_same(got, want, ulps=4)


@pytest.mark.parametrize("fn", [softmax_, logsumexp_], ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [5, 37, 1024])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_rows_as_eagerly(fn, n, dtype):
    """With errors ignored the kernel's own NaN results are returned (a flag otherwise
    sends the call to NumPy: the max of a NaN raises invalid in the kernel, not in NumPy)."""
    x = nan_rows(dtype, n)
    scripted = warmed_up(fn, x)
    with np.errstate(all="ignore"):
        want = fn(x)
        got = scripted(x)
    assert scripted.stats()["bailouts"] == 0
    assert_same(got, want, ulps=4)


def outcome(fn, x, errstate: dict):
    """fn(x) (or the first line of FloatingPointError's message), its warnings and the
    handler's calls."""
    calls = []
    with warnings.catch_warnings(record=True) as caught, \
            np.errstate(**errstate, call=lambda kind, flag: calls.append((kind, flag))):
        warnings.simplefilter("always")
        try:
            result = fn(x)
        except FloatingPointError as error:
            result = str(error).splitlines()[0]   # scripted: then the source line
    return result, [(w.category, str(w.message)) for w in caught], calls


# x - max lands where exp underflows to a denormal or to 0 (NumPy reports it) next to
# values that do not
UNDERFLOWING = {np.float32: [0.0, -3.0, -95.0, -110.0, -np.inf],
                np.float64: [0.0, -3.0, -740.0, -800.0, -np.inf]}


@pytest.mark.parametrize("errstate", [{}, {"under": "raise"}, {"under": "warn"},
                                      {"under": "call"}, {"all": "ignore"}],
                         ids=lambda e: repr(e))
@pytest.mark.parametrize("n", [45, 150])   # 150: blocks of 64 run fast first
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_underflow_is_reported_as_eagerly(dtype, errstate, n):
    x = np.resize(np.array(UNDERFLOWING[dtype], dtype), (3, n))
    x[1] = np.resize(np.array([0.0, -1.0, -np.inf], dtype), n)   # a quiet row
    scripted = warmed_up(softmax_, x)
    want, got = outcome(softmax_, x, errstate), outcome(scripted, x, errstate)
    assert scripted.stats()["kernel_launches"] > 0
    assert want[1:] == got[1:]
    if errstate.get("under", "ignore") != "ignore":   # NumPy's default ignores underflow
        assert want[1] or want[2] or isinstance(want[0], str)
    if isinstance(want[0], str):
        assert got[0] == want[0]
    else:
        assert_same(got[0], want[0], ulps=4)


def softmax_and_exp(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True), e


# x - max where exp's fast form does not hold: a denormal or zero result, -inf (next to
# ordinary values in a row's blocks)
BLOCK_SPECIALS = {np.float32: [-86.5, -95.0, -110.0, -np.inf],
                  np.float64: [-707.5, -740.0, -800.0, -np.inf]}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_row_block_with_a_special_lane_is_computed_exactly(dtype):
    """Row kernels run blocks of 64 elements with exp's fast form first (``row_fast_
    blocks``), again exactly where some x - max is not ordinary: every element's exp has
    the general form's bits, whichever block holds the special lane, and the flags dropped
    in the fast pass do not send the call to NumPy."""
    general = MathKernels(dtype, ["exp"], vector_bits=256)
    rng = np.random.default_rng(5)
    specials = BLOCK_SPECIALS[dtype]
    x = rng.standard_normal((len(specials) + 1, 300)).astype(dtype)
    for row, value in enumerate(specials):
        x[row, 70 + 37 * row] = value   # (its x - max: about value - 3)
    x[-1] = np.finfo(dtype).tiny * np.arange(1, 301)    # tiny x - max throughout
    scripted = warmed_up(softmax_and_exp, x)
    with np.errstate(all="ignore"):
        softmax, e = scripted(x)
    assert scripted.stats()["bailouts"] == 0
    with np.errstate(all="ignore"):
        d = x - x.max(axis=-1, keepdims=True)
        want = general("exp", d.ravel()).reshape(d.shape)
    assert_same(e, want)
    assert_same(softmax, e / e.sum(axis=-1, keepdims=True))
