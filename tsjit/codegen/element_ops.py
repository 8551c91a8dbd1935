"""Per-element LLVM lowering of the kernel op vocabulary, with NumPy's exact semantics.

Every function here works on scalar SSA values so that the loop vectorizer can widen the
whole fused body. Where NumPy's result comes from C code with implementation-defined
behaviour (float -> int conversion of NaN / inf / out-of-range values, integer division
by zero, shift counts past the width) we reproduce what NumPy's x86-64 build produces,
never LLVM poison. float16 follows NumPy: every op computes in float32 and rounds the
result to half.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from llvmlite import ir

from tsjit.codegen import numpy_nans, vmath
from tsjit.codegen.fp_status import FLAG_BITS
from tsjit.codegen.ir_util import fcmp_quiet
from tsjit.codegen.kernel_spec import (
    INTEGER_OPERANDS,
    MATH_FUNCTIONS,
    NAN_FIXED_LATER,
    PYTHON_FLOAT_EXPONENT,
    PYTHON_FLOAT_REMAINDER,
    PYTHON_INT_EXPONENT,
    SCALAR_OPERANDS,
    KernelOp,
)
from tsjit.codegen.operand_nans import OperandNans

__all__ = [
    "cast_value",
    "computed_errors",
    "float_truncate",
    "llvm_type",
    "load_value",
    "lower_op",
    "memory_type",
    "store_value",
]

_BOOL = np.dtype(np.bool_)
_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_INF = float("inf")
_I1 = ir.IntType(1)
_I8 = ir.IntType(8)
_I32 = ir.IntType(32)


def llvm_type(dtype: np.dtype) -> ir.Type:
    """Register type of a dtype's values (bool is i1)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return _I1
    if dtype.kind in "iu":
        return ir.IntType(dtype.itemsize * 8)
    return {2: ir.HalfType(), 4: ir.FloatType(), 8: ir.DoubleType()}[dtype.itemsize]


def memory_type(dtype: np.dtype) -> ir.Type:
    """In-memory type (NumPy stores bool as one byte)."""
    return _I8 if np.dtype(dtype).kind == "b" else llvm_type(dtype)


def load_value(b: ir.IRBuilder, ptr: ir.Value, dtype: np.dtype) -> ir.Value:
    # align 1: NumPy arrays may be unaligned views; unaligned vector loads cost nothing here.
    value = b.load(ptr, typ=memory_type(dtype), align=1)
    if np.dtype(dtype).kind == "b":  # any nonzero byte is True, as in NumPy
        return b.icmp_unsigned("!=", value, ir.Constant(_I8, 0))
    return value


def store_value(b: ir.IRBuilder, value: ir.Value, ptr: ir.Value, dtype: np.dtype) -> None:
    if np.dtype(dtype).kind == "b":
        value = b.zext(value, _I8)
    b.store(value, ptr, align=1)


def _intrinsic(b: ir.IRBuilder, name: str, ty: ir.Type, nargs: int = 1) -> ir.Function:
    suffix = {"half": "f16", "float": "f32", "double": "f64"}.get(str(ty), str(ty))
    full = f"llvm.{name}.{suffix}"
    module = b.module
    fn = module.globals.get(full)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ty, [ty] * nargs), name=full)
    return fn


def _call(b: ir.IRBuilder, name: str, *args: ir.Value) -> ir.Value:
    return b.call(_intrinsic(b, name, args[0].type, len(args)), list(args))


def _const(ty: ir.Type, value: float | int) -> ir.Constant:
    return ir.Constant(ty, value)


# ---------------------------------------------------------------------------- casts


def _truthy(b: ir.IRBuilder, v: ir.Value, dtype: np.dtype) -> ir.Value:
    kind = np.dtype(dtype).kind
    if kind == "b":
        return v
    if kind == "f":  # NaN is True
        return b.fcmp_unordered("!=", v, _const(v.type, 0.0))
    return b.icmp_unsigned("!=", v, _const(v.type, 0))


def _x86_truncate(b: ir.IRBuilder, x: ir.Value, bits: int) -> tuple[ir.Value, ir.Value]:
    """C's (intN_t)x as x86's cvtt(s|d)2si computes it: NaN and out-of-range give INT_MIN,
    and whether the conversion raises invalid (an i1: NaN or out of range).

    The select keeps fptosi's poison (out-of-range lanes) from reaching the result. The
    flag is computed, not left to the instruction: LLVM assumes no floating-point
    exceptions, and turned the select into a branch around the conversion."""
    ty = ir.IntType(bits)
    low = -(2 ** (bits - 1))
    src = np.float32 if isinstance(x.type, ir.FloatType) else np.float64
    # trunc(x) >= low  <=>  x > low - 1, if low - 1 is representable; else x >= low.
    if int(src(low - 1)) == low - 1:
        above = b.fcmp_ordered(">", x, _const(x.type, float(low - 1)))
    else:
        above = b.fcmp_ordered(">=", x, _const(x.type, float(low)))
    below = b.fcmp_ordered("<", x, _const(x.type, float(-low)))
    in_range = b.and_(above, below)
    return b.select(in_range, b.fptosi(x, ty), _const(ty, low)), b.not_(in_range)


