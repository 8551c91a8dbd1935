"""The arithmetic vocabulary of the inline math library: IEEE formats and an IR emitter.

vmath's algorithms are written as formulas over ``Emit``, which turns Python numbers into
constants of the working format and names every operation after its math. The same formula
emits scalar code (the form kernels use: LLVM's loop vectorizer widens it) or explicit
``<lanes x T>`` vector code (the form of the vector functions vmath defines itself for the
vectorizer to call, see vmath_trig), so one description of an algorithm serves both.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

from llvmlite import ir

from tsjit.codegen import vmath_poly as K
from tsjit.codegen.ir_util import fcmp_quiet

__all__ = ["F32", "F64", "Emit", "Format"]


@dataclass(frozen=True)
class Format:
    """The IEEE binary format of one float type and its same-width integer type."""

    name: str
    ftype: ir.Type
    itype: ir.IntType
    mant_bits: int
    bias: int
    # Bits that the largest integer multiplier of a split constant needs (2^k scale factors
    # reach 1077 in float64 and 151 in float32): the head of such a split keeps the rest.
    scale_bits: int
    # Low mantissa bits cleared to make a "short" value whose product with a constant head
    # of the same number of bits is exact (fdlibm clears the low word of a double).
    short_bits: int

    @property
    def precision(self) -> int:
        return self.mant_bits + 1

    @property
    def inf_bits(self) -> int:
        return (1 << (self.itype.width - 1)) - (1 << self.mant_bits)

    @property
    def min_normal(self) -> float:
        return 2.0 ** (1 - self.bias)

    def split(self, value: str | Fraction, head_bits: int | None = None) -> tuple[float, float]:
        """(head, tail) of a constant, the head short enough that an integer multiple of it
        up to 2**scale_bits (default) or with ``head_bits`` bits is exact."""
        bits = self.precision - self.scale_bits if head_bits is None else head_bits
        return K.split(value, (bits,), self.name)

    def const(self, value: str | Fraction) -> float:
        return K.rounded(value, self.name)


F32 = Format("float32", ir.FloatType(), ir.IntType(32), 23, 127, 8, 12)
F64 = Format("float64", ir.DoubleType(), ir.IntType(64), 52, 1023, 11, 32)


def _mangled(ty: ir.Type) -> str:
    """A type's suffix in an overloaded intrinsic's name (f64, i32, v8f64, ...)."""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{_mangled(ty.element)}"
    return ty.intrinsic_name


class Emit:
    """Arithmetic in one float format on an IRBuilder, on scalars (``lanes`` None) or on
    vectors of ``lanes`` elements. Python numbers stand for constants of that format (splat
    across the lanes), which keeps the algorithms readable as formulas.

    The NaNs of the NumPy loop being mimicked (see numpy_nans): ``invalid_nan_positive``,
    ``invalid`` gives NaNs with the sign bit clear; ``nan_argument_bits``, the bits (in this
    format) ``nan_result`` gives for a NaN argument, None for the argument itself. And its
    flags (see numpy_flags): ``denormal_underflow``, whether it raises underflow for
    denormal arguments."""

    def __init__(self, builder: ir.IRBuilder, fmt: Format, lanes: int | None = None,
                 invalid_nan_positive: bool = False, nan_argument_bits: int | None = None,
                 denormal_underflow: bool = False):
        self.b = builder
        self.fmt = fmt
        self.lanes = lanes
        self.invalid_nan_positive = invalid_nan_positive
        self.nan_argument_bits = nan_argument_bits
        self.denormal_underflow = denormal_underflow
        self.ftype = self.shaped(fmt.ftype)
        self.itype = self.shaped(fmt.itype)

    def shaped(self, ty: ir.Type) -> ir.Type:
        """``ty``, or a vector of it when emitting vector code."""
        return ty if self.lanes is None else ir.VectorType(ty, self.lanes)

    def constant(self, ty: ir.Type, value: float | int) -> ir.Constant:
        """A constant of the scalar type ``ty`` in the emitter's shape."""
        if self.lanes is None:
            return ir.Constant(ty, value)
        return ir.Constant(ir.VectorType(ty, self.lanes), [value] * self.lanes)

    def in_format(self, fmt: Format) -> Emit:
        """Arithmetic in another format (NumPy's NaN bits and flags are not carried over)."""
        return Emit(self.b, fmt, self.lanes, self.invalid_nan_positive)

    def promoted(self) -> Emit:
        return self.in_format(F64)

    def v(self, x: ir.Value | float) -> ir.Value:
        return x if isinstance(x, ir.Value) else self.constant(self.fmt.ftype, float(x))

    # -- float arithmetic
    def add(self, x, y):
        return self.b.fadd(self.v(x), self.v(y))

    def sub(self, x, y):
        return self.b.fsub(self.v(x), self.v(y))

    def mul(self, x, y):
        return self.b.fmul(self.v(x), self.v(y))

    def div(self, x, y):
        return self.b.fdiv(self.v(x), self.v(y))

    def neg(self, x):
        return self.b.fneg(self.v(x))

    def mla(self, x, y, z):
        """x*y + z, fused or not as the target prefers (both are accurate enough)."""
        return self._intrinsic("llvm.fmuladd", x, y, z)

    def fma(self, x, y, z):
        """x*y + z with one rounding: for exact products (x*y - fl(x*y) == fma(x, y, -p))."""
        return self._intrinsic("llvm.fma", x, y, z)

    def poly(self, x, coeffs) -> ir.Value:
        """Horner evaluation of sum(coeffs[i] * x**i)."""
        acc = self.v(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self.mla(acc, x, c)
        return acc

    def fabs(self, x):
        return self._intrinsic("llvm.fabs", x)

    def floor(self, x):
        return self._intrinsic("llvm.floor", x)

    def rint(self, x):
        """x rounded to an integer, ties to even (one instruction with SSE4.1 or AVX)."""
        return self._intrinsic("llvm.rint", x)

    def copysign(self, magnitude, sign):
        return self._intrinsic("llvm.copysign", magnitude, sign)

    def sqrt(self, x):
        return self._intrinsic("llvm.sqrt", x)

    def invalid(self, negative):
        """The NaN of an invalid operation, from a ``negative`` (non-NaN) argument: sqrt of
        it raises the invalid flag and gives x86's default NaN (sign bit set), which fabs
        (a bit operation: no flag) turns positive where the mimicked loop's NaN is."""
        nan = self.sqrt(negative)
        return self.fabs(nan) if self.invalid_nan_positive else nan

    def nan_result(self, x):
        """The result for lanes where the argument x is NaN: x itself, or the NaN the
        mimicked loop gives instead (a select only then)."""
        if self.nan_argument_bits is None:
            return x
        return self.guard(self.is_nan(x), self.from_bits(self.int(self.nan_argument_bits)), x)

    def with_nan_result(self, x, value):
        """``value``, but ``nan_result(x)`` where x is NaN: one select (of the integer bits
        where the mimicked loop's NaN is a constant: see ``guard``), not a select of
        ``nan_result``'s select."""
        if self.nan_argument_bits is None:
            return self.sel(self.is_nan(x), x, value)
        return self.guard(self.is_nan(x), self.from_bits(self.int(self.nan_argument_bits)),
                          value)

    def is_nan(self, x):
        """Whether x is NaN, compared as integers (|x|'s bits beyond inf's): a float compare
        would take a multiply pipe, which the math functions' polynomials keep busy."""
        return self.magnitude_above(self.fabs(x), float("inf"))

    def not_finite(self, x):
        """Whether x is +-inf or NaN: |x| == inf or unordered, a quiet compare (no flag)."""
        return self.b.fcmp_unordered("==", self.fabs(x), self.v(float("inf")))

    def below_normal(self, x):
        """|x| < the smallest normal number (NaN: false), compared as integers: no flag."""
        return self.b.icmp_signed("<", self.bits(self.fabs(x)), self.bits(self.fmt.min_normal))

    def tiny_result(self, x):
        """x as the value of a function that rounds to x at tiny arguments x: at denormal
        ones with the underflow flag where the mimicked loop raises it
        (``denormal_underflow``: x * (1 - 2**-precision), inexact there and exactly x,
        and x * 1 elsewhere)."""
        if not self.denormal_underflow:
            return x
        # The factor is chosen as integers: a float select would let LLVM multiply every
        # lane by 1 - 2**-precision, which underflows at the smallest normal numbers.
        factor = self.b.select(self.below_normal(x), self.bits(1.0 - 2.0**-self.fmt.precision),
                               self.bits(1.0))
        return self.mul(x, self.from_bits(factor))

    def clamp_magnitude(self, magnitude, lo, hi):
        """A magnitude (sign bit clear) limited to [lo, hi] (0 <= lo < hi) by an integer
        min and max of its bits: no flag, NaN and inf become hi, and no float operation
        of the caller's can be speculated on the unclamped value (LLVM moves float ops
        across a float select freely, and they may raise flags the select avoided)."""
        bits = self.bits(magnitude)
        for op, bound in (("<", lo), (">", hi)):
            bits = self.b.select(self.b.icmp_signed(op, bits, self.bits(bound)),
                                 self.bits(bound), bits)
        return self.from_bits(bits)

    def magnitude_above(self, magnitude, bound: float):
        """magnitude > bound for a magnitude with its sign bit clear (|x|) and a bound > 0,
        compared as integers: no flag, and true for NaN as for inf."""
        return self.b.icmp_signed(">", self.bits(magnitude), self.bits(bound))

    def with_sign_of(self, magnitude, sign):
        """copysign(magnitude, sign) for a magnitude whose sign bit is clear: one or of
        sign's sign bit (copysign also clears the magnitude's)."""
        sign_bit = self.b.and_(self.bits(sign), self.int(1 << (self.fmt.itype.width - 1)))
        return self.from_bits(self.b.or_(self.bits(magnitude), sign_bit))

    def sign_set(self, x):
        """Whether x's sign bit is set (-0.0 and negative NaNs included), without a flag."""
        return self.b.icmp_signed("<", self.bits(x), self.int(0))

    def _intrinsic(self, name: str, *args):
        return self.call_intrinsic(name, self.ftype, [self.v(a) for a in args], [self.ftype])

    def call_intrinsic(self, name: str, result: ir.Type, args: list[ir.Value],
                       overloads: list[ir.Type]) -> ir.Value:
        """Call the intrinsic ``name`` overloaded on ``overloads`` (declared on first use)."""
        module = self.b.module
        full_name = ".".join([name, *map(_mangled, overloads)])
        fn = module.globals.get(full_name)
        if fn is None:
            fn = ir.Function(module, ir.FunctionType(result, [a.type for a in args]), full_name)
        return self.b.call(fn, args)

    # -- comparisons (ordered: false when either side is NaN) and selection
    def cmp(self, op: str, x, y):
        """x op y, raising no flag for a NaN (as NumPy's comparisons; see fcmp_quiet)."""
        return fcmp_quiet(self.b, op, self.v(x), self.v(y))

    def cmp_numbers(self, op: str, x, y):
        """x op y for operands that are never NaN: one vector compare, which for a NaN
        operand would raise the invalid flag (x86's <, <=, >, >= signal). The promise is
        the compare's ``nnan`` flag, which lets a select of it become a min or max."""
        return self.b.fcmp_ordered(op, self.v(x), self.v(y), flags=("nnan",))

    def sel(self, cond, x, y):
        return self.b.select(cond, self.v(x), self.v(y))

    def guard(self, cond, x, y):
        """cond ? x : y selected as integers. LLVM folds a float operation on a float
        select with a constant arm into both arms, so it runs on every lane and may raise
        a flag on the lanes the select was to keep from it. The integer select hides the
        constant from that fold where it is used here (tests/test_vmath_flags.py checks
        each), though LLVM may still turn it back into a float select; a min or max of the
        bits (clamp_magnitude) never becomes one."""
        return self.from_bits(self.b.select(cond, self.bits(x), self.bits(y)))

    def clamp(self, x, lo: float, hi: float):
        """x, never NaN, limited to [lo, hi] with lo < 0 < hi, as integers (two integer
        min operations: the float min and max would take the multiply pipes, which a
        polynomial keeps busy): an unsigned min with lo's bits limits the negative numbers
        (their bits grow with the magnitude, above every positive number's), a signed min
        with hi's the positive ones (the negative ones are negative integers)."""
        assert lo < 0 < hi
        b = self.b
        bits = self.bits(x)
        for compare, bound in ((b.icmp_unsigned, lo), (b.icmp_signed, hi)):
            bits = b.select(compare(">", bits, self.bits(bound)), self.bits(bound), bits)
        return self.from_bits(bits)

    # -- conversions and bit manipulation
    def int(self, value: int) -> ir.Constant:
        return self.constant(self.fmt.itype, value)

    def bits(self, x):
        return self.b.bitcast(self.v(x), self.itype)

    def from_bits(self, i):
        return self.b.bitcast(i, self.ftype)

    def to(self, x, fmt: Format):
        """x converted to ``fmt`` (exact when widening, rounded when narrowing)."""
        target = self.shaped(fmt.ftype)
        if fmt.precision > self.fmt.precision:
            return self.b.fpext(x, target)
        return self.b.fptrunc(x, target) if fmt.precision < self.fmt.precision else x

    def round_int(self, t) -> tuple[ir.Value, ir.Value]:
        """rint(t) as a float and as an integer, for |t| < 2**(mant_bits - 1).

        Adding 1.5 * 2**mant_bits pushes the fraction out of the mantissa, so the integer
        lands in the low bits: no float-to-int conversion (poison on NaN) is needed, and a
        NaN or infinite t just gives some integer, whose lanes the callers discard."""
        shifter = 1.5 * 2.0**self.fmt.mant_bits
        shifted = self.add(t, shifter)
        n = self.b.sub(self.bits(shifted), self.bits(shifter))
        return self.sub(shifted, shifter), n

    def pow2(self, n):
        """2**n for an integer n in the normal exponent range."""
        biased = self.b.add(n, self.int(self.fmt.bias))
        return self.from_bits(self.b.shl(biased, self.int(self.fmt.mant_bits)))

    def ldexp(self, p, n):
        """p * 2**n for p near 1, n from far below the denormals to past overflow, rounded
        once. With AVX-512, ``llvm.ldexp`` is one ``vscalef`` per vector; elsewhere it
        would be a libm call per element, so p is scaled in two steps that each stay
        normal: by 2**(n//2) exactly, adding to p's exponent field (an integer add: no
        multiply), then by a multiply with 2**(n - n//2), the one rounding."""
        if _has_vector_ldexp():
            i32 = self.shaped(ir.IntType(32))
            exponent = n if n.type == i32 else self.b.trunc(n, i32)
            return self.call_intrinsic("llvm.ldexp", self.ftype, [self.v(p), exponent],
                                       [self.ftype, i32])
        half = self.b.ashr(n, self.int(1))
        scaled = self.from_bits(self.b.add(self.bits(p),
                                           self.b.shl(half, self.int(self.fmt.mant_bits))))
        return self.mul(scaled, self.pow2(self.b.sub(n, half)))

    def two_sum(self, x, y) -> tuple[ir.Value, ir.Value]:
        """(s, e) with s = fl(x + y) and s + e == x + y exactly (Knuth)."""
        s = self.add(x, y)
        y_part = self.sub(s, x)
        return s, self.add(self.sub(x, self.sub(s, y_part)), self.sub(y, y_part))

    def fast_two_sum(self, x, y) -> tuple[ir.Value, ir.Value]:
        """(s, e) with s = fl(x + y) and s + e == x + y exactly, for |x| >= |y| (Dekker)."""
        s = self.add(x, y)
        return s, self.sub(y, self.sub(s, x))

    def two_prod(self, x, y) -> tuple[ir.Value, ir.Value]:
        """(p, e) with p = fl(x * y) and p + e == x * y exactly."""
        p = self.mul(x, y)
        return p, self.fma(x, y, self.neg(p))

    def load_element(self, table: ir.GlobalVariable, index) -> ir.Value:
        """table[index] of a constant array (a gather when emitting vectors)."""
        element = table.value_type.element
        pointer = self.b.gep(table, [index], source_etype=element)
        if self.lanes is None:
            return self.b.load(pointer, typ=element)
        pointer.type = self.shaped(ir.PointerType())  # llvmlite assumes a scalar index
        result = self.shaped(element)
        every_lane = self.constant(ir.IntType(1), 1)
        alignment = ir.Constant(ir.IntType(32), element.width // 8)
        return self.call_intrinsic("llvm.masked.gather", result,
                                   [pointer, alignment, every_lane, ir.Constant(result, None)],
                                   [result, pointer.type])

    def clear_low_bits(self, x, count: int):
        """x with its lowest ``count`` mantissa bits zeroed (truncated toward zero)."""
        return self.from_bits(self.b.and_(self.bits(x), self.int(-(1 << count))))


@functools.cache
def _has_vector_ldexp() -> bool:
    """Whether the host (the JIT's target) lowers ``llvm.ldexp`` on vectors natively."""
    import llvmlite.binding as llvm  # here: a loop from the disk cache never loads LLVM
    return llvm.get_host_cpu_features().get("avx512f", False)
