"""Small LLVM building blocks shared by the Python and NumPy semantics of scalar ops.

Arithmetic itself comes from the elementwise kernel library (`element_ops.lower_op`): a
Python int is NumPy's int64 (whose wrap-around the callers test for, `exceeds_dtype`;
`-2**63 // -1` included: the kernel library makes that division safe), a Python float
is float64, and
NumPy's floor division, remainder, shifts and comparisons agree with Python's, reduced to
64 bits, wherever Python does not raise (the callers route those cases to the
interpreter first).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ..element_ops import lower_op
from ..kernel_spec import KernelOp
from .ntypes import DOUBLE, I1, I64, PY_BOOL, PY_FLOAT, PY_INT, NType, NumpyScalar, PyScalar

INT64 = np.dtype(np.int64)
FLOAT64 = np.dtype(np.float64)
BOOL = np.dtype(np.bool_)
TWO_63 = 2.0 ** 63
# Python operator names (as in aten::<name>) -> the kernel library's op names
KERNEL_OPS = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "truediv",
              "floordiv": "floordiv", "mod": "mod", "lshift": "left_shift",
              "rshift": "right_shift", "and": "bitwise_and", "or": "bitwise_or",
              "xor": "bitwise_xor"}
_SUFFIX = {"float": "f32", "double": "f64"}


def dtype_of(kind: NType) -> np.dtype:
    """The dtype whose arithmetic a Python scalar or NumPy scalar kind computes in."""
    if isinstance(kind, NumpyScalar):
        return kind.dtype
    return {PY_INT: INT64, PY_FLOAT: FLOAT64, PY_BOOL: BOOL}[kind]


def elementwise(b: ir.IRBuilder, op: str, args: list[ir.Value], dtype: np.dtype,
                arg_dtypes: list[np.dtype] | None = None, attrs: tuple = ()) -> ir.Value:
    """NumPy's per-element `op` with result dtype `dtype` (operands already converted;
    ``attrs`` as KernelOp's)."""
    arg_dtypes = arg_dtypes or [dtype] * len(args)
    return lower_op(b, KernelOp(op, (), np.dtype(dtype), attrs), list(args), arg_dtypes)


PREDICATES = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def compare(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value, dtype: np.dtype) -> ir.Value:
    """NumPy's (and for float64 Python's) comparison `op` ("lt", "eq", ...) of two
    operands of `dtype`.  Floats compare with LLVM's fcmp: scalar code never reads the
    processor's invalid flag (NumPy's scalar operations clear it before their own), so it
    needs none of the kernel library's flag-quiet compares (ir_util.fcmp_quiet), which
    cost ~8 instructions each."""
    if np.dtype(dtype).kind == "f":
        pred = PREDICATES[op]
        return b.fcmp_unordered(pred, x, y) if op == "ne" else b.fcmp_ordered(pred, x, y)
    return elementwise(b, op, [x, y], BOOL, [dtype, dtype])


def const(typ: ir.Type, value: float | int) -> ir.Constant:
    return ir.Constant(typ, value)


def exceeds_dtype(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value, dtype: np.dtype
                  ) -> ir.Value:
    """Whether the exact x op y ("add", "sub", "mul") of two integers of `dtype` lies
    outside it: NumPy's integer overflow, and for int64 where a Python int needs more than
    64 bits.  64-bit operands take LLVM's overflow intrinsics (the processor's overflow
    flag: `add; jo`); a 128-bit test became 128-bit arithmetic there (~10 instructions
    for s += i * i), while narrower types compute in 128 bits cheaply."""
    if dtype.itemsize == 8:
        signed = "s" if dtype.kind == "i" else "u"
        overflow = getattr(b, f"{signed}{op}_with_overflow")(x, y)
        return b.extract_value(overflow, 1)
    wide = ir.IntType(128)
    extend = b.sext if dtype.kind == "i" else b.zext
    exact = getattr(b, op)(extend(x, wide), extend(y, wide))
    info = np.iinfo(dtype)
    return b.or_(b.icmp_signed("<", exact, const(wide, int(info.min))),
                 b.icmp_signed(">", exact, const(wide, int(info.max))))


def in_bounds(b: ir.IRBuilder, x: ir.Value, low: int | None, high: int | None,
              negate: bool = False) -> ir.Value:
    """low <= x <= high for an i64 x (a None bound holds), or with `negate` its negation:
    one compare per bound, and one for both (x - low <= high - low, unsigned).  An empty
    range (high < low: `(2**63 - 1) * (3 * a + 1) + 1` leaves int64 at every a) holds
    nowhere; its span would read as 2**64 - 1 unsigned, which holds everywhere."""
    if low is not None and high is not None and high < low:
        return ir.Constant(I1, int(negate))
    if low is not None and high is not None:
        offset = b.sub(x, const(I64, low))
        span = high - low                               # < 2**64: as a signed constant
        return b.icmp_unsigned(">" if negate else "<=", offset,
                               const(I64, span - 2 ** 64 if span >= 2 ** 63 else span))
    if low is not None:
        return b.icmp_signed("<" if negate else ">=", x, const(I64, low))
    if high is not None:
        return b.icmp_signed(">" if negate else "<=", x, const(I64, high))
    return ir.Constant(I1, int(not negate))