def _two_range_truncate(b: ir.IRBuilder, x: ir.Value, bits: int) -> tuple[ir.Value, ir.Value]:
    """The compilers' unsigned conversion (NumPy's SIMD loops): from 2**(bits-1) on, x is
    converted less 2**(bits-1) and the top bit set again. One conversion, of the operand
    selected, raises invalid: converting both (and selecting) flagged [2**31, 2**32), which
    NumPy converts silently."""
    ty = ir.IntType(bits)
    top = _const(x.type, 2.0 ** (bits - 1))
    high = b.fcmp_ordered(">=", x, top)
    value, invalid = _x86_truncate(b, b.select(high, b.fsub(x, top), x), bits)
    return b.xor(value, b.select(high, _const(ty, 1 << (bits - 1)), _const(ty, 0))), invalid


def _float_to_int(b: ir.IRBuilder, x: ir.Value, src: np.dtype,
                  target: np.dtype) -> tuple[ir.Value, ir.Value]:
    """NumPy's float -> integer cast on x86-64 (measured, including NaN/inf/overflow), and
    whether it raises invalid ("invalid value encountered in cast"): narrow types
    truncate a 32-bit conversion; uint32 and uint64 use the compilers' two-range sequence
    (as NumPy's SIMD loops do; its scalar tail loop differs for NaN and values below
    -2**31 or above 2**32 in uint32); half converts through float, to uint32 by a 64-bit
    conversion, truncated."""
    bits = target.itemsize * 8
    ty = ir.IntType(bits)
    if src == _F16:  # half -> float is exact; NumPy converts through float as well
        x = b.fpext(x, ir.FloatType())
        if target == np.dtype(np.uint32):
            value, invalid = _x86_truncate(b, x, 64)
            return b.trunc(value, ty), invalid
    if target in (np.dtype(np.uint64), np.dtype(np.uint32)):
        return _two_range_truncate(b, x, bits)
    if target.kind == "i" and bits in (32, 64):
        return _x86_truncate(b, x, bits)
    value, invalid = _x86_truncate(b, x, 32)
    return b.trunc(value, ty), invalid


def float_truncate(b: ir.IRBuilder, v: ir.Value, dst: np.dtype) -> ir.Value:
    """Correctly rounded narrowing. double -> half goes through float with round-to-odd
    (exact under a second rounding, since float keeps more than 11 + 2 bits): LLVM lowers
    a direct fptrunc to compiler-rt's __truncdfhf2, which this process does not have."""
    dst = np.dtype(dst)
    if not (dst == _F16 and isinstance(v.type, ir.DoubleType)):
        return b.fptrunc(v, llvm_type(dst))
    nearest = b.fptrunc(v, ir.FloatType())
    widened = b.fpext(nearest, v.type)
    inexact = b.fcmp_ordered("!=", widened, v)
    bits = b.bitcast(nearest, ir.IntType(32))
    rounded_away = b.fcmp_ordered(
        ">", _call(b, "fabs", widened), _call(b, "fabs", v)
    )  # step back toward zero, then make the last bit sticky
    bits = b.select(b.and_(inexact, rounded_away), b.sub(bits, _const(bits.type, 1)), bits)
    bits = b.select(inexact, b.or_(bits, _const(bits.type, 1)), bits)
    return b.fptrunc(b.bitcast(bits, ir.FloatType()), ir.HalfType())


def cast_value(b: ir.IRBuilder, v: ir.Value, src: np.dtype, dst: np.dtype) -> ir.Value:
    """NumPy's ``astype(dst)`` (unsafe casting) of one element."""
    src, dst = np.dtype(src), np.dtype(dst)
    if src == dst:
        return v
    dst_ty = llvm_type(dst)
    if dst.kind == "b":
        return _truthy(b, v, src)
    if src.kind == "b":
        return b.zext(v, dst_ty) if dst.kind in "iu" else b.uitofp(v, dst_ty)
    if src.kind in "iu" and dst.kind in "iu":
        if dst.itemsize < src.itemsize:
            return b.trunc(v, dst_ty)
        if dst.itemsize > src.itemsize:
            return b.sext(v, dst_ty) if src.kind == "i" else b.zext(v, dst_ty)
        return v
    if src.kind in "iu":
        # To half through float: exact below 2**24, and larger integers overflow half
        # either way (LLVM would otherwise call compiler-rt's __floatdihf).
        via = ir.FloatType() if dst == _F16 else dst_ty
        value = b.sitofp(v, via) if src.kind == "i" else b.uitofp(v, via)
        return b.fptrunc(value, dst_ty) if dst == _F16 else value
    if dst.kind == "f":
        return b.fpext(v, dst_ty) if dst.itemsize > src.itemsize else float_truncate(b, v, dst)
    return _float_to_int(b, v, src, dst)[0]


# ---------------------------------------------------------------------------- floats


