"""sin, cos and tan for every finite argument, as LLVM IR that the loop vectorizer widens.

Each is an argument reduction x = n * pi/2 + r (|r| <= pi/4), the fdlibm polynomial kernels
of sin and cos on r, and the quadrant n mod 4 choosing and signing one of them. Two
reductions share the kernels:

- Cody-Waite below ``LIMIT``: n * pi/2 subtracted in pieces, exactly while n is small
  (2**27 for float64; float32 in its own arithmetic below 2**20, and in float64 below
  2**37 out of line).
- Payne-Hanek beyond: x times only the bits of 2/pi that can change x * 2/pi mod 4. Those
  are a window of 2/pi starting near bit exponent(x) - 53, read from a table of 64-bit words
  (a gather) and cut into four 53-bit integers; the products of the mantissa of x with
  them are exact (fma), the multiples of 4 are dropped exactly, and the rest is summed as a
  double-double. So r keeps ~2**-150 absolute accuracy even for the doubles closest to a
  multiple of pi/2 (r ~ 2**-61), and the result stays within the kernels' error.

Where the large arguments go: the scalar code a kernel gets branches on |x| >= LIMIT (a
rare, ``unlikely`` branch) to a call of an out-of-line function that the module defines
with masked vector variants (VFABI "vector-function-abi-variant"), one body shared by sin,
cos and tan. The loop vectorizer turns the branch into a call of the variant once per
vector, with those lanes as its mask; the variant returns at once when no lane is set.

Measured on Zen 4 (bench/vmath_speed.py, 16M elements, one thread), against the former code
(Cody-Waite only, inaccurate beyond it): ordinary float64 arguments take 0.87-0.93x its time
(the branch replaced a select), float32 0.55-0.60x (its own Cody-Waite); computing
Payne-Hanek in line for every lane and selecting made them 4-7x slower. A vector holding a
huge lane costs ~7 ns per element (float32 between 2**20 and 2**37: ~1.6 ns). A kernel
using trig compiles in ~36 ms instead of ~19. glibc's libmvec (``_ZGVeN8v_sin``...) is
faster still (~0.7x) and within 3 ulp, but it would tie kernels to one C library's symbols
and versions; vmath stays self-contained.

Accuracy (tests/test_vmath.py, bench --every-float32): every float32 within 2 ulp of the
correctly rounded result (sin and cos 1 ulp but for 494 sin values near 2**19.7); float64
within 1 ulp (tan 2) on random bit patterns, every binade and the hardest arguments.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from fractions import Fraction

from llvmlite import ir

from tsjit.codegen import vmath_poly as K
from tsjit.codegen import vmath_table
from tsjit.codegen.vmath_emit import F32, F64, Emit, Format

__all__ = ["LIMIT", "cos", "sin", "tan"]

_INF = float("inf")

# Arguments from which the inline Cody-Waite reduction would round: the out-of-line code
# takes over (float32 with a float64 Cody-Waite up to _WIDENED_LIMIT, then Payne-Hanek).
LIMIT = {"float32": 2.0**20, "float64": 2.0**27}
_WIDENED_LIMIT = 2.0**37

# pi/2 as short heads (n * head is exact for n below 2**(53 - head bits)) and a rounded
# tail. float64 needs 131 bits for the worst cancellation of a double below 2**27; float32
# inputs have 24 significant bits and fewer hard cases, so 16-bit heads serve up to 2**37.
_PIO2 = {
    "float64": K.split(Fraction(K.PI) / 2, (26, 26, 26), "float64"),
    "float32": K.split(Fraction(K.PI) / 2, (16, 16, 16), "float64"),
}
# pi/2 as two float32 pieces of 24 bits and a rounded third.
_PIO2_SINGLE = K.split(Fraction(K.PI) / 2, (24, 24), "float32")
_TWO_OVER_PI_SINGLE = K.rounded(2 / Fraction(K.PI), "float32")
_PIO2_DOUBLE_WORD = K.split(Fraction(K.PI) / 2, (53,), "float64")
_TWO_OVER_PI = K.rounded(2 / Fraction(K.PI), "float64")

# 2/pi in 64-bit words after a zero word (vmath_poly.two_over_pi_words): enough for the
# window of the largest double, which ends 212 bits after bit 1023 - 53.
_TWO_OVER_PI_WORDS = K.two_over_pi_words(21)
_TABLE_NAME = "tsjit_vmath_two_over_pi"


def _reduce_cody_waite(em: Emit, x) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(r, r_lo, n) with x = n * pi/2 + r + r_lo, |r| <= pi/4 and |r_lo| far below |r|, for
    |x| < LIMIT (other lanes get some finite or NaN value)."""
    return _reduce_single(em, x) if em.fmt is F32 else _reduce_widened(em, x)