def to_int64(b: ir.IRBuilder, value: ir.Value, kind: PyScalar) -> ir.Value:
    """A Python int or bool as i64."""
    return b.zext(value, I64) if kind == PY_BOOL else value


def to_double(b: ir.IRBuilder, value: ir.Value, kind: NType) -> ir.Value:
    """float(x) of a Python scalar or a NumPy scalar (exact for every source but int64/
    uint64 beyond 2**53, which rounds to nearest as CPython and NumPy do)."""
    dtype = dtype_of(kind)
    if dtype.kind == "f":
        return value if value.type == DOUBLE else b.fpext(value, DOUBLE)
    if dtype.kind in "bu":
        return b.uitofp(value, DOUBLE)
    return b.sitofp(value, DOUBLE)


def is_finite(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return b.fcmp_ordered("<", intrinsic(b, "fabs", x), const(x.type, float("inf")))


def any_of(b: ir.IRBuilder, flags: list[ir.Value]) -> ir.Value:
    result = flags[0]
    for flag in flags[1:]:
        result = b.or_(result, flag)
    return result


def fits_int64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """-2**63 <= x < 2**63 (false for NaN): fptosi is exact-after-truncation there."""
    return b.and_(b.fcmp_ordered(">=", x, const(x.type, -TWO_63)),
                  b.fcmp_ordered("<", x, const(x.type, TWO_63)))


def intrinsic(b: ir.IRBuilder, name: str, *args: ir.Value) -> ir.Value:
    """A call of the LLVM intrinsic `llvm.<name>` overloaded on its operands' type."""
    ty = args[0].type
    full = f"llvm.{name}.{_SUFFIX.get(str(ty), str(ty))}"
    fn = b.module.globals.get(full)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(ty, [ty] * len(args)), name=full)
    return b.call(fn, list(args))


def libm(b: ir.IRBuilder, name: str, *args: ir.Value) -> ir.Value:
    """A call of the C library's function `name` (`pow`, `powf`: its type is its operands'),
    which CPython's math module and NumPy's scalars call too (so results are theirs bit for
    bit)."""
    fn = b.module.globals.get(name)
    if fn is None:
        ty = args[0].type
        fn = ir.Function(b.module, ir.FunctionType(ty, [ty] * len(args)), name=name)
    return b.call(fn, list(args))


def is_normal(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """x is finite and not zero or subnormal (false for NaN): one unsigned compare of its
    magnitude's bits, smallest normal <= |x| < inf."""
    width = {"float": 32, "double": 64}[str(x.type)]
    bits = ir.IntType(width)
    magnitude = b.and_(b.bitcast(x, bits), const(bits, (1 << (width - 1)) - 1))
    mantissa = {32: 23, 64: 52}[width]
    smallest, infinity = 1 << mantissa, ((1 << (width - 1 - mantissa)) - 1) << mantissa
    return b.icmp_unsigned("<", b.sub(magnitude, const(bits, smallest)),
                           const(bits, infinity - smallest))


def compare_int_float(b: ir.IRBuilder, pred: str, i: ir.Value, f: ir.Value) -> ir.Value:
    """Python's exact comparison of an int64 with a double (CPython's float_richcompare):
    never through a rounded conversion of the int."""
    fi = b.sitofp(i, DOUBLE)
    # Where the rounded int differs from f, its order is the int's order (rounding moves a
    # value by at most half an ulp, never past a neighbouring double).
    rounded = b.fcmp_ordered(pred, fi, f) if pred != "!=" else b.fcmp_unordered(pred, fi, f)
    # Equal after rounding: f is an integer-valued double; compare as integers (f >= 2**63
    # exceeds every int64).
    f_big = b.fcmp_ordered(">=", f, const(DOUBLE, TWO_63))
    fi_int = b.fptosi(b.select(f_big, const(DOUBLE, 0.0), f), I64)
    exact = b.select(f_big, const(I1, int(pred in ("<", "<=", "!="))),
                     b.icmp_signed(pred, i, fi_int))
    tie = b.fcmp_ordered("==", fi, f)
    return b.select(tie, exact, rounded)


def flip(pred: str) -> str:
    """The predicate with its operands swapped (a < b  <=>  b > a)."""
    return {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(pred, pred)