def _float_floor_divide(b: ir.IRBuilder, a: ir.Value, d: ir.Value) -> ir.Value:
    """NumPy's npy_floor_divide: by zero it is ``a / d`` alone, whose flags are all it
    raises (``fmod(a, 0)`` would add invalid), so the rest works on operands that raise
    none there."""
    zero = _const(a.type, 0.0)
    d_is_zero = b.fcmp_ordered("==", d, zero)
    safe = _float_divmod(b, b.select(d_is_zero, zero, a),
                         b.select(d_is_zero, _const(a.type, 1.0), d))[0]
    return b.select(d_is_zero, b.fdiv(a, d), safe)


def _float_divmod(b: ir.IRBuilder, a: ir.Value, d: ir.Value) -> tuple[ir.Value, ir.Value]:
    """NumPy's npy_divmod (floor quotient and Python-style remainder), branch-free."""
    ty = a.type
    zero, one = _const(ty, 0.0), _const(ty, 1.0)
    fmod = b.frem(a, d)
    div = b.fdiv(b.fsub(a, fmod), d)
    mod_nonzero = b.fcmp_unordered("!=", fmod, zero)
    signs_differ = b.xor(b.fcmp_ordered("<", d, zero), b.fcmp_ordered("<", fmod, zero))
    adjust = b.and_(mod_nonzero, signs_differ)
    mod = b.select(adjust, b.fadd(fmod, d), fmod)
    mod = b.select(mod_nonzero, mod, _call(b, "copysign", zero, d))
    div = b.select(adjust, b.fsub(div, one), div)
    floor = _call(b, "floor", div)
    floor = b.select(
        b.fcmp_ordered(">", b.fsub(div, floor), _const(ty, 0.5)), b.fadd(floor, one), floor
    )
    quotient = b.fdiv(a, d)
    floordiv = b.select(
        b.fcmp_unordered("!=", div, zero), floor, _call(b, "copysign", zero, quotient)
    )
    d_is_zero = b.fcmp_ordered("==", d, zero)
    return b.select(d_is_zero, quotient, floordiv), b.select(d_is_zero, fmod, mod)


def _remainder_of_nans(b: ir.IRBuilder, a: ir.Value, d: ir.Value, mod: ir.Value) -> ir.Value:
    """``mod`` (``frem``'s NaN: the first NaN operand) with NumPy's NaN where both operands
    are NaN, where its remainder loop gives the one with the larger significand, the
    positive one of a tie (numpy_nans.larger_nan_wins_remainder): -nan % +nan is +nan."""
    if not numpy_nans.larger_nan_wins_remainder({"float": "float32",
                                                 "double": "float64"}[str(a.type)]):
        return mod
    bits = ir.IntType(_float_bits(a.type))
    magnitude = _const(bits, (1 << (bits.width - 1)) - 1)
    qa, qd = _quiet_bits(b, a), _quiet_bits(b, d)
    ma, md = b.and_(qa, magnitude), b.and_(qd, magnitude)
    second = b.or_(b.icmp_unsigned(">", md, ma),
                   b.and_(b.icmp_unsigned("==", md, ma), b.icmp_unsigned("==", qd, md)))
    both = b.and_(b.fcmp_unordered("uno", a, a), b.fcmp_unordered("uno", d, d))
    nan = b.bitcast(b.select(second, qd, qa), a.type)
    return b.select(both, nan, mod)


def _clip_scalar_bounds(b: ir.IRBuilder, x: ir.Value, lo: ir.Value, hi: ir.Value) -> ir.Value:
    """NumPy's float and double clip with bounds read at stride 0: ties keep x, and a NaN
    bound is the result as it is (lo's before hi's), before a NaN x (which the loop with
    bound arrays gives first)."""
    result = _clip_keeping_ties(b, [x, lo, hi])
    result = b.select(b.fcmp_unordered("uno", hi, hi), hi, result)
    return b.select(b.fcmp_unordered("uno", lo, lo), lo, result)


def _fmaximum(b: ir.IRBuilder, x: ir.Value, y: ir.Value, pred: str) -> ir.Value:
    """NumPy maximum/minimum: NaN in either operand wins; ties (+0 vs -0) go to the second
    operand with a strict ``pred``, to the first with a non-strict one."""
    pick = b.select(fcmp_quiet(b, pred, x, y), x, y)
    return b.select(b.fcmp_unordered("uno", x, x), x, pick)


def _clip_keeping_ties(b: ir.IRBuilder, a: list[ir.Value]) -> ir.Value:
    """NumPy's float clip where ties (+0 vs -0) keep x: its half loop, and its float and
    double loops when both bounds are scalars."""
    return _fmaximum(b, _fmaximum(b, a[0], a[1], ">="), a[2], "<=")


def _pow_scalar_exponent(b: ir.IRBuilder, x: ir.Value, e: ir.Value) -> ir.Value:
    """NumPy's float and double power with one exponent for every element: exact for the
    exponents 0, 1, 2, -1 and 0.5 (1 even for a signalling NaN; sqrt's results: -0.0 ** 0.5
    is -0.0, -inf ** 0.5 NaN)."""
    result = vmath.emit_math(b, "pow", [x, e])
    exact = ((0.0, _const(x.type, 1.0)), (1.0, x), (2.0, b.fmul(x, x)),
             (-1.0, b.fdiv(_const(x.type, 1.0), x)), (0.5, _call(b, "sqrt", x)))
    return _with_exponents(b, e, exact, result)