def _reduce_single(em: Emit, x) -> tuple[ir.Value, ir.Value, ir.Value]:
    """Cody-Waite in float32 arithmetic for |x| < 2**20, so n < 2**20 too.

    x - n * p0 is exact: an fma, and both terms are multiples of 2**-24 (|x| >= 1/2; for
    smaller x, n = 0) whose difference is below 1. n * p1 splits exactly into two floats
    (fma) and TwoSum subtracts the larger one exactly. What is left (the TwoSum error, the
    low part of n * p1, n * p2: ~n * 2**-47) goes to r_lo; its roundings (~n * 2**-71) and
    pi/2 cut after 72 bits (~n * 2**-73) stay below 2**-27 of r even at the float32 nearest
    a multiple of pi/2 of each binade (r ~ 2**-27.8 at 252.89820, 2**-23.8 near 2**19).
    r_lo can reach r/16 there: the kernels use it to first order, which is then exact
    enough (the next term is below 2**-50 of the result)."""
    n_f, n = em.round_int(em.mul(x, _TWO_OVER_PI_SINGLE))
    p0, p1, p2 = _PIO2_SINGLE
    r0 = em.fma(n_f, -p0, x)
    c, c_lo = em.two_prod(n_f, p1)
    r, r_error = em.two_sum(r0, em.neg(c))
    return r, em.mla(n_f, -p2, em.sub(r_error, c_lo)), n


def _reduce_widened(em: Emit, x) -> tuple[ir.Value, ir.Value, ir.Value]:
    """Cody-Waite in float64 (float32 inputs are widened) for |x| < 2**27 (float64) or
    2**37 (float32): x - n * head is exact (Sterbenz), and so are the products with the
    other heads, so while n is small enough the only roundings are at the size of r itself.
    float64 sums the pieces with TwoSum into a double-double; float32 rounds the float64 r,
    r_lo below half an ulp of r."""
    wide = em.promoted()
    x = em.to(x, F64)
    n_f, n = wide.round_int(wide.mul(x, _TWO_OVER_PI))
    head, *pieces = _PIO2[em.fmt.name]
    r = wide.mla(n_f, -head, x)
    if em.fmt is F32:
        for piece in pieces:
            r = wide.mla(n_f, -piece, r)
        return _narrowed(em, r, wide.v(0.0), n)
    s, e1 = wide.two_sum(r, wide.mul(n_f, -pieces[0]))
    s, e2 = wide.two_sum(s, wide.mul(n_f, -pieces[1]))
    tail = wide.mla(n_f, -pieces[2], wide.add(e1, e2))
    r = wide.add(s, tail)
    return r, wide.sub(tail, wide.sub(r, s)), n


def _narrowed(em: Emit, r, r_lo, n) -> tuple[ir.Value, ir.Value, ir.Value]:
    """A float64 reduction (r + r_lo, n) in the float32 kernels' terms."""
    wide = em.promoted()
    r_hi = wide.to(r, F32)
    r_rest = wide.add(wide.sub(r, em.to(r_hi, F64)), r_lo)
    return r_hi, wide.to(r_rest, F32), em.b.trunc(n, em.itype)


