"""float32 exp through a table of 2**(j/8): a degree-3 polynomial instead of degree 6.

x = k ln2/8 + r with |r| <= ln2/16, k = 8m + j (j = k mod 8), and

    exp(x) = 2**m * hi_j * (1 + q),  q = r + r^2 (c0 + c1 r) ~ expm1(r),

hi_j = 2**(j/8) rounded to float32, from an 8-entry table (one vpermd per vector, see
vmath_table), 2**m an integer add to its exponent field, and hi_j 2**m (1 + q) one fused
step. The polynomial's absolute error is 2**-25.2 and hi_j's rounding adds up to half an
ulp: within 2 ulp (every float32 in [2**-40, 110] of both signs: 1.14 ulp against the
plain form's 1.02, both measured against float64 numpy). |r| is 8x smaller than the
plain reduction's (ln2/2): per exp 7 operations on the FMA pipes instead of 9 and one add
less. The LSTM cell and gelu are bound by their math functions' FMA chains (the
operations fill the two FMA pipes, the chains the out-of-order window): the cell ran
~4-6% faster (bench/kernel_against.py). tanh keeps the plain reduction: its numerator
E - 1 cancels, so its table would need hi_j's rounding error as a second table, and two
lookups and an add cost as much as the two FMAs saved (measured: no faster).

The shifter trick (x * 8 log2(e) + 1.5 * 2**23) puts k in the low bits of a float's
encoding: j is its low 3 bits (vpermd reads only those), and k << 20 is the encoding
shifted by 20 (the shifter's own bits shift out), which adds m to hi_j's exponent once
the table holds hi_j's bits minus j << 20.
"""

from __future__ import annotations

from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
from llvmlite import ir

from tsjit.codegen import vmath_poly as K
from tsjit.codegen import vmath_table

__all__ = ["exp_exact", "exp_fast", "exp_nonpositive"]

_SHIFTER = 1.5 * 2.0**23
_EIGHT_LOG2_E = K.rounded(8 * Fraction(K.LOG2_E), "float32")
# ln2/8 as a 13-bit head (k * head exact for |k| < 2**11: the exact exp's clamped
# arguments reach |k| = 1201) and a rounded tail.
_LN2_EIGHTH = K.split(Fraction(K.LN2) / 8, (13,), "float32")
# Minimax on |r| <= ln2/16 (widened by 0.1%: k may be off by one near a half-integer):
# expm1(r) = r + r^2 (c0 + c1 r), absolute error 2**-25.2.
_EXP_POLY = (0.5000649094581604, 0.16668109595775604)