def _with_exponents(b: ir.IRBuilder, e: ir.Value, exact, result: ir.Value) -> ir.Value:
    """``result`` with the value of each (exponent, value) pair of ``exact`` where ``e`` is
    that exponent."""
    for exponent, value in exact:
        result = b.select(b.fcmp_ordered("==", e, _const(e.type, exponent)), value, result)
    return result


def _half_pow_scalar_exponent(b: ir.IRBuilder, x: ir.Value, e: ir.Value,
                              attrs: tuple) -> ir.Value:
    """NumPy's float16 power with one exponent (``x``, ``e`` widened to float): its loop
    is powf for every exponent (a NaN x comes back quieted, its sign cleared for an odd
    integer e: -nan ** 1 is +nan; a signalling one ** 0 is NaN; (-0.0) ** 0.5 is +0.0,
    (-inf) ** 0.5 +inf), which gives x, x*x and 1/x for 1, 2 and -1 where x is a number;
    the operator's -1 (a Python int) and 0.5 (a Python float) are np.reciprocal and
    np.sqrt instead (``PYTHON_INT_EXPONENT``)."""
    result = vmath.emit_math(b, "pow", [x, e])
    number = b.fcmp_ordered("ord", x, x)
    reciprocal = b.fdiv(_const(x.type, 1.0), x)
    root = _call(b, "sqrt", x)
    if PYTHON_FLOAT_EXPONENT not in attrs:   # powf: +0 of -0, +inf of -inf
        root = b.select(b.fcmp_ordered("==", x, _const(x.type, -_INF)), _const(x.type, _INF),
                        b.fadd(root, _const(x.type, 0.0)))
    exact = ((1.0, b.select(number, x, result)), (2.0, b.fmul(x, x)),
             (-1.0, reciprocal if PYTHON_INT_EXPONENT in attrs else
              b.select(number, reciprocal, result)), (0.5, root))
    return _with_exponents(b, e, exact, result)


def _half_pow_signalling(b: ir.IRBuilder, args: list[ir.Value], widened: list[ir.Value],
                         result: ir.Value) -> ir.Value:
    """A float16 pow's ``result`` where an operand is a signalling NaN that powf turns into
    a NaN but ``vmath``'s pow (of the widened operands, which x86's conversion has
    quieted) takes for a quiet one: sNaN ** 0 and 1 ** sNaN are NaN, x + y."""
    def signalling(v: ir.Value) -> ir.Value:
        bits = b.bitcast(v, ir.IntType(16))
        return b.and_(b.fcmp_unordered("uno", v, v),
                      b.icmp_unsigned("==", b.and_(bits, _const(bits.type, 0x200)),
                                      _const(bits.type, 0)))
    (x, y), (wide_x, wide_y) = args, widened
    nan = b.or_(b.and_(signalling(x), b.fcmp_ordered("==", wide_y, _const(wide_y.type, 0.0))),
                b.and_(signalling(y), b.fcmp_ordered("==", wide_x, _const(wide_x.type, 1.0))))
    return b.select(nan, b.fadd(wide_x, wide_y), result)


def _fmaxnum(b: ir.IRBuilder, x: ir.Value, y: ir.Value, pred: str) -> ir.Value:
    """NumPy fmax/fmin: NaN is ignored unless both are NaN.  Ties (+0 vs -0) go to the
    second operand with a strict ``pred``, to the first with a non-strict one.  NumPy's own
    choice varies with the position: its float and double SIMD loops give the second, its
    scalar loops (libm fmax, and the tails of the SIMD loops) the first."""
    keep_x = b.or_(fcmp_quiet(b, pred, x, y), b.fcmp_unordered("uno", y, y))
    return b.select(keep_x, x, y)