def _reduce_payne_hanek(em: Emit, x) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(r, r_lo, n) as ``_reduce_cody_waite`` gives, for finite |x| >= 1 (other lanes get
    finite garbage: the table reads stay in bounds for every input).

    With |x| = m * 2**e, m in [1, 2) and M = m * 2**52 an integer, the bits of 2/pi of weight
    2**-j with j <= e - 54 contribute M * 2**(e-52-j), multiples of 4: only bits from
    J = e - 53 on matter. Their first 212 bits, scaled by 2**e, are the integers B0..B3
    (53 bits each) in c_i = 2 * B_i * 2**(-53 i), and m * c_0 = M * B0 * 2**-51 < 2**55.
    Every step is exact until the small terms, which enter a double-double at their size:
      p0 + e0 = m * c_0 (fma); s0 = p0 mod 4 (exact); u0 = s0 + e0 (exact: a multiple of
      2**-51 below 4); a1 + b1 = (u0 - rint(u0)) + p1 with p1 + e1 = m * c_1;
      the fraction of a quadrant a1 - rint(a1), plus b1, e1, m * c_2 (two words), m * c_3.
    n is the sum of the two rints; r = fraction * pi/2 in double-double."""
    wide = em.promoted()
    b = em.b
    bits = wide.bits(em.to(x, F64))
    biased = b.and_(b.lshr(bits, wide.int(F64.mant_bits)), wide.int(0x7FF))
    e = _clamp_int(wide, b.sub(biased, wide.int(F64.bias)), 0, F64.bias)
    mantissa = b.and_(bits, wide.int((1 << F64.mant_bits) - 1))
    m = wide.from_bits(b.or_(mantissa, wide.int(F64.bias << F64.mant_bits)))
    c = [wide.mul(b.sitofp(piece, wide.ftype), 2.0 ** (1 - 53 * i))
         for i, piece in enumerate(_two_over_pi_window(wide, e))]
    p0, e0 = wide.two_prod(m, c[0])
    s0 = wide.mla(wide.rint(wide.mul(p0, 0.25)), -4.0, p0)
    u0 = wide.add(s0, e0)
    n1_f, n1 = wide.round_int(u0)
    p1, e1 = wide.two_prod(m, c[1])
    a1, b1 = wide.two_sum(wide.sub(u0, n1_f), p1)
    n2_f, n2 = wide.round_int(a1)
    p2, e2 = wide.two_prod(m, c[2])
    fraction, fraction_lo = wide.two_sum(wide.sub(a1, n2_f), b1)
    for term in (e1, p2, e2, wide.mul(m, c[3])):
        fraction, error = wide.two_sum(fraction, term)
        fraction_lo = wide.add(fraction_lo, error)
    fraction, fraction_lo = wide.fast_two_sum(fraction, fraction_lo)
    pio2_hi, pio2_lo = _PIO2_DOUBLE_WORD
    r, r_error = wide.two_prod(fraction, pio2_hi)
    r_lo = wide.add(r_error, wide.mla(fraction, pio2_lo, wide.mul(fraction_lo, pio2_hi)))
    r, r_lo = wide.fast_two_sum(r, r_lo)
    n = b.add(n1, n2)
    negative = b.icmp_signed("<", bits, wide.int(0))
    r, r_lo = (wide.sel(negative, wide.neg(v), v) for v in (r, r_lo))
    n = b.select(negative, b.sub(wide.int(0), n), n)
    return _narrowed(em, r, r_lo, n) if em.fmt is F32 else (r, r_lo, n)


def _clamp_int(em: Emit, i, lo: int, hi: int):
    """The signed integer i limited to [lo, hi]."""
    b = em.b
    i = b.select(b.icmp_signed("<", i, em.int(lo)), em.int(lo), i)
    return b.select(b.icmp_signed(">", i, em.int(hi)), em.int(hi), i)


def _two_over_pi_window(wide: Emit, e) -> list[ir.Value]:
    """B0..B3: the bits J .. J+211 of 2/pi (J = e - 53; bits before the binary point are 0)
    as four 53-bit integers, for 0 <= e <= 1023."""
    b = wide.b
    table = _two_over_pi_table(b.module)
    start = b.add(e, wide.int(63 - 53))  # bit J's position in the table (a zero word first)
    word = b.lshr(start, wide.int(6))
    shift = b.and_(start, wide.int(63))
    words = [wide.load_element(table, b.add(word, wide.int(k))) for k in range(5)]
    window = [_funnel_shift(wide, words[k], words[k + 1], shift) for k in range(4)]
    pieces = [
        window[0],
        _funnel_shift(wide, window[0], window[1], wide.int(53)),
        _funnel_shift(wide, window[1], window[2], wide.int(106 - 64)),
        _funnel_shift(wide, window[2], window[3], wide.int(159 - 128)),
    ]
    return [b.lshr(piece, wide.int(64 - 53)) for piece in pieces]


def _funnel_shift(em: Emit, high, low, shift):
    """The 64 bits of high:low (128 bits) starting ``shift`` bits from the top."""
    return em.call_intrinsic("llvm.fshl", em.itype, [high, low, shift], [em.itype])


def _two_over_pi_table(module: ir.Module) -> ir.GlobalVariable:
    table = module.globals.get(_TABLE_NAME)
    if table is None:
        i64 = ir.IntType(64)
        words = [w - (1 << 64) if w >= 1 << 63 else w for w in _TWO_OVER_PI_WORDS]
        array = ir.ArrayType(i64, len(words))
        table = ir.GlobalVariable(module, array, _TABLE_NAME)
        table.global_constant = True
        table.linkage = "internal"
        table.initializer = ir.Constant(array, words)
    return table


# ---------------------------------------------------------------- kernels


def _sin_cos_reduced(em: Emit, r, r_lo) -> tuple[ir.Value, ir.Value]:
    """sin and cos of r + r_lo, |r| <= pi/4, |r_lo| far below |r| (fdlibm kernels: the
    exact leading term is added last, r_lo enters through its first-order effect)."""
    z = em.mul(r, r)
    hz = em.mul(z, 0.5)
    sin_tail = em.mla(em.mul(z, r), em.poly(z, K.SIN[em.fmt.name]), em.mla(em.neg(hz), r_lo, r_lo))
    sin = em.add(r, sin_tail)
    w = em.sub(1.0, hz)
    cos_tail = em.mla(em.mul(z, z), em.poly(z, K.COS[em.fmt.name]), em.neg(em.mul(r, r_lo)))
    cos = em.add(w, em.add(em.sub(em.sub(1.0, w), hz), cos_tail))
    return sin, cos


def _quadrant(em: Emit, sin, cos, q):
    """The value of sin at quadrant q: sin, cos, -sin, -cos for q = 0, 1, 2, 3 (mod 4)."""
    odd = em.b.icmp_unsigned("!=", em.b.and_(q, em.int(1)), em.int(0))
    value = em.sel(odd, cos, sin)
    sign = em.b.shl(em.b.and_(q, em.int(2)), em.int(em.fmt.itype.width - 2))
    return em.from_bits(em.b.xor(em.bits(value), sign))


def _sin_from(em: Emit, sin, cos, n):
    return _quadrant(em, sin, cos, n)


def _cos_from(em: Emit, sin, cos, n):
    return _quadrant(em, sin, cos, em.b.add(n, em.int(1)))


def _tan_from(em: Emit, sin, cos, n):
    """sin/cos in even quadrants, -cos/sin in odd ones."""
    odd = em.b.icmp_unsigned("!=", em.b.and_(n, em.int(1)), em.int(0))
    return em.div(em.sel(odd, em.neg(cos), sin), em.sel(odd, sin, cos))


# Each function from sin(r), cos(r) and the quadrant n, in the order of its number (the
# out-of-line code serves all three and takes the number as an argument).
_FROM_SIN_COS: dict[str, Callable[[Emit, ir.Value, ir.Value, ir.Value], ir.Value]] = {
    "sin": _sin_from, "cos": _cos_from, "tan": _tan_from,
}
_NUMBER = {name: number for number, name in enumerate(_FROM_SIN_COS)}
_I1, _I32 = ir.IntType(1), ir.IntType(32)

# ---------------------------------------------------------------- huge arguments

# The out-of-line code is one vector function of _BODY_LANES lanes per format for all
# three functions; small adapters give each function a scalar form and the variants the
# vectorizer picks from (256- and 512-bit vectors). The widest variant is the body itself:
# a float32 body of 8 lanes (one 512-bit register of float64) called twice per 16-lane
# vector made ordinary arguments 50% slower, from the calls alone.
_BODY_LANES = {"float32": 16, "float64": 8}
_VARIANT_LANES = {"float32": (8, 16), "float64": (4, 8)}


def _huge(em: Emit, x):
    """Whether x is finite and |x| >= LIMIT (the out-of-line function's lanes)."""
    ax = em.fabs(x)
    return em.b.and_(em.cmp(">=", ax, LIMIT[em.fmt.name]), em.cmp("<", ax, _INF))


def _huge_lanes(em: Emit, name: str, x, huge, value):
    """``value`` where |x| < LIMIT or x is not finite, else the out-of-line function's."""
    function, variants = _out_of_line(em.b.module, name, em.fmt)
    before = em.b.block
    with em.b.if_then(huge, likely=False):
        call = em.b.call(function, [x])
        set.add(call.attributes, f'"vector-function-abi-variant"="{variants}"')
        call_block = em.b.block
    merged = em.b.phi(em.ftype)
    merged.add_incoming(value, before)
    merged.add_incoming(call, call_block)
    return merged


def _out_of_line(module: ir.Module, name: str, fmt: Format) -> tuple[ir.Function, str]:
    """``T f(T x)``: trig ``name`` of x by the out-of-line code, defined once per module
    with its masked vector variants, and the VFABI list of the variants. It stays a call
    (noinline): inlined, its code would be predicated into every lane of the loop. (The
    shared body takes the function's number, but as a constant argument of a scalar
    function that number would be propagated into it and dropped from its signature,
    which then no longer matches its variants.)"""
    symbol = f"tsjit_vmath_{name}_{fmt.name}_huge"
    lanes = _VARIANT_LANES[fmt.name]
    variant_list = ",".join(f"_ZGV_LLVM_M{n}v_{symbol}({symbol}_v{n})" for n in lanes)
    function = module.globals.get(symbol)
    if function is None:
        body_name = f"tsjit_vmath_trig_{fmt.name}_huge"
        body = module.globals.get(body_name) or _body(module, body_name, fmt)
        number = ir.Constant(_I32, _NUMBER[name])
        vmath_table.keep_alive(module, [_adapter(module, f"{symbol}_v{n}", body, number, fmt,
                                                 n) for n in lanes])
        function = _adapter(module, symbol, body, number, fmt, None)
        function.attributes.add("noinline")
    return function, variant_list


def _body(module: ir.Module, name: str, fmt: Format) -> ir.Function:
    """``<L x T> name(<L x T> x, i32 number, <L x i1> mask)``: function ``number`` of x on
    every lane when any lane of the mask is set (else x back: the caller ignores it)."""
    lanes = _BODY_LANES[fmt.name]
    vector, mask = ir.VectorType(fmt.ftype, lanes), ir.VectorType(_I1, lanes)
    function = _define(module, name, ir.FunctionType(vector, [vector, _I32, mask]))
    function.calling_convention = _variant_calling_convention()
    b = ir.IRBuilder(function.append_basic_block())
    em = Emit(b, fmt, lanes)
    x, number, active = function.args
    any_active = em.call_intrinsic("llvm.vector.reduce.or", _I1, [active], [mask])
    with b.if_then(any_active):
        r, r_lo, n = _reduce_out_of_line(em, x, active)
        sin, cos = _sin_cos_reduced(em, r, r_lo)
        values = [emit(em, sin, cos, n) for emit in _FROM_SIN_COS.values()]
        value = values[-1]
        for k, other in reversed(list(enumerate(values[:-1]))):
            value = em.sel(b.icmp_unsigned("==", number, ir.Constant(_I32, k)), other, value)
        b.ret(value)
    b.ret(x)
    return function


def _reduce_out_of_line(em: Emit, x, active) -> tuple[ir.Value, ir.Value, ir.Value]:
    """Payne-Hanek, or for float32 the cheaper float64 Cody-Waite when no active lane is
    beyond its range (a branch per vector)."""
    if em.fmt is F64:
        return _reduce_payne_hanek(em, x)
    b = em.b
    beyond = b.and_(active, em.cmp(">=", em.fabs(x), _WIDENED_LIMIT))
    any_beyond = em.call_intrinsic("llvm.vector.reduce.or", _I1, [beyond], [beyond.type])
    with b.if_else(any_beyond) as (far, near):
        with far:
            far_reduction = _reduce_payne_hanek(em, x)
            far_block = b.block
        with near:
            near_reduction = _reduce_widened(em, x)
            near_block = b.block
    merged = []
    for far_value, near_value in zip(far_reduction, near_reduction):
        phi = b.phi(far_value.type)
        phi.add_incoming(far_value, far_block)
        phi.add_incoming(near_value, near_block)
        merged.append(phi)
    return tuple(merged)


def _adapter(module: ir.Module, name: str, body: ir.Function, number: ir.Constant,
             fmt: Format, lanes: int | None) -> ir.Function:
    """Function ``number`` for ``lanes`` lanes (None: a scalar) through the body: the
    arguments padded with zeros and inactive lanes to the body's width."""
    width = body.args[0].type.count
    shape = fmt.ftype if lanes is None else ir.VectorType(fmt.ftype, lanes)
    params = [shape] + ([] if lanes is None else [ir.VectorType(_I1, lanes)])
    function = _define(module, name, ir.FunctionType(shape, params))
    b = ir.IRBuilder(function.append_basic_block())
    x = function.args[0]
    if lanes is None:
        wide_x = b.insert_element(ir.Constant(body.args[0].type, None), x, ir.Constant(_I32, 0))
        wide_mask = ir.Constant(body.args[2].type, [1] + [0] * (width - 1))
        b.ret(b.extract_element(b.call(body, [wide_x, number, wide_mask]), ir.Constant(_I32, 0)))
        return function
    function.calling_convention = _variant_calling_convention()
    mask = function.args[1]
    if lanes == width:
        b.ret(b.call(body, [x, number, mask]))
        return function
    spread = ir.Constant(ir.VectorType(_I32, width), [min(k, lanes) for k in range(width)])
    wide_x, wide_mask = (b.shuffle_vector(v, ir.Constant(v.type, None), spread) for v in (x, mask))
    result = b.call(body, [wide_x, number, wide_mask])
    b.ret(b.shuffle_vector(result, result, ir.Constant(ir.VectorType(_I32, lanes),
                                                       list(range(lanes)))))
    return function


@functools.cache
def _variant_calling_convention() -> str:
    """The calling convention of the vector variants: on x86-64, one that keeps vector
    registers across the call (zmm16-31 with AVX-512, ymm8-15 with AVX). Under the C
    convention every vector register is clobbered, so a kernel spilled its polynomial
    constants and reloaded them each iteration: ordinary arguments ran 22% (float64) to 40%
    (float32) slower. The loop vectorizer gives its calls the variant's convention."""
    import llvmlite.binding as llvm  # here: a loop from the disk cache never loads LLVM
    return "intel_ocl_bicc" if llvm.get_process_triple().startswith("x86_64") else ""


def _define(module: ir.Module, name: str, signature: ir.FunctionType) -> ir.Function:
    function = ir.Function(module, signature, name)
    function.linkage = "internal"
    function.attributes.add("nounwind")
    set.add(function.attributes, "willreturn")
    set.add(function.attributes, "memory(none)")  # reads only the constant table
    return function


# ---------------------------------------------------------------- sin, cos, tan


def _trig(name: str, odd: bool) -> Callable[[Emit, ir.Value], ir.Value]:
    def emit(em: Emit, x):
        # The inline reduction of a huge lane would be thrown away, but its overflow and
        # invalid flags would stay (NumPy raises none): it reduces 0 there instead.
        huge = _huge(em, x)
        near = em.guard(huge, 0.0, x)
        r, r_lo, n = _reduce_cody_waite(em, near)
        value = _huge_lanes(em, name, x, huge,
                            _FROM_SIN_COS[name](em, *_sin_cos_reduced(em, r, r_lo), n))
        # f(+-0) = +-0 for the odd functions, whose formula loses the sign of zero
        return em.sel(em.cmp("==", x, 0.0), x, value) if odd else value

    return emit


sin = _trig("sin", odd=True)
cos = _trig("cos", odd=False)
tan = _trig("tan", odd=True)