def _powers() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(the bits of hi_j, of t_j) for j = 0..7: hi_j = 2**(j/8) rounded to float32, t_j =
    (2**(j/8) - hi_j) / hi_j rounded."""
    getcontext().prec = 50
    exact = [Decimal(2) ** (Decimal(j) / 8) for j in range(8)]
    hi = [np.float32(float(v)) for v in exact]
    tails = [np.float32(float((v - Decimal(float(h))) / Decimal(float(h))))
             for v, h in zip(exact, hi)]
    return tuple(int(h.view(np.int32)) for h in hi), tuple(int(t.view(np.int32)) for t in tails)


_HI_BITS, _TAIL_BITS = _powers()


# hi_j's bits minus j << 20: added to k << 20, the bits of hi_j * 2**m.
_SCALE_BITS = tuple(bits - (j << 20) for j, bits in enumerate(_HI_BITS))


def _reduce(em, x) -> tuple[ir.Value, ir.Value]:
    """(the shifter sum's bits, r): x = k ln2/8 + r, k in the sum's low bits."""
    shifted = em.mla(x, _EIGHT_LOG2_E, _SHIFTER)
    k = em.sub(shifted, _SHIFTER)
    head, tail = _LN2_EIGHTH
    return em.bits(shifted), em.mla(k, -tail, em.mla(k, -head, x))   # k * head is exact


# float32 arguments below this magnitude reduce to k = 0, r = x; every other argument of
# the clamped range reduces to |r| >= 2**-32 (the float32 nearest to each multiple k ln2/8,
# 0 < |k| <= 1202, is at least that far from it), so r^2 is normal.
_TINY = 2.0**-30


def _expm1(em, x, r, last=None):
    """q = expm1(r) by the degree-3 polynomial. Where ``em.denormal_underflow`` is unset, the
    tiny lanes (|x| < 2**-30: r = x) compute r + (r/2) r, so that r^2 is never rounded alone
    there: it underflows for |r| < 2**-63, where NumPy's exp is quiet (the polynomial
    rounds to 1/2 there; vmath._expm1_short_chain does the same). Where the mimicked loop
    raises underflow at denormal arguments, r^2 is rounded alone, which does. ``last``:
    the term added last in place of r (``_mantissa``'s r + t_j)."""
    c0, c1 = _EXP_POLY
    a = em.mla(r, c1, c0)
    last = r if last is None else last
    if em.denormal_underflow:
        return em.mla(em.mul(r, r), a, last)
    tiny = em.b.icmp_signed("<", em.bits(em.fabs(x)), em.bits(_TINY))
    w = em.mul(r, em.sel(tiny, 0.5, r))
    return em.mla(w, em.sel(tiny, r, a), last)


def exp_fast(em, x):
    """exp(x) for |x| <= 86 (results normal; other lanes: some value): the bits of the
    exact form's, as hi_j 2**m (1 + q) in one fused step, hi_j 2**m an integer add to the
    table's bits."""
    bits, r = _reduce(em, x)
    q = _expm1(em, x, r)
    scale = em.from_bits(em.b.add(vmath_table.lookup(em, _SCALE_BITS, bits),
                                  em.b.shl(bits, em.int(20))))
    return em.mla(scale, q, scale)


def _mantissa(em, x) -> tuple[ir.Value, ir.Value]:
    """(p, m) with exp(x) = p 2**m, p = hi_j (1 + q) rounded once (in [0.95, 2.1]), for x in
    [-104, 89]. Where p 2**m is below the normal range (m < -125), p is closer to the
    correctly rounded value: hi_j (1 + q + t_j), t_j hi_j's rounding error (a second
    table; 0 on the other lanes, which keep the fast form's bits). NumPy raises underflow
    there when its own p (2**(x - n ln2), nearly always correctly rounded) loses bits in
    the scaling, and hi_j's rounding alone changes the lost bits of more arguments (as
    many underflow flags NumPy does not raise, and the rest not raised)."""
    bits, r = _reduce(em, x)
    hi = em.from_bits(vmath_table.lookup(em, _HI_BITS, bits))
    m = em.b.ashr(em.b.sub(bits, em.bits(_SHIFTER)), em.int(3))
    deep = em.b.icmp_signed("<", m, em.int(-125))
    tail = em.guard(deep, em.from_bits(vmath_table.lookup(em, _TAIL_BITS, bits)), 0.0)
    return em.mla(hi, _expm1(em, x, r, em.add(r, tail)), hi), m


def exp_exact(em, x):
    """exp(x) for x in [-104, 89] (the caller clamps): p scaled by 2**m rounding once
    (ldexp), so denormal results and their underflow flags, and overflow beyond the
    largest float, as NumPy's."""
    return em.ldexp(*_mantissa(em, x))


def exp_nonpositive(em, x, offset: int):
    """exp(x) for x in [-104, 0] (the caller clamps): p 2**(m + offset) (an exact integer
    add: normal for m >= -151), times 2**-offset (rounded once): ``exp_exact``'s bits and
    flags by one multiply."""
    p, m = _mantissa(em, x)
    scaled = em.b.add(em.bits(p), em.b.shl(em.b.add(m, em.int(offset)), em.int(23)))
    return em.mul(em.from_bits(scaled), 2.0**-offset)