def _float_sign(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    zero = _const(x.type, 0.0)
    value = b.select(b.fcmp_ordered("==", x, zero), zero, x)  # -0.0 -> +0.0, NaN stays
    value = b.select(fcmp_quiet(b, "<", x, zero), _const(x.type, -1.0), value)
    return b.select(fcmp_quiet(b, ">", x, zero), _const(x.type, 1.0), value)


def _quiet_bits(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """x's bits with the quiet bit set: a NaN ``x`` as x86 returns it from an operation."""
    bits = ir.IntType(_float_bits(x.type))
    return b.or_(b.bitcast(x, bits), _const(bits, 1 << {16: 9, 32: 22, 64: 51}[bits.width]))


def _self_product(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """``x * x`` with x86's NaN: a NaN ``x`` itself, quieted. LLVM may rewrite the product
    (``fabs(y) * fabs(y)`` and ``(-y) * (-y)`` become ``y * y``, which has y's sign), so a
    NaN ``x`` is selected, quieted by ``x + x`` (x86 returns the NaN operand quieted; LLVM's
    rewrites of a sum keep its sign). The sum runs beside the product: quieting in the
    integer domain moved a scalar through general registers and made mandelbrot's
    recurrence 1.7x slower."""
    return b.select(b.fcmp_unordered("uno", x, x), b.fadd(x, x), b.fmul(x, x))


def _with_operand_nans(b: ir.IRBuilder, op: str, dtype: np.dtype, args: list[ir.Value],
                       result: ir.Value, nans: OperandNans) -> ir.Value:
    """``result`` of the binary arithmetic op ``op`` of ``dtype`` with NumPy's NaN chosen
    by integer selects (``operand_nans``): the NaN operand NumPy's loop gives, quieted,
    else the default NaN of an invalid operation (both asked of NumPy)."""
    bits = ir.IntType(_float_bits(result.type))
    chosen = b.bitcast(result, bits)
    operands = list(zip(args, (nans.first, nans.second)))
    if op in ("add", "mul") and numpy_nans.second_nan_wins(op, dtype.name):
        operands.reverse()
    if nans.signs:
        computed = {"float": "float32", "double": "float64"}[str(result.type)]
        chosen = b.select(b.fcmp_unordered("uno", result, result),
                          _const(bits, numpy_nans.invalid_nan_bits(computed)), chosen)
    else:   # only the order of two NaNs is at risk
        operands = operands[:1]
    for arg, may_be_nan in reversed(operands):   # the winner's select last: outermost
        if may_be_nan:
            chosen = b.select(b.fcmp_unordered("uno", arg, arg), _quiet_bits(b, arg), chosen)
    return b.bitcast(chosen, result.type)


def _x86_arithmetic(b: ir.IRBuilder, opname: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    """``lhs op rhs`` with x86's NaN where a constant operand lets LLVM fold it away:
    ``x * -1.0`` and ``x / -1.0`` become ``-x`` and ``-0.0 - x`` becomes ``-x`` (the NaN's
    sign flipped), ``x * 1.0``, ``x / 1.0``, ``x + -0.0`` and ``x - 0.0`` become ``x`` (a
    signaling NaN left unquieted). x86 returns the NaN ``x`` quieted; so does ``x + x``."""
    result = getattr(b, opname)(lhs, rhs)
    x = _folded_operand(opname, lhs, rhs)
    if x is None:
        return result
    return b.select(b.fcmp_unordered("uno", x, x), b.fadd(x, x), result)


def _folded_operand(opname: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value | None:
    """The operand LLVM may return (or negate) for ``lhs op rhs``, or None."""
    def const(v: ir.Value) -> float | None:
        c = getattr(v, "constant", None) if isinstance(v, ir.Constant) else None
        return c if isinstance(c, float) else None

    def negative_zero(c: float | None) -> bool:
        return c == 0.0 and np.signbit(c)

    left, right = const(lhs), const(rhs)
    if opname == "fmul" and left in (1.0, -1.0):
        return rhs
    if opname in ("fmul", "fdiv") and right in (1.0, -1.0):
        return lhs
    if opname == "fadd" and negative_zero(left):
        return rhs
    if opname == "fadd" and negative_zero(right):
        return lhs
    if opname == "fsub" and right == 0.0 and not negative_zero(right):
        return lhs
    if opname == "fsub" and negative_zero(left):
        return rhs
    return None


def _signbit(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    bits = ir.IntType(_float_bits(x.type))
    return b.icmp_signed("<", b.bitcast(x, bits), _const(bits, 0))


def _float_bits(ty: ir.Type) -> int:
    return {"half": 16, "float": 32, "double": 64}[str(ty)]


_FCMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

Lowering = Callable[[ir.IRBuilder, list[ir.Value]], ir.Value]

_FLOAT_OPS: dict[str, Lowering] = {
    "add": lambda b, a: _x86_arithmetic(b, "fadd", a[0], a[1]),
    "sub": lambda b, a: _x86_arithmetic(b, "fsub", a[0], a[1]),
    "mul": lambda b, a: (_self_product(b, a[0]) if a[0] is a[1]
                         else _x86_arithmetic(b, "fmul", a[0], a[1])),
    "truediv": lambda b, a: _x86_arithmetic(b, "fdiv", a[0], a[1]),
    "floordiv": lambda b, a: _float_floor_divide(b, a[0], a[1]),
    "mod": lambda b, a: _remainder_of_nans(b, a[0], a[1], _float_divmod(b, a[0], a[1])[1]),
    "python_float_mod": lambda b, a: _float_divmod(b, a[0], a[1])[1],
    "pow": lambda b, a: vmath.emit_math(b, "pow", a),
    "neg": lambda b, a: b.fneg(a[0]),
    "pos": lambda b, a: a[0],
    "abs": lambda b, a: _call(b, "fabs", a[0]),
    "sign": lambda b, a: _float_sign(b, a[0]),
    "square": lambda b, a: _self_product(b, a[0]),
    "reciprocal": lambda b, a: b.fdiv(_const(a[0].type, 1.0), a[0]),
    "maximum": lambda b, a: _fmaximum(b, a[0], a[1], ">"),
    "minimum": lambda b, a: _fmaximum(b, a[0], a[1], "<"),
    "fmax": lambda b, a: _fmaxnum(b, a[0], a[1], ">"),
    "fmin": lambda b, a: _fmaxnum(b, a[0], a[1], "<"),
    "clip": lambda b, a: _fmaximum(b, _fmaximum(b, a[0], a[1], ">"), a[2], "<"),
    "clip_scalar_bounds": lambda b, a: _clip_scalar_bounds(b, *a),
    "pow_scalar_exponent": lambda b, a: _pow_scalar_exponent(b, a[0], a[1]),
    "floor": lambda b, a: _call(b, "floor", a[0]),
    "ceil": lambda b, a: _call(b, "ceil", a[0]),
    "trunc": lambda b, a: _call(b, "trunc", a[0]),
    "rint": lambda b, a: _call(b, "roundeven", a[0]),
    "sqrt": lambda b, a: _call(b, "sqrt", a[0]),
    "copysign": lambda b, a: _call(b, "copysign", a[0], a[1]),
    "isnan": lambda b, a: b.fcmp_unordered("uno", a[0], a[0]),
    "isinf": lambda b, a: b.fcmp_ordered(
        "==", _call(b, "fabs", a[0]), _const(a[0].type, float("inf"))
    ),
    "isfinite": lambda b, a: fcmp_quiet(
        b, "<", _call(b, "fabs", a[0]), _const(a[0].type, float("inf"))
    ),
    "signbit": lambda b, a: _signbit(b, a[0]),
    **{
        name: (lambda b, a, pred=pred: fcmp_quiet(b, pred, a[0], a[1]))
        for name, pred in _FCMP.items()
        if name != "ne"
    },
    "ne": lambda b, a: b.fcmp_unordered("!=", a[0], a[1]),
}
for _name in MATH_FUNCTIONS:  # inline polynomial code that vectorizes (libm calls do not)
    _FLOAT_OPS[_name] = lambda b, a, name=_name: vmath.emit_math(b, name, a)


# ---------------------------------------------------------------------------- integers


def _int_floordiv_mod(
    b: ir.IRBuilder, x: ir.Value, y: ir.Value, signed: bool
) -> tuple[ir.Value, ir.Value]:
    """NumPy integer floor division and remainder: ``// 0`` and ``% 0`` give 0,
    ``MIN // -1`` wraps to MIN. The divisor is made safe first so that LLVM's division
    never sees an undefined case."""
    ty = x.type
    zero, one = _const(ty, 0), _const(ty, 1)
    y_zero = b.icmp_unsigned("==", y, zero)
    if not signed:
        safe = b.select(y_zero, one, y)
        return (
            b.select(y_zero, zero, b.udiv(x, safe)),
            b.select(y_zero, zero, b.urem(x, safe)),
        )
    overflow = b.and_(
        b.icmp_signed("==", x, _const(ty, -(2 ** (ty.width - 1)))),
        b.icmp_signed("==", y, _const(ty, -1)),
    )
    safe = b.select(b.or_(y_zero, overflow), one, y)  # MIN // 1 == MIN: the wrapped result
    quotient, remainder = b.sdiv(x, safe), b.srem(x, safe)
    # Round toward negative infinity when the remainder's sign differs from the divisor's.
    adjust = b.and_(
        b.icmp_signed("!=", remainder, zero),
        b.icmp_signed("<", b.xor(remainder, y), zero),
    )
    quotient = b.select(adjust, b.sub(quotient, one), quotient)
    remainder = b.select(adjust, b.add(remainder, y), remainder)
    return b.select(y_zero, zero, quotient), b.select(y_zero, zero, remainder)


def computed_errors(b: ir.IRBuilder, op: KernelOp, args: list[ir.Value],
                    arg_dtypes: list[np.dtype]) -> ir.Value | None:
    """The errors NumPy reports for this element of ``op`` that the kernel computes
    rather than takes from its instructions' flags, as an i32 of MXCSR flags
    (``fp_status.FLAG_BITS``); None for an op that has none. NumPy's integer loops report
    ``x // 0`` and ``x % 0`` (divide by zero, the result 0) and ``MIN // -1`` (overflow,
    the result MIN) by hand; a division of ints LLVM may fold (INTEGER_OPERANDS); a float
    -> integer cast's invalid comes from a conversion that LLVM may skip for the lanes it
    selects away (x86 can raise it only where it converts). The kernel sets them in MXCSR
    itself (``fp_status.raise_flags``), so they reach NumPy's error state with the float
    ones."""
    dtype = np.dtype(arg_dtypes[0])

    def flag(condition: ir.Value, kind: str) -> ir.Value:
        return b.select(condition, _const(_I32, FLAG_BITS[kind]), _const(_I32, 0))

    if op.op == "cast" and dtype.kind == "f" and np.dtype(op.dtype).kind in "iu":
        return flag(_float_to_int(b, args[0], dtype, np.dtype(op.dtype))[1], "invalid")
    if op.op == "truediv" and INTEGER_OPERANDS in op.attrs:   # finite operands
        x, y = args
        zero = _const(x.type, 0.0)
        by_zero, zero_dividend = b.fcmp_ordered("==", y, zero), b.fcmp_ordered("==", x, zero)
        return b.or_(flag(b.and_(by_zero, b.not_(zero_dividend)), "divide"),
                     flag(b.and_(by_zero, zero_dividend), "invalid"))
    if op.op not in ("floordiv", "mod") or dtype.kind not in "iu":
        return None
    x, y = args
    flags = flag(b.icmp_unsigned("==", y, _const(y.type, 0)), "divide")
    if op.op == "floordiv" and dtype.kind == "i":
        least = _const(x.type, -(2 ** (x.type.width - 1)))
        overflow = b.and_(b.icmp_signed("==", x, least), b.icmp_signed("==", y, _const(y.type, -1)))
        flags = b.or_(flags, flag(overflow, "over"))
    return flags


def _shift(b: ir.IRBuilder, x: ir.Value, amount: ir.Value, left: bool, signed: bool):
    """NumPy's npy_lshift/npy_rshift: counts outside [0, width) shift everything out
    (a negative count is a huge unsigned count)."""
    ty = x.type
    width = _const(ty, ty.width)
    in_range = b.icmp_unsigned("<", amount, width)
    if not left and signed:  # everything shifted out leaves the sign
        return b.ashr(x, b.select(in_range, amount, _const(ty, ty.width - 1)))
    safe = b.select(in_range, amount, _const(ty, 0))
    shifted = b.shl(x, safe) if left else b.lshr(x, safe)
    return b.select(in_range, shifted, _const(ty, 0))


def _int_ops(signed: bool) -> dict[str, Lowering]:
    icmp = ir.IRBuilder.icmp_signed if signed else ir.IRBuilder.icmp_unsigned

    def pick(pred: str) -> Lowering:
        return lambda b, a: b.select(icmp(b, pred, a[0], a[1]), a[0], a[1])

    def clip(b: ir.IRBuilder, a: list[ir.Value]) -> ir.Value:
        low = pick(">")(b, [a[0], a[1]])
        return pick("<")(b, [low, a[2]])

    def abs_(b: ir.IRBuilder, a: list[ir.Value]) -> ir.Value:
        if not signed:
            return a[0]
        negative = b.icmp_signed("<", a[0], _const(a[0].type, 0))
        return b.select(negative, b.neg(a[0]), a[0])

    def sign(b: ir.IRBuilder, a: list[ir.Value]) -> ir.Value:
        ty, zero = a[0].type, _const(a[0].type, 0)
        positive = b.zext(icmp(b, ">", a[0], zero), ty)
        return b.sub(positive, b.zext(icmp(b, "<", a[0], zero), ty))

    ops: dict[str, Lowering] = {
        "add": lambda b, a: b.add(a[0], a[1]),
        "sub": lambda b, a: b.sub(a[0], a[1]),
        "mul": lambda b, a: b.mul(a[0], a[1]),
        "floordiv": lambda b, a: _int_floordiv_mod(b, a[0], a[1], signed)[0],
        "mod": lambda b, a: _int_floordiv_mod(b, a[0], a[1], signed)[1],
        "neg": lambda b, a: b.neg(a[0]),
        "pos": lambda b, a: a[0],
        "abs": abs_,
        "sign": sign,
        "square": lambda b, a: b.mul(a[0], a[0]),
        "maximum": pick(">"), "fmax": pick(">"),
        "minimum": pick("<"), "fmin": pick("<"),
        "clip": clip,
        "bitwise_and": lambda b, a: b.and_(a[0], a[1]),
        "bitwise_or": lambda b, a: b.or_(a[0], a[1]),
        "bitwise_xor": lambda b, a: b.xor(a[0], a[1]),
        "invert": lambda b, a: b.not_(a[0]),
        "left_shift": lambda b, a: _shift(b, a[0], a[1], True, signed),
        "right_shift": lambda b, a: _shift(b, a[0], a[1], False, signed),
        "isnan": lambda b, a: _const(_I1, 0),
        "isinf": lambda b, a: _const(_I1, 0),
        "isfinite": lambda b, a: _const(_I1, 1),
        "signbit": lambda b, a: (
            b.icmp_signed("<", a[0], _const(a[0].type, 0)) if signed else _const(_I1, 0)
        ),
        **{name: (lambda b, a: a[0]) for name in ("floor", "ceil", "trunc", "rint")},
        **{
            name: (lambda b, a, pred=pred: icmp(b, pred, a[0], a[1]))
            for name, pred in _FCMP.items()
        },
    }
    return ops


_SIGNED_OPS = _int_ops(signed=True)
_UNSIGNED_OPS = _int_ops(signed=False)
# NumPy's bool loops: add is or, mul is and, max/min are or/and; comparisons order False<True.
_BOOL_OPS: dict[str, Lowering] = {
    **{name: _UNSIGNED_OPS[name] for name in ("isnan", "isinf", "isfinite", "signbit", "abs")},
    **{name: _UNSIGNED_OPS[name] for name in _FCMP},
    **{name: (lambda b, a: b.or_(a[0], a[1])) for name in ("add", "maximum", "fmax")},
    **{name: (lambda b, a: b.and_(a[0], a[1])) for name in ("mul", "minimum", "fmin")},
    "bitwise_and": lambda b, a: b.and_(a[0], a[1]),
    "bitwise_or": lambda b, a: b.or_(a[0], a[1]),
    "bitwise_xor": lambda b, a: b.xor(a[0], a[1]),
    "invert": lambda b, a: b.not_(a[0]),
}

_LOGICAL_OPS: dict[str, Lowering] = {
    "logical_and": lambda b, a: b.and_(a[0], a[1]),
    "logical_or": lambda b, a: b.or_(a[0], a[1]),
    "logical_xor": lambda b, a: b.xor(a[0], a[1]),
    "logical_not": lambda b, a: b.not_(a[0]),
}


# NumPy's half loops compare with npy_half_ge/le: ties (+0 vs -0) keep the first operand,
# where its float and double loops keep the second.
_HALF_OPS: dict[str, Lowering] = {
    "maximum": lambda b, a: _fmaximum(b, a[0], a[1], ">="),
    "minimum": lambda b, a: _fmaximum(b, a[0], a[1], "<="),
    "fmax": lambda b, a: _fmaxnum(b, a[0], a[1], ">="),
    "fmin": lambda b, a: _fmaxnum(b, a[0], a[1], "<="),
    "clip": _clip_keeping_ties,
}


def _table(dtype: np.dtype) -> dict[str, Lowering]:
    if dtype.kind == "f":
        return _FLOAT_OPS
    if dtype.kind == "b":
        return _BOOL_OPS
    return _SIGNED_OPS if dtype.kind == "i" else _UNSIGNED_OPS


def lower_op(
    b: ir.IRBuilder, op: KernelOp, args: list[ir.Value], arg_dtypes: list[np.dtype],
    fast: bool = False, operand_nans: OperandNans | None = None,
) -> ir.Value:
    """Emit ``op`` on scalar operands (already in their register types). ``fast``: a
    float32 or float64 math function with a fast form emits it (``vmath.emit_math``), so
    the result is exact only where it is not NaN.
    ``operand_nans``: the NaN selects the op needs (``operand_nans.operand_nans``)."""
    name, dtype = op.op, np.dtype(op.dtype)
    if name == "cast":
        return cast_value(b, args[0], arg_dtypes[0], dtype)
    if name == "where":
        return b.select(_truthy(b, args[0], arg_dtypes[0]), args[1], args[2])
    if name in _LOGICAL_OPS:
        return _LOGICAL_OPS[name](b, [_truthy(b, v, d) for v, d in zip(args, arg_dtypes)])
    if name in ("left_shift", "right_shift"):
        args = [args[0], cast_value(b, args[1], arg_dtypes[1], dtype)]
        arg_dtypes = [dtype, dtype]
    operand_dtype = arg_dtypes[0]
    if NAN_FIXED_LATER in op.attrs and name == "square" and operand_dtype != _F16:
        return b.fmul(args[0], args[0])  # (x86's NaN select of _self_product not needed)
    if name == "mod" and PYTHON_FLOAT_REMAINDER in op.attrs:
        name = "python_float_mod"
    if SCALAR_OPERANDS in op.attrs and operand_dtype in (_F32, _F64):
        name = {"clip": "clip_scalar_bounds", "pow": "pow_scalar_exponent"}[name]
    elif SCALAR_OPERANDS in op.attrs and name == "pow" and operand_dtype == _F16:
        name = "pow_scalar_exponent"  # x ** 0.5 is sqrt(x) for half too: (-0.0) ** 0.5 = -0.0
    if operand_dtype == _F16:  # NumPy computes half ops in float and rounds each result
        once = {}   # one widening per value: x * x stays a product of one value
        for v in args:
            if id(v) not in once:
                once[id(v)] = b.fpext(v, ir.FloatType())
        widened = [once[id(v)] for v in args]
        if name in MATH_FUNCTIONS:  # NaN results as NumPy's half loops give them
            result = vmath.emit_math(b, name, widened, like="float16")
        elif name == "pow_scalar_exponent":
            result = _half_pow_scalar_exponent(b, *widened, op.attrs)
        else:
            result = _HALF_OPS.get(name, _table(_F32)[name])(b, widened)
        if name in ("pow", "pow_scalar_exponent"):
            result = _half_pow_signalling(b, args, widened, result)
        if operand_nans is not None:
            result = _with_operand_nans(b, name, dtype, widened, result, operand_nans)
        if dtype != _F16:
            return result
        result = b.fptrunc(result, ir.HalfType())
        if name in MATH_FUNCTIONS and len(args) == 1 and \
                numpy_nans.nan_bits(name, "float16").argument is None:
            # the NaN argument itself, bit for bit (widening would quiet a signaling one)
            result = b.select(b.fcmp_unordered("uno", args[0], args[0]), args[0], result)
        return result
    if fast and name in vmath.FAST_FORMS and operand_dtype.kind == "f":
        return vmath.emit_math(b, name, args, fast=True)
    result = _table(operand_dtype)[name](b, args)
    if operand_nans is None:
        return result
    return _with_operand_nans(b, name, operand_dtype, args, result, operand_nans)
