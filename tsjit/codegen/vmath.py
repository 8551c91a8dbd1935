"""Transcendental functions as inline LLVM IR that the loop vectorizer widens.

Why not libm: LLVM scalarizes ``llvm.exp`` and friends into one ``expf`` call per lane, and a
fused kernel then runs ~5x slower than NumPy (shared/design/LLVM_NOTES.md). Every function
here is range reduction (exact integer and bit manipulation, Cody-Waite splits of ln 2 and
pi/2), a polynomial (vmath_poly), reconstruction, and ``select``s for special values: no
libm calls, no loops, so a float32 loop becomes ``<16 x float>`` code. The one branch:
sin, cos and tan send arguments beyond the Cody-Waite range to a Payne-Hanek reduction
that the module defines as vector functions, called once per vector that has such a lane
(vmath_trig explains why and what it costs).

Accuracy: within 4 ulp of the correctly rounded result over the whole domain (tests measure
at most 2 ulp), including signed zeros, infinities, NaN and denormal inputs and outputs, and
trig arguments up to the largest float; special values follow NumPy (C99 Annex F).

``llvm.fmuladd`` (fused where the CPU has FMA) evaluates polynomials; ``llvm.fma`` appears
only where an exact product is the algorithm (double-word arithmetic in pow and in trig's
argument reductions, x*x for erf), so a CPU without FMA would get correct but slow library
calls there. No fast-math flags are set: results do not depend on how the surrounding kernel
is compiled.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from llvmlite import ir

from tsjit.codegen import numpy_flags, numpy_nans, vmath_exp32, vmath_trig
from tsjit.codegen import vmath_poly as K
from tsjit.codegen.vmath_emit import F32, F64, Emit

__all__ = ["FAST_FORMS", "SUPPORTED", "emit_math"]


_INF = float("inf")


# ---------------------------------------------------------------- exp family


def _exp_reduce(em: Emit, x, x_lo=None, half=None) -> tuple[ir.Value, ir.Value]:
    """(expm1(r), n) with x + x_lo = n*ln2 + r, |r| <= ln2/2 (x already clamped to a range
    where n fits the formats' exponent arithmetic; |x_lo| at most an ulp of x). ``half``,
    if given, is x / 2 exactly (tanh's |x| for its x = 2|x|): n is computed from it, so
    that the first step does not wait for the doubling (see ``_tanh_of_magnitude``)."""
    ln2_hi, ln2_lo = em.fmt.split(K.LN2)
    # n = rint(x * log2(e)) as Emit.round_int computes it, with the product and the shifter
    # added in one fused step (one instruction less in every exp; n may then differ by one
    # near a half-integer, where |r| exceeds ln2/2 by a rounding error: as accurate).
    shifter = 1.5 * 2.0**em.fmt.mant_bits
    if half is None:
        shifted = em.mla(x, em.fmt.const(K.LOG2_E), shifter)
    else:   # (x/2) * (2 log2(e)) is x * log2(e) exactly: the same rounding, the same n
        shifted = em.mla(half, 2 * em.fmt.const(K.LOG2_E), shifter)
    n = em.b.sub(em.bits(shifted), em.bits(shifter))
    n_f = em.sub(shifted, shifter)
    r = em.mla(n_f, -ln2_lo, em.mla(n_f, -ln2_hi, x))  # n * ln2_hi is exact
    if x_lo is not None or em.fmt.name != "float32":
        return _expm1_poly(em, r if x_lo is None else em.add(r, x_lo)), n
    # tanh's x = 2|x| >= 2**-11 is never tiny; where tiny r raise underflow anyway, r^2
    # rounded alone raises it as the Horner form does (see ``_expm1_short_chain``)
    tiny = None if half is not None or em.denormal_underflow else \
        em.b.icmp_signed("<", em.bits(em.fabs(x)), em.bits(_SHORT_CHAIN_TINY))
    return _expm1_short_chain(em, r, tiny), n


def _expm1_poly(em: Emit, r):
    """expm1(r) for |r| <= ln2/2: r + r^2 (1/2 + r P(r)), the exact r added last.

    As r + r (r (1/2 + r P(r))), the fused step's product is never rounded alone, so a
    normal r raises no flag (r^2 underflows for |r| below 2**-63 float32 / 2**-511
    float64, where NumPy's exp and expm1 are quiet); a denormal r raises underflow when
    r/2 is inexact (odd bits). Where the mimicked loop raises underflow at every denormal
    argument (``denormal_underflow``), r^2 is rounded first instead, which does."""
    p = em.poly(r, (0.5, *K.EXPM1[em.fmt.name]))
    if em.denormal_underflow:
        return em.mla(em.mul(r, r), p, r)
    return em.mla(r, em.mul(r, p), r)


# float32 arguments below this magnitude reduce to n = 0, r = x; every other argument of
# exp's clamped range reduces to |r| >= 2**-29 (all of them tried), so r^2 is normal.
_SHORT_CHAIN_TINY = 2.0**-30


def _expm1_short_chain(em: Emit, r, tiny):
    """``_expm1_poly``'s value for float32 by a shorter dependency chain: r + r2 (a + r2 hi)
    with r2 = r^2, a = 1/2 + c1 r and hi = (c2 + c3 r) + c4 r2 (Estrin's scheme), 4 fused
    steps after r^2 instead of Horner's 6 after r. exp and tanh bound gelu and the LSTM cell
    by their chains (the out of order window holds only a few vectors' chains), not by
    their operation count. Other bits than Horner's, as accurate (within 2 ulp, as before).

    r2 rounded alone underflows for |r| below 2**-63, which the Horner form does not flag
    (it never rounds r^2 alone, except where ``denormal_underflow`` asks for it: ``tiny``
    is then None, as where r cannot be tiny). ``tiny`` lanes (|x| < 2**-30, r = x) take
    the Horner form's operations exactly, so the same bits and flags: there its polynomial
    rounds to 1/2, and r + r (r/2) is r + w v with w = r * (1/2) and v = r."""
    c0, c1, c2, c3, c4 = (0.5, *K.EXPM1["float32"])
    w = em.mul(r, r if tiny is None else em.sel(tiny, 0.5, r))   # r^2 (tiny: r/2)
    a = em.mla(r, c1, c0)
    hi = em.mla(w, c4, em.mla(r, c3, c2))
    p = em.mla(w, hi, a)
    return em.mla(w, p if tiny is None else em.sel(tiny, r, p), r)


# Below the low bound exp underflows to 0 (expm1 rounds to -1); above the high bound both
# overflow. Clamping there keeps n small enough for the exponent arithmetic.
_EXP_RANGE = {"float32": (-104.0, 89.0), "float64": (-746.0, 710.0)}
_EXPM1_LOW = {"float32": -20.0, "float64": -40.0}


def _exp(em: Emit, x, x_lo=None):
    """exp(x + x_lo); x_lo (pow's double-double exponent) is ignored where exp is 0 or inf,
    since it may then be inf or NaN itself."""
    low, high = _EXP_RANGE[em.fmt.name]
    special, finite = _finite_part(em, x)
    clamped = em.clamp(finite, low, high)
    if x_lo is not None:
        in_range = em.b.and_(em.b.not_(special), em.cmp_numbers("==", clamped, finite))
        x_lo = em.sel(in_range, x_lo, 0.0)
    if em.fmt is F32 and x_lo is None:
        value = vmath_exp32.exp_exact(em, clamped)
    else:
        e, n = _exp_reduce(em, clamped, x_lo)
        value = em.ldexp(em.add(e, 1.0), n)
    return _at_infinities_and_nan(em, x, special, value, 0.0)


# The offset K of ``_exp_nonpositive``'s scale 2**(n + K): n + K is a normal exponent for
# every n of its clamped range (n >= -151 in float32, >= -1077 in float64; n <= 0).
_NONPOSITIVE_OFFSET = {"float32": 64, "float64": 512}


def _exp_nonpositive(em: Emit, x):
    """exp(x) for x <= 0 or NaN (softmax's and logsumexp's ``x - max(x)``): ``_exp``'s bits
    and flags, with fewer operations on the multiply pipes, which bound exp-heavy row
    kernels on AVX2 (12 per vector instead of 17):
    - no upper clamp;
    - 2**n as 2**(n + K) (integer arithmetic) times 2**-K: the first product is exact,
      the second rounds once, as ldexp's second factor does, so subnormal results and
      their flags are the same;
    - the special lanes (-inf gives 0, NaN gives NumPy's NaN) by bit masks, not compares
      and blends.
    A positive argument would give a wrong result (+inf gives 0)."""
    fmt, b = em.fmt, em.b
    low, _ = _EXP_RANGE[fmt.name]
    special, finite = _finite_part(em, x)
    clamped = em.sel(em.cmp_numbers("<", finite, low), low, finite)
    offset = _NONPOSITIVE_OFFSET[fmt.name]
    if fmt is F32:
        value = vmath_exp32.exp_nonpositive(em, clamped, offset)
    else:
        e, n = _exp_reduce(em, clamped)
        value = em.mul(em.mul(em.add(e, 1.0), em.pow2(b.add(n, em.int(offset)))),
                       2.0**-offset)
    nan = em.magnitude_above(em.fabs(x), _INF)
    nan_bits = em.bits(x) if em.nan_argument_bits is None else em.int(em.nan_argument_bits)
    zero = em.int(0)
    return em.from_bits(b.or_(b.select(special, zero, em.bits(value)),
                              b.select(nan, nan_bits, zero)))


def _finite_part(em: Emit, x) -> tuple[ir.Value, ir.Value]:
    """(special, finite): whether x is +-inf or NaN, and x with those lanes replaced by 0.
    One integer test serves the clamp and the fix-up: clamping +-inf to the largest finite
    arguments would raise the overflow or underflow flags that NumPy's exact exp(+-inf)
    does not, and a NaN would raise invalid in the clamp's compares."""
    special = em.not_finite(x)
    return special, em.sel(special, 0.0, x)


def _at_infinities_and_nan(em: Emit, x, special, value, at_minus_inf: float):
    """``value``, with the special lanes' results put back: +inf at +inf, ``at_minus_inf``
    at -inf, NumPy's NaN for a NaN. The lanes are told apart by integer compares of x's
    bits: float compares would take the multiply pipes, which the polynomial keeps busy."""
    minus_inf = em.b.icmp_signed("==", em.bits(x), em.bits(-_INF))
    return em.sel(special, em.sel(minus_inf, at_minus_inf, em.nan_result(x)), value)


def _expm1(em: Emit, x):
    fmt = em.fmt
    special, finite = _finite_part(em, x)
    result = _expm1_in_range(em, em.clamp(finite, _EXPM1_LOW[fmt.name], _EXP_RANGE[fmt.name][1]))
    result = _at_infinities_and_nan(em, x, special, result, -1.0)
    return em.sel(em.cmp("==", x, 0.0), x, result)  # expm1(-0) = -0


def _expm1_in_range(em: Emit, x):
    """expm1(x) for x within the clamping range of ``_expm1`` (+0 gives +0): 2^n (1 + e) - 1
    = 2 ((s - 1/2) + s e) with s = 2^(n-1): s e and the doubling are exact, s - 1/2 is exact
    while it matters (for large n the 1/2 is below half an ulp), and s stays normal up to
    the overflow threshold."""
    half_scale, e = _expm1_halves(em, x)
    return em.mul(em.mla(half_scale, e, em.sub(half_scale, 0.5)), 2.0)


def _expm1_halves(em: Emit, x, half=None) -> tuple[ir.Value, ir.Value]:
    """(s, e) with expm1(x) = 2 ((s - 1/2) + s e), s = 2^(n-1) (see ``_expm1_in_range``;
    ``half`` as ``_exp_reduce``'s)."""
    e, n = _exp_reduce(em, x, half=half)
    return em.pow2(em.b.sub(n, em.int(1))), e


def _tanh_of_magnitude(em: Emit, ax):
    """tanh(ax) = expm1(2 ax) / (expm1(2 ax) + 2) for ax within [linear bound, saturation],
    as ((s - 1/2) + s e) / ((s + 1/2) + s e) (expm1's halves): numerator and denominator
    in parallel, each one fused step, rather than the denominator from the rounded
    numerator (a shorter dependency chain, which bounds gelu and the LSTM cell: the out
    of order window holds about four vectors' chains). For the same reason the reduction
    starts from ax rather than from 2 ax: the doubling runs beside its first step, three
    cycles off the chain (the same bits; float32 tanh 0.93 of the time with it, 64k
    elements, one thread)."""
    half_scale, e = _expm1_halves(em, em.mul(ax, 2.0), half=ax)
    numerator = em.mla(half_scale, e, em.sub(half_scale, 0.5))
    return em.div(numerator, em.mla(half_scale, e, em.add(half_scale, 0.5)))


# tanh(x) rounds to +-1 beyond these; clamping keeps expm1(2|x|) finite.
_TANH_SATURATION = {"float32": 10.0, "float64": 22.0}
# Below these tanh(x) rounds to x (x^3/3 is below half an ulp of x).
_TANH_LINEAR = {"float32": 2.0**-12, "float64": 2.0**-27}


def _tanh(em: Emit, x):
    """tanh|x| = expm1(2|x|) / (expm1(2|x|) + 2): no cancellation anywhere. |x| is clamped
    to [linear bound, saturation] (as integers: every lane's arithmetic stays in range, so
    tiny |x| raise no underflow and huge ones no overflow, as NumPy's tanh) and tiny x
    give x itself. 2|x| is within expm1's range and never -0: no sign fix-up needed. (NaN
    lanes saturate: emit_math puts the NaN back.)"""
    linear = _TANH_LINEAR[em.fmt.name]
    ax = em.clamp_magnitude(em.fabs(x), linear, _TANH_SATURATION[em.fmt.name])
    tiny = em.b.icmp_signed("<", em.bits(em.fabs(x)), em.bits(linear))
    return em.sel(tiny, em.tiny_result(x), em.with_sign_of(_tanh_of_magnitude(em, ax), x))


def _sigmoid(em: Emit, x):
    """1 / (1 + exp(-x)) through e = exp(-|x|): 1/(1+e) for x >= 0 and e/(1+e) below, so
    large negative x gives the tiny (even denormal) true value, not 0 from overflow."""
    e = _exp(em, em.neg(em.fabs(x)))
    numerator = em.sel(em.sign_set(x), e, 1.0)  # -0: e = 1
    return em.div(numerator, em.add(e, 1.0))


# ---------------------------------------------------------------- log family

# The bit pattern of sqrt(1/2): subtracting it before extracting the exponent puts the
# mantissa in [sqrt(1/2), sqrt(2)), where log(1+f) has the smallest |f|.
_SQRT_HALF_BITS = {"float32": 0x3F3504F3, "float64": 0x3FE6A09E667F3BCD}


def _log_reduce(em: Emit, x, normal: bool = False) -> tuple[ir.Value, ir.Value]:
    """(k, f) with x = 2^k (1 + f), 1 + f in [sqrt(1/2), sqrt(2)), for finite x > 0
    (``normal``: x is known normal, and is not scaled first: the same k and f)."""
    fmt = em.fmt
    if not normal:
        tiny = em.below_normal(x)
        x = _normalized(em, x)
    offset = em.b.sub(em.bits(x), em.int(_SQRT_HALF_BITS[fmt.name]))
    k = em.b.ashr(offset, em.int(fmt.mant_bits))
    z = em.from_bits(em.b.sub(em.bits(x), em.b.shl(k, em.int(fmt.mant_bits))))
    k_f = em.b.sitofp(k, em.ftype)
    if not normal:   # (k + 0 is k: normal arguments get the bits of the normal form)
        k_f = em.add(k_f, em.sel(tiny, -fmt.precision, 0.0))
    return k_f, em.sub(z, 1.0)  # exact: z within a factor of 2 of 1


def _normalized(em: Emit, x):
    """x scaled by 2**precision if it is denormal (or 0): a normal number then."""
    return em.mul(x, em.sel(em.below_normal(x), 2.0**em.fmt.precision, 1.0))


def _log1p_terms(em: Emit, f) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(s, hfsq, R) with log(1+f) = f - (hfsq - s*(hfsq + R)) (fdlibm): s = f/(2+f),
    hfsq = f^2/2 and R = s^2 P(s^2) the small remainder."""
    s = em.div(f, em.add(f, 2.0))
    z = em.mul(s, s)
    return s, em.mul(em.mul(f, f), 0.5), em.mul(z, em.poly(z, K.LOG[em.fmt.name]))


def _ln(em: Emit, x, correction=None, normal: bool = False):
    """log(x) for finite x > 0, plus ``correction`` (log1p's rounding term), fdlibm's
    k*ln2_hi - ((hfsq - (s*(hfsq+R) + k*ln2_lo)) - f): the exact f and k*ln2_hi come last
    (``normal``: see ``_log_reduce``)."""
    k, f = _log_reduce(em, x, normal)
    s, hfsq, big_r = _log1p_terms(em, f)
    ln2_hi, ln2_lo = em.fmt.split(K.LN2)
    small = em.mul(k, ln2_lo) if correction is None else em.mla(k, ln2_lo, correction)
    inner = em.sub(em.sub(hfsq, em.mla(s, em.add(hfsq, big_r), small)), f)
    return em.mla(k, ln2_hi, em.neg(inner))


@dataclass(frozen=True)
class _LogBase:
    """log_b(x) = k * log_b(2) + log(1 + f) * log_b(e); None stands for an exact 1."""

    log_of_2: str | None
    log_of_e: str


_LOG2 = _LogBase(None, K.LOG2_E)
_LOG10 = _LogBase(K.LOG10_2, K.LOG10_E)


def _log_base(em: Emit, x, base: _LogBase, normal: bool = False):
    """log_b(x) for finite x > 0: log(1+f) split into hi + lo with hi short, so that
    hi * (short head of log_b(e)) is exact and the rounding error of the large terms is
    carried in lo; k * log_b(2) is added by Fast2Sum (fdlibm's log2 and log10)
    (``normal``: see ``_log_reduce``)."""
    fmt = em.fmt
    k, f = _log_reduce(em, x, normal)
    s, hfsq, big_r = _log1p_terms(em, f)
    hi = em.clear_low_bits(em.sub(f, hfsq), fmt.short_bits)
    lo = em.mla(s, em.add(hfsq, big_r), em.sub(em.sub(f, hi), hfsq))
    c_hi, c_lo = fmt.split(base.log_of_e, head_bits=fmt.short_bits)
    val_hi = em.mul(hi, c_hi)
    val_lo = em.mla(lo, c_hi, em.mul(em.add(lo, hi), c_lo))
    y_hi = k
    if base.log_of_2 is not None:
        b_hi, b_lo = fmt.split(base.log_of_2)
        y_hi = em.mul(k, b_hi)
        val_lo = em.mla(k, b_lo, val_lo)
    w = em.add(y_hi, val_hi)
    return em.add(w, em.add(val_lo, em.add(em.sub(y_hi, w), val_hi)))


def _log_special(em: Emit, x, value, special=None):
    """``value`` where x is finite and positive, else log's value at 0, +inf, < 0, NaN,
    computed as x86 and NumPy compute them, flags and NaN bits included: -1/0 at +-0
    (divide by zero; every lane divides, by min(|x| normalized, 1) compared as integers,
    so no other lane raises a flag), sqrt(x) elsewhere: ``em.invalid(x)`` below 0 (the
    invalid flag, NumPy's NaN), +inf at +inf, and a NaN argument itself (its own bits, no
    flag; or the mimicked loop's NaN). ``special`` (x not finite and positive) may be
    given, if known."""
    if special is None:  # x - 1 beyond the largest finite: x <= +0, -0 (and every negative
        # number: its bits are unsigned-larger), +inf, NaN
        special = em.b.icmp_unsigned(">=", em.b.sub(em.bits(x), em.int(1)),
                                     em.int(em.fmt.inf_bits - 1))
    magnitude, one = em.bits(em.fabs(_normalized(em, x))), em.bits(1.0)
    divisor = em.b.select(em.b.icmp_unsigned(">", magnitude, one), one, magnitude)
    at_zero = em.neg(em.div(1.0, em.from_bits(divisor)))
    elsewhere = em.invalid(x)
    if em.invalid_nan_positive or em.nan_argument_bits is not None:
        elsewhere = em.sel(em.cmp("uno", x, x), em.nan_result(x), elsewhere)
    return em.sel(special, em.sel(em.cmp("==", x, 0.0), at_zero, elsewhere), value)


def _log(em: Emit, x):
    return _log_special(em, x, _ln(em, x))


def _logarithm(base: _LogBase) -> Callable[[Emit, ir.Value], ir.Value]:
    def emit(em: Emit, x):
        return _log_special(em, x, _log_base(em, x, base))

    return emit


def _log1p(em: Emit, x):
    """log(u) + c/u where u + c == 1 + x exactly (u = fl(1 + x)): small x keep their
    relative accuracy through the correction c, which is left out where |x| > 2**(p+1)
    (below an ulp of the result there, and c/u would underflow: NumPy raises no flag)."""
    not_finite, finite = _finite_part(em, x)  # (two_sum of inf: inf - inf, invalid)
    u, c = em.two_sum(em.v(1.0), finite)
    c = em.sel(em.magnitude_above(em.fabs(x), 2.0 ** (em.fmt.precision + 1)), 0.0, c)
    correction = em.div(c, em.sel(em.cmp("==", u, 0.0), 1.0, u))  # x = -1: c = 0
    argument = em.sel(not_finite, x, u)
    value = _log_special(em, argument, _ln(em, u, correction=correction))
    return em.sel(em.below_normal(x), em.tiny_result(x), value)  # log1p(-0) = -0


# ---------------------------------------------------------------- pow


def _log_double_word(em: Emit, a) -> tuple[ir.Value, ir.Value]:
    """log(a) as hi + lo, relative error about 2**-66 (float64) or 2**-36 (float32), for
    finite a > 0.

    log(1+f) = 2s + 2s^3/3 + s^5 P(s^2) with s = f/(2+f): s and the first two terms are
    carried as double-words with exact (fma) products; the rest is below 2**-12 of the
    total, so working precision suffices for it."""
    fmt = em.fmt
    k, f = _log_reduce(em, a)
    d_hi = em.add(f, 2.0)
    d_lo = em.add(em.sub(2.0, d_hi), f)  # Fast2Sum: |f| < 2
    reciprocal = em.div(1.0, d_hi)
    s_hi = em.mul(f, reciprocal)
    residual = em.fma(em.neg(s_hi), d_hi, f)  # exact: f - s_hi * d_hi
    s_lo = em.mul(em.sub(residual, em.mul(s_hi, d_lo)), reciprocal)
    z = em.mul(s_hi, s_hi)
    z_lo = em.fma(s_hi, s_hi, em.neg(z))
    s3 = em.mul(z, s_hi)
    s3_lo = em.add(em.fma(z, s_hi, em.neg(s3)), em.mla(z_lo, s_hi, em.mul(em.mul(z, 3.0), s_lo)))
    c_hi, c_lo = fmt.split(K.TWO_THIRDS, head_bits=fmt.precision)
    t3 = em.mul(c_hi, s3)
    t3_lo = em.add(em.fma(c_hi, s3, em.neg(t3)), em.mla(c_hi, s3_lo, em.mul(c_lo, s3)))
    rest = em.mul(em.mul(s3, z), em.poly(z, K.LOG_TAIL[fmt.name]))
    two_s = em.mul(s_hi, 2.0)
    h = em.add(two_s, t3)
    h_lo = em.add(em.sub(t3, em.sub(h, two_s)), em.add(em.mla(s_lo, 2.0, t3_lo), rest))
    ln2_hi, ln2_lo = fmt.split(K.LN2)
    total, total_lo = em.two_sum(em.mul(k, ln2_hi), h)
    lo = em.add(total_lo, em.mla(k, ln2_lo, h_lo))
    hi = em.add(total, lo)
    return hi, em.sub(lo, em.sub(hi, total))


def _pow(em: Emit, x, y):
    """x**y = exp(y log|x|) with C99 / NumPy special cases. log|x| and y log|x| are
    double-words: |y log x| reaches 745 (float64) / 104 (float32), so its absolute error
    must stay near 2**-62 / 2**-33 for a result within an ulp.

    Flags as NumPy's: the logarithm runs on 1 where x is 0, inf or NaN, whose log|x|
    (-inf, inf, NaN) is put in as a constant; y log|x| never multiplies 0 by inf (y = 0
    and 1**inf give 1 below) and its rounding error is taken of finite factors only; the
    divide-by-zero of 0 ** negative is raised by a division of its own."""
    ax = em.fabs(x)
    finite_positive = em.b.and_(em.cmp(">", ax, 0.0), em.cmp("<", ax, _INF))
    # (|x| limited to [the smallest denormal, the largest finite] as integers: 0, inf and
    # NaN lanes take the log of a finite positive number, whose result is not used)
    largest = em.from_bits(em.int(em.fmt.inf_bits - 1))
    log_hi, log_lo = _log_double_word(em, em.clamp_magnitude(ax, em.from_bits(em.int(1)),
                                                             largest))
    zero = em.cmp("==", ax, 0.0)
    log_hi = em.guard(finite_positive, log_hi, em.guard(zero, -_INF, ax))
    y_infinite = em.cmp("==", em.fabs(y), _INF)
    y_used = em.guard(em.b.or_(em.cmp("==", y, 0.0),
                               em.b.and_(em.cmp("==", ax, 1.0), y_infinite)), 1.0, y)
    y_finite = em.guard(y_infinite, 0.0, y)
    finite_log = em.guard(finite_positive, log_hi, 0.0)
    p = em.mul(y_used, log_hi)
    p_lo = em.mla(y_finite, em.guard(finite_positive, log_lo, 0.0),
                  em.fma(y_finite, finite_log, em.neg(em.mul(y_finite, finite_log))))
    # 0 ** negative finite: inf with divide by zero, as 1/|x|. Every lane divides, by |x|
    # limited to [smallest normal, 1] as integers but on those lanes (which keep 0), so
    # that no other lane raises a flag (a float select there would be folded: LLVM would
    # divide by |x| itself)
    pole = em.b.and_(zero, em.b.and_(em.cmp("<", y, 0.0), em.b.not_(y_infinite)))
    divisor = em.clamp_magnitude(ax, em.guard(pole, 0.0, em.fmt.min_normal), 1.0)
    magnitude = em.sel(pole, em.div(1.0, divisor), _exp(em, p, p_lo))
    # y odd: an integer whose half is not; large |y| and +-inf count as even integers
    y_integer = em.cmp("==", em.floor(y), y)
    half = em.mul(y, 0.5)
    y_odd = em.b.and_(y_integer, em.cmp("!=", em.floor(half), half))
    negative = em.b.and_(em.b.icmp_signed("<", em.bits(x), em.int(0)), y_odd)
    result = em.sel(negative, em.neg(magnitude), magnitude)
    # negative finite x with a non-integer y: an invalid operation (the invalid flag and
    # NumPy's NaN, as NumPy's pow); a NaN x or y propagates its bits
    finite_negative = em.b.and_(em.cmp("<", x, 0.0), em.cmp(">", x, -_INF))
    invalid = em.b.and_(em.b.and_(finite_negative, em.cmp("ord", y, y)), em.b.not_(y_integer))
    # (sqrt of x on those lanes only: of |x| elsewhere, an arm no fold can turn constant)
    result = em.sel(invalid, em.invalid(em.sel(invalid, x, ax)), result)
    # a NaN x gives glibc's x * x (NumPy's pow): x quieted, its sign flipped where it is
    # negative and y an odd integer (-nan ** 3 is +nan; -nan ** 4 stays -nan); x + y,
    # quiet x too, where y is NaN or infinite (neither odd)
    quiet = em.from_bits(em.b.or_(em.bits(x), em.int(1 << (em.fmt.mant_bits - 1))))
    result = em.sel(em.cmp("uno", x, x), em.sel(negative, em.neg(quiet), quiet), result)
    # 1**y, x**0 and (-1)**+-inf are 1, even for a quiet NaN (y log|x| would give NaN or
    # 0*inf); glibc's pow (NumPy's loop of array exponents) gives x + y, a NaN, where the
    # other is a signalling NaN: pow(sNaN, 0) and pow(1, sNaN) are the NaN quieted
    def quiet(v):
        return em.b.or_(em.cmp("ord", v, v), em.b.icmp_unsigned("!=", em.b.and_(
            em.bits(v), em.int(1 << (em.fmt.mant_bits - 1))), em.int(0)))
    one = em.b.or_(em.b.or_(em.b.and_(em.cmp("==", x, 1.0), quiet(y)),
                            em.b.and_(em.cmp("==", y, 0.0), quiet(x))),
                   em.b.and_(em.cmp("==", x, -1.0), em.cmp("==", em.fabs(y), _INF)))
    return em.sel(one, 1.0, result)


# ---------------------------------------------------------------- arctan

# Thresholds of the argument reduction (their exact values do not matter).
_TAN_PI_8 = math.sqrt(2.0) - 1.0
_TAN_3PI_8 = math.sqrt(2.0) + 1.0


def _atan_parts(em: Emit, a) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(m, t, p) with atan(a) = m*pi/4 + t + p for 0 <= a <= +inf: t = a, (a-1)/(a+1) or
    -1/a so that |t| <= tan(pi/8), and p = t^3 P(t^2) the small rest."""
    beyond = em.cmp(">", a, _TAN_3PI_8)
    middle = em.cmp(">", a, _TAN_PI_8)
    t = em.div(em.sel(beyond, -1.0, em.sel(middle, em.sub(a, 1.0), a)),
               em.sel(beyond, a, em.sel(middle, em.add(a, 1.0), 1.0)))
    m = em.sel(beyond, 2.0, em.sel(middle, 1.0, 0.0))
    z = em.mul(t, t)
    return m, t, em.mul(em.mul(z, t), em.poly(z, K.ATAN[em.fmt.name]))


def _quarter_pis_plus(em: Emit, m, t, p):
    """m*pi/4 + t + p for an integer 0 <= m <= 4, with pi/4 as a short head (so m*head is
    exact) and a tail, the exact large term added last."""
    head, tail = em.fmt.split(Fraction(K.PI) / 4, head_bits=em.fmt.precision - 2)
    return em.mla(m, head, em.add(t, em.mla(m, tail, p)))


def _arctan(em: Emit, x):
    return em.copysign(_quarter_pis_plus(em, *_atan_parts(em, em.fabs(x))), x)


def _arctan2(em: Emit, y, x):
    """atan(min/max of |x|, |y|) in [0, pi/4], mirrored to the octant of (x, y) by
    pi/2 - v (|y| > |x|) and pi - v (x negative, -0 included), with C99's special cases
    following from 0/0 -> 0 and inf/inf -> 1."""
    ax, ay = em.fabs(x), em.fabs(y)
    steep = em.cmp(">", ay, ax)
    a = em.div(em.sel(steep, ax, ay), em.sel(steep, ay, ax))
    both_zero = em.b.and_(em.cmp("==", ax, 0.0), em.cmp("==", ay, 0.0))
    both_inf = em.b.and_(em.cmp("==", ax, _INF), em.cmp("==", ay, _INF))
    a = em.sel(both_zero, 0.0, em.sel(both_inf, 1.0, a))
    m, t, p = _atan_parts(em, a)
    for mirror, quarters in ((steep, 2.0), (em.b.icmp_signed("<", em.bits(x), em.int(0)), 4.0)):
        m = em.sel(mirror, em.sub(quarters, m), m)
        t = em.sel(mirror, em.neg(t), t)
        p = em.sel(mirror, em.neg(p), p)
    return em.copysign(_quarter_pis_plus(em, m, t, p), y)


# ---------------------------------------------------------------- erf

# erf(x) rounds to +-1 beyond these.
_ERF_SATURATION = {"float32": 4.0, "float64": 6.0}


def _erf(em: Emit, x):
    """x + x P(x^2) below 1; above, 1 - exp(-x^2) * Q(1/x - center) with Q from the piece
    of [1, saturation) that holds |x|. All pieces share one Horner evaluation whose variable
    and coefficients are selected per lane; x^2 enters exp as an exact double-word."""
    fmt = em.fmt
    saturation = _ERF_SATURATION[fmt.name]
    # |x| saturated: NaN too (emit_math puts it back), so the compares below see numbers
    ax = em.sel(em.magnitude_above(em.fabs(x), saturation), saturation, em.fabs(x))
    small = em.cmp_numbers("<", ax, 1.0)
    x2 = em.mul(ax, ax)
    pieces = K.ERFC_SCALED[fmt.name]
    inner = K.ERF_SMALL[fmt.name]
    degree = max(len(inner), *(len(coeffs) for _, _, coeffs in pieces))
    center = em.v(0.0)
    coefficients = [em.v(0.0)] * degree
    for start, piece_center, coeffs in pieces:
        here = em.cmp_numbers(">=", ax, start)
        center = em.sel(here, piece_center, center)
        coefficients = [em.sel(here, c, old) for c, old in zip(coeffs, coefficients)]
    padded = list(inner) + [0.0] * (degree - len(inner))
    coefficients = [em.sel(small, c, old) for c, old in zip(padded, coefficients)]
    p = em.poly(em.sel(small, x2, em.sub(em.div(1.0, ax), center)), coefficients)
    e = _exp(em, em.neg(x2))
    e = em.mla(em.neg(e), em.fma(ax, ax, em.neg(x2)), e)  # exp(-x2 - x2_lo)
    return em.copysign(em.sel(small, em.mla(ax, p, ax), em.mla(em.neg(e), p, 1.0)), x)


# ---------------------------------------------------------------- fast forms

# Fast forms compute their function with the exact form's bits and flags where the argument
# is ordinary, and give NaN wherever it is not: a kernel finds those lanes in its outputs
# (elementwise's fast blocks), as NaN propagates, and computes their block again exactly.

# exp's ordinary arguments: |x| <= these (0, tiny and denormal magnitudes included), where
# its result is normal, so that 2**n is an integer add to the exponent field of e + 1, and
# its main formula is the exact form's (no clamp, no infinity or NaN lane, no two-step
# ldexp): the exact form computes tiny arguments by the same operations (n = 0).
_EXP_FAST_LIMIT = {"float32": 86.0, "float64": 707.0}


def _nan_where(em: Emit, outside, value):
    """``value``, NaN where ``outside``."""
    return em.sel(outside, float("nan"), value)


def _fast_exp(em: Emit, x):
    """``_exp``'s value on ordinary arguments (|x| up to the limit), with five operations
    less; the others (NaN and infinities too: the compare is unordered) come out as the NaN
    of all bits set, by an or of one float compare's mask. A compare of |x|'s bits (two
    operations in AVX2: it is unsigned) and a blend with a NaN held in a register cost the
    LSTM cell, whose stages are bound by their chains and the 16 vector registers, 1-4%
    (the blend's constant was spilled). A signaling compare's invalid flag at a NaN lane
    is dropped with the rest of that block's fast pass."""
    outside = em.b.fcmp_unordered(">", em.fabs(x), em.v(_EXP_FAST_LIMIT[em.fmt.name]))
    return em.from_bits(em.b.or_(em.bits(_fast_exp_value(em, x)),
                                 em.b.sext(outside, em.itype)))


def _fast_exp_value(em: Emit, x):
    """The fast forms' exp(x), right where |x| is up to the limit (unchecked)."""
    if em.fmt is F32:
        return vmath_exp32.exp_fast(em, x)
    e, n = _exp_reduce(em, x)
    return em.from_bits(em.b.add(em.bits(em.add(e, 1.0)),
                                 em.b.shl(n, em.int(em.fmt.mant_bits))))


def _fast_exp_nonpositive(em: Emit, x):
    """``_fast_exp`` for arguments <= 0 or NaN (softmax's ``x - max``): the ordinary ones
    are those not below -limit, one quiet float compare that NaN fails too, and the others
    come out as the NaN of all bits set (an or: no blend; row kernels only test for NaN).
    ``_fast_exp``'s |x| test is an and and an unsigned integer compare, which AVX2 does in
    two operations, then a blend: softmax's exp loop is bound by its operation count."""
    outside = em.b.fcmp_unordered("<", x, em.v(-_EXP_FAST_LIMIT[em.fmt.name]))
    return em.from_bits(em.b.or_(em.bits(_fast_exp_value(em, x)), em.b.sext(outside, em.itype)))


def _fast_tanh(em: Emit, x):
    """``_tanh`` but for NaN arguments, which give some NaN through the formula: |x| is
    limited below by an integer max (as ``_tanh`` limits it: the tiny lanes' select then
    takes the same values and flags) and above by a float min, which keeps a NaN, instead
    of the exact form's integer clamp, which turns it into the saturation bound (and its
    result into NumPy's NaN by a select)."""
    fmt = em.fmt
    linear, saturation = _TANH_LINEAR[fmt.name], _TANH_SATURATION[fmt.name]
    bits = em.bits(em.fabs(x))
    above_linear = em.from_bits(em.b.select(em.b.icmp_signed("<", bits, em.bits(linear)),
                                            em.bits(linear), bits))
    # saturation < ax ? saturation : ax: x86's min with ax second, which a NaN ax passes
    ax = em.sel(em.b.fcmp_ordered("<", em.v(saturation), above_linear), saturation,
                above_linear)
    tiny = em.b.icmp_signed("<", bits, em.bits(linear))
    return em.sel(tiny, em.tiny_result(x), em.with_sign_of(_tanh_of_magnitude(em, ax), x))


def _not_normal_positive(em: Emit, x):
    """Whether x is not a normal positive number (0, denormals, negatives, inf, NaN): one
    unsigned compare of its bits offset by the smallest normal's."""
    b, smallest = em.b, 1 << em.fmt.mant_bits   # the smallest normal's bits
    offset = b.sub(em.bits(x), em.int(smallest))
    return b.icmp_unsigned(">", offset, em.int(em.fmt.inf_bits - 1 - smallest))


def _fast_logarithm(base: _LogBase | None):
    """The log family on normal positive arguments: no scaling of denormals, and none of
    ``_log_special``'s lanes (its divide and square root run on every lane)."""
    def emit(em: Emit, x):
        value = _ln(em, x, normal=True) if base is None else _log_base(em, x, base, True)
        return _nan_where(em, _not_normal_positive(em, x), value)

    return emit


# name -> fast form: the function's bits and flags on ordinary arguments, NaN elsewhere.
_FAST: dict[str, Callable[[Emit, ir.Value], ir.Value]] = {
    "exp": _fast_exp, "tanh": _fast_tanh, "log": _fast_logarithm(None),
    "log2": _fast_logarithm(_LOG2), "log10": _fast_logarithm(_LOG10)}
FAST_FORMS: frozenset[str] = frozenset(_FAST)
# The fast forms for arguments known to be <= 0 or NaN (emit_math's ``nonpositive``).
_FAST_NONPOSITIVE: dict[str, Callable[[Emit, ir.Value], ir.Value]] = {
    "exp": _fast_exp_nonpositive}


# ---------------------------------------------------------------- dispatch


def _sqrt(em: Emit, x):
    return em.sqrt(x)


# name -> (arity, emitter); NumPy's names and argument order: arctan2(y, x), pow(x, y).
_FUNCTIONS: dict[str, tuple[int, Callable[..., ir.Value]]] = {
    "exp": (1, _exp),
    "expm1": (1, _expm1),
    "log": (1, _log),
    "log2": (1, _logarithm(_LOG2)),
    "log10": (1, _logarithm(_LOG10)),
    "log1p": (1, _log1p),
    "tanh": (1, _tanh),
    "sigmoid": (1, _sigmoid),
    "sqrt": (1, _sqrt),
    "sin": (1, vmath_trig.sin),
    "cos": (1, vmath_trig.cos),
    "tan": (1, vmath_trig.tan),
    "arctan": (1, _arctan),
    "arctan2": (2, _arctan2),
    "pow": (2, _pow),
    "erf": (1, _erf),
}

SUPPORTED: frozenset[str] = frozenset(_FUNCTIONS)
# Forms for arguments known to be <= 0 or NaN (emit_math's ``nonpositive``).
_NONPOSITIVE_FORMS: dict[str, Callable[..., ir.Value]] = {"exp": _exp_nonpositive}


def emit_math(builder: ir.IRBuilder, name: str, args: list[ir.Value],
              like: str | None = None, nonpositive: bool = False,
              fast: bool = False) -> ir.Value:
    """Emit `name` applied to scalar float/double values (all args same type: ir.FloatType() or
    ir.DoubleType()); returns a value of the same type. Select-based code that the loop
    vectorizer can widen: no libm calls, no loops. sin, cos and tan branch (rarely) to a
    function they define in the builder's module, so the builder may end in a new block:
    callers continue at ``builder.block``. NaN results have the bits of NumPy's loop for
    the dtype ``like`` (default: the arguments' own type), as numpy_nans finds them, and
    denormal arguments raise underflow as numpy_flags finds it. ``nonpositive``: the (one)
    argument is known to be <= 0 or NaN, which some functions compute more cheaply
    (``_NONPOSITIVE_FORMS``), with the same results.

    ``fast``: a function in FAST_FORMS takes its fast form, whose value is the exact
    form's bits and flags where the argument is ordinary and NaN elsewhere (where it may
    raise any flag): the caller computes a block whose results hold a NaN again without
    ``fast`` (elementwise's fast blocks). Ordinary lanes cost fewer operations."""
    if name not in _FUNCTIONS:
        raise ValueError(f"vmath has no function {name!r}; supported: {sorted(SUPPORTED)}")
    arity, emit = _FUNCTIONS[name]
    if nonpositive:
        emit = _NONPOSITIVE_FORMS.get(name, emit)
    if len(args) != arity:
        raise ValueError(f"{name} takes {arity} argument(s), got {len(args)}")
    ty = args[0].type
    if any(a.type != ty for a in args) or not isinstance(ty, (ir.FloatType, ir.DoubleType)):
        raise TypeError(f"{name}: arguments must all be float or all double, got "
                        f"{[str(a.type) for a in args]}")
    fmt = F64 if isinstance(ty, ir.DoubleType) else F32
    nans = numpy_nans.nan_bits(name, like or fmt.name)
    own_bits = None if nans.argument is None else \
        numpy_nans.converted(nans.argument, like or fmt.name, fmt.name)
    em = Emit(builder, fmt, invalid_nan_positive=nans.invalid_positive,
              nan_argument_bits=own_bits,
              # (half arguments are normal numbers in the float arithmetic used for them)
              denormal_underflow=(like or fmt.name) == fmt.name
              and numpy_flags.underflows_at_denormals(name, fmt.name))
    if fast and nonpositive and name in _FAST_NONPOSITIVE:
        return _FAST_NONPOSITIVE[name](em, *args)
    if fast and name in _FAST:   # nonpositive too: the same bits where ordinary
        return _FAST[name](em, *args)
    result = emit(em, *args)
    if arity == 1 and name not in _NAN_RESULT_FOLDED:
        result = em.with_nan_result(args[0], result)
    return result


# One-argument functions whose code gives ``Emit.nan_result`` for a NaN argument in the
# select of its other special values; emit_math adds that select to the others.
_NAN_RESULT_FOLDED = frozenset({"exp", "expm1", "log", "log2", "log10", "log1p"})

