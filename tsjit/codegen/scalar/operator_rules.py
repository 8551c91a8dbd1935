"""Native rules for Python's operators (`+ - * / // % ** << >> & | ^`, their augmented
forms, comparisons, unary `- + ~`).

Operands that are Python numbers get Python's semantics (`//`, `%` floor; exact int/float
comparison; ZeroDivisionError, negative shift counts, int true division beyond 2**53 and
non-finite powers through CPython).  Native ints are 64 bits: an int result that needs
more (`+ - * ** << //`, negation, `abs`: each is tested, unless passes/int_ranges shows
it cannot, see _exact_int), like `int ** negative int` or a complex power, whose result
is of another type, makes the region run again in the interpreter, which gives Python's
int (see bailout.py); an
operand that is a NumPy scalar gives NumPy's semantics (numpy_ops).  Augmented
assignment of numbers rebinds, so `x += y` is `x + y` (arrays never reach these rules).
"""
from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from ...ir.graph import Node
from ..kernel_spec import PYTHON_FLOAT_REMAINDER
from . import numpy_ops
from .arith import (
    FLOAT64,
    INT64,
    KERNEL_OPS,
    PREDICATES,
    any_of,
    compare,
    compare_int_float,
    const,
    elementwise,
    exceeds_dtype,
    flip,
    in_bounds,
    intrinsic,
    is_finite,
    libm,
    to_double,
    to_int64,
)
from .emitter import FunctionEmitter
from .ntypes import (
    DOUBLE,
    I1,
    I64,
    NONE,
    PY_BOOL,
    PY_FLOAT,
    PY_INT,
    NType,
    NumpyScalar,
    NValue,
    Tuple,
    Unsupported,
)
from .python_ops import require_numbers
from .rules import register_rule

_ARITHMETIC = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift",
               "and", "or", "xor")
_BITWISE = ("and", "or", "xor")
# bool & | ^ bool: the IRBuilder's method names are not uniform (and_, or_, xor)
_BOOL_BUILDERS = {"and": ir.IRBuilder.and_, "or": ir.IRBuilder.or_, "xor": ir.IRBuilder.xor}
_EXACT_INT_DOUBLE = 2 ** 53        # ints of at most this magnitude convert to double exactly
_INT64_MIN = -2 ** 63
_PYTHON_FLOAT = (PYTHON_FLOAT_REMAINDER,)   # float % and divmod: CPython's NaN of two NaNs


def _operator_name(node: Node) -> str:
    name = node.kind.split("::", 1)[1]
    return name[1:] if name.startswith("i") and name[1:] in _ARITHMETIC else name


def _has_numpy(kinds: Sequence[NType]) -> bool:
    return any(isinstance(k, NumpyScalar) for k in kinds)


def python_result(op: str, a: NType, b: NType) -> NType:
    """Python's result kind for two Python numbers (as operators.numeric_result)."""
    if op == "truediv":
        return PY_FLOAT
    if op in _BITWISE and a == b == PY_BOOL:
        return PY_BOOL
    if PY_FLOAT in (a, b):
        if op in (*_BITWISE, "lshift", "rshift"):
            raise Unsupported(f"{op} of a float")
        return PY_FLOAT
    return PY_INT


def _binary_infer(node: Node, kinds) -> list[NType]:
    return _infer_binary(_operator_name(node), node, kinds)


def _infer_binary(op: str, node: Node, kinds: Sequence[NType]) -> list[NType]:
    if _has_numpy(kinds):
        return numpy_ops.binary_infer(op, kinds)
    require_numbers(node, kinds)
    return [python_result(op, *kinds)]


def _binary_emit(em: FunctionEmitter, node: Node, args, out_kinds) -> list[NValue]:
    return _emit_binary(_operator_name(node), em, node, args, out_kinds)


def _emit_binary(op: str, em: FunctionEmitter, node: Node, args: Sequence[NValue],
                 out_kinds: Sequence[NType]) -> list[NValue]:
    (kind,) = out_kinds
    if isinstance(kind, NumpyScalar):
        return numpy_ops.binary_emit(em, node, op, args, kind)
    if kind == PY_BOOL:
        return [NValue(PY_BOOL, (_BOOL_BUILDERS[op](em.b, args[0].value, args[1].value),))]
    if kind == PY_INT:
        return _int_binary(em, node, op, args)
    return _float_binary(em, node, op, args)


def _int_binary(em: FunctionEmitter, node: Node, op: str, args: Sequence[NValue]
                ) -> list[NValue]:
    b = em.b
    x, y = (to_int64(b, a.value, a.kind) for a in args)
    zero = const(I64, 0)

    def kernel() -> ir.Value:
        return elementwise(b, KERNEL_OPS[op], [x, y], INT64)
    if op in ("add", "sub", "mul"):            # the wrapped result and the overflow flag
        both = getattr(b, f"s{op}_with_overflow")(x, y)
        return _exact_int(em, node, args, b.extract_value(both, 1), b.extract_value(both, 0))
    if op in ("floordiv", "mod", "lshift", "rshift"):
        if isinstance(y, ir.Constant) and not _python_raises(op, y.constant):
            if op in ("floordiv", "mod") and _power_of_two(y.constant):
                # floor semantics make these a shift and a mask (LLVM cannot tell once
                # the division runs under a select, see emitter._select_if)
                value = b.ashr(x, const(I64, y.constant.bit_length() - 1)) \
                    if op == "floordiv" else b.and_(x, const(I64, y.constant - 1))
                return [NValue(PY_INT, (value,))]
            if op in ("floordiv", "mod") and y.constant > 0 and \
                    em.int_ranges.non_negative(node.inputs[0]):
                # both operands >= 0: C's division is Python's, and unsigned division
                # lets LLVM strength-reduce `i % 1000` across an unrolled loop
                return [NValue(PY_INT, ((b.udiv if op == "floordiv" else b.urem)(x, y),))]
        else:   # a zero divisor (ZeroDivisionError), a negative shift count (ValueError)
            em.raise_at_site(node, args, b.icmp_signed(
                "==" if op in ("floordiv", "mod") else "<", y, zero))
        if op == "floordiv":                                   # -2**63 // -1 == 2**63
            return _exact_int(em, node, args, b.and_(
                b.icmp_signed("==", x, const(I64, _INT64_MIN)),
                b.icmp_signed("==", y, const(I64, -1))), kernel())
        if op == "lshift":
            return _exact_int(em, node, args, _shift_exceeds(b, x, y), kernel())
        return [NValue(PY_INT, (kernel(),))]
    if op == "pow":
        def power() -> list[NValue]:
            return _exact_int(em, node, args, *reversed(_int_power(em, x, y)))
        return em.python_fallback(node, args, b.icmp_signed("<", y, zero), power)
    return [NValue(PY_INT, (kernel(),))]


def _exact_int(em: FunctionEmitter, node: Node, args: Sequence[NValue], beyond: ir.Value,
               value: ir.Value) -> list[NValue]:
    """`value`, Python's int where `beyond` is false; where it is true Python's int needs
    more than 64 bits, and the region gives up (to run again in the interpreter).  The
    test is left out where int_ranges shows that the result stays in int64, and made on
    the operand where the result is an affine function of one (`3 * x + 1`: x <= c,
    one compare; the operations before the last need none, wrapped arithmetic being
    exact modulo 2**64).  A small `if` may run it on both arms: an arm not taken that
    goes beyond only costs a re-run."""
    test = em.int_ranges.test_for(node)
    if test is not None and node not in em.chunk_sums:
        if test.root is not None:
            root = em.values[test.root]
            beyond = in_bounds(em.b, to_int64(em.b, root.value, root.kind), test.low,
                               test.high, negate=True)
        em.test_int(beyond, node)
    return [NValue(PY_INT, (value,))]


def _shift_exceeds(b: ir.IRBuilder, x: ir.Value, count: ir.Value) -> ir.Value:
    """Whether Python's x << count (count >= 0) lies outside int64: shifting back does not
    give x (a count beyond 63, on which LLVM's shl is undefined, is clamped first)."""
    clamped = b.select(b.icmp_unsigned(">", count, const(I64, 63)), const(I64, 63), count)
    back = b.ashr(b.shl(x, clamped), clamped)
    nonzero_beyond = b.and_(b.icmp_unsigned(">", count, const(I64, 63)),
                            b.icmp_signed("!=", x, const(I64, 0)))
    return b.or_(b.icmp_signed("!=", back, x), nonzero_beyond)


def _python_raises(op: str, second: int) -> bool:
    """Whether Python raises for this second operand of int `//`, `%`, `<<`, `>>`: a zero
    divisor or a negative shift count."""
    return second == 0 if op in ("floordiv", "mod") else second < 0


def _power_of_two(c: int) -> bool:
    return c > 0 and c & (c - 1) == 0


def _binary_speculate(node: Node, kinds: Sequence[NType]) -> bool:
    """Python number arithmetic that never calls Python: `+ - *`, bitwise operators and
    int `// % << >>` by a constant Python accepts (see rules.Rule.speculate; an int result
    beyond 64 bits is only noted, see _exact_int)."""
    if _has_numpy(kinds):
        return False
    op = _operator_name(node)
    if op in ("add", "sub", "mul"):
        return True
    if python_result(op, *kinds) == PY_FLOAT:
        return False
    if op in _BITWISE:
        return True
    second = node.inputs[1].node
    return op in ("floordiv", "mod", "lshift", "rshift") and \
        second.kind == "prim::Constant" and type(second.attrs["value"]) is int and \
        not _python_raises(op, second.attrs["value"])


def _numpy_checked(node: Node, kinds: Sequence[NType]) -> bool:
    """NumPy scalar arithmetic and comparisons: their rare cases are one test on values
    computed beforehand (numpy_ops), but for integer powers, which always call Python."""
    if not _has_numpy(kinds):
        return False
    op = node.kind.split("::", 1)[1]
    return _operator_name(node) != "pow" or numpy_ops.binary_infer(
        "pow", kinds)[0].dtype.kind == "f" if op not in PREDICATES else True


def _python_numbers_only(node: Node, kinds: Sequence[NType]) -> bool:
    return not _has_numpy(kinds)


def _int_power(em: FunctionEmitter, base: ir.Value, exponent: ir.Value
               ) -> tuple[ir.Value, ir.Value]:
    """base ** exponent (exponent >= 0) by repeated squaring: its low 64 bits, and whether
    Python's power lies outside int64 (a product of the result overflowed, or a square
    that a later step multiplies in: |result| would then be at least 2**64)."""
    b = em.b
    entry = b.block
    loop, done = em.fn.append_basic_block("pow"), em.fn.append_basic_block("pow_done")
    b.branch(loop)
    b.position_at_end(loop)
    result, power, rest, beyond = b.phi(I64), b.phi(I64), b.phi(I64), b.phi(I1)
    odd = b.trunc(rest, I1)
    more = b.icmp_unsigned(">", rest, const(I64, 1))
    next_result = b.select(odd, b.mul(result, power), result)
    next_power, next_rest = b.mul(power, power), b.lshr(rest, const(I64, 1))
    next_beyond = any_of(b, [beyond, b.and_(odd, exceeds_dtype(b, "mul", result, power, INT64)),
                             b.and_(more, exceeds_dtype(b, "mul", power, power, INT64))])
    for phi, first, following in ((result, const(I64, 1), next_result),
                                  (power, base, next_power), (rest, exponent, next_rest),
                                  (beyond, ir.Constant(I1, 0), next_beyond)):
        phi.add_incoming(first, entry)
        phi.add_incoming(following, loop)
    b.cbranch(more, loop, done)
    b.position_at_end(done)
    return next_result, next_beyond


def _beyond_exact_double(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """|v| > 2**53: the int may not convert to a double exactly."""
    limit = _EXACT_INT_DOUBLE
    return b.icmp_unsigned(">", b.add(v, const(I64, limit)), const(I64, 2 * limit))


def _float_binary(em: FunctionEmitter, node: Node, op: str, args: Sequence[NValue]
                  ) -> list[NValue]:
    b = em.b
    x, y = (to_double(b, a.value, a.kind) for a in args)
    if op in ("add", "sub", "mul"):
        return [NValue(PY_FLOAT, (elementwise(b, op, [x, y], FLOAT64),))]
    if op in ("truediv", "floordiv", "mod"):     # ZeroDivisionError
        em.raise_at_site(node, args, b.fcmp_ordered("==", y, const(DOUBLE, 0.0)))
    if op == "truediv":
        if all(a.kind in (PY_INT, PY_BOOL) for a in args):   # CPython divides ints exactly
            inexact = any_of(b, [_beyond_exact_double(b, to_int64(b, a.value, a.kind))
                                 for a in args])
            return em.python_fallback(node, args, inexact,
                                      lambda: [NValue(PY_FLOAT, (b.fdiv(x, y),))])
        return [NValue(PY_FLOAT, (elementwise(b, op, [x, y], FLOAT64),))]
    if op in ("floordiv", "mod"):
        return [NValue(PY_FLOAT, (elementwise(b, op, [x, y], FLOAT64, attrs=_PYTHON_FLOAT),))]
    result = libm(b, "pow", x, y)                     # CPython's float_pow calls pow()
    unusual = any_of(b, [b.not_(is_finite(b, v)) for v in (x, y, result)])
    return em.python_fallback(node, args, unusual, [NValue(PY_FLOAT, (result,))])


register_rule([f"aten::{prefix}{op}" for op in _ARITHMETIC for prefix in ("", "i")],
              _binary_infer, _binary_emit, speculate=_binary_speculate, by_value=True,
              checked=_numpy_checked)


def _pow_infer(node: Node, kinds) -> list[NType]:
    """pow(base, exp) as base ** exp; pow(base, exp, mod) stays with Python."""
    if kinds[2] != NONE:
        raise Unsupported("pow() with a modulus")
    return _infer_binary("pow", node, kinds[:2])


register_rule("prim::pow", _pow_infer, lambda em, node, args, out_kinds: _emit_binary(
    "pow", em, node, args[:2], out_kinds))


def _divmod_infer(node: Node, kinds) -> list[NType]:
    require_numbers(node, kinds)
    kind = python_result("floordiv", *kinds)
    return [Tuple((kind, kind))]


def _divmod_emit(em: FunctionEmitter, node: Node, args, out_kinds) -> list[NValue]:
    """(a // b, a % b); a zero divisor raises CPython's ZeroDivisionError, and
    divmod(-2**63, -1) is (2**63, 0), beyond int64 (the site makes the region run again)."""
    b, (kind,) = em.b, out_kinds
    if kind.elems[0] == PY_INT:
        x, y = (to_int64(b, a.value, a.kind) for a in args)
        dtype, zero = INT64, b.or_(b.icmp_signed("==", y, const(I64, 0)), b.and_(
            b.icmp_signed("==", x, const(I64, _INT64_MIN)), b.icmp_signed("==", y, const(I64, -1))))
    else:
        x, y = (to_double(b, a.value, a.kind) for a in args)
        dtype, zero = FLOAT64, b.fcmp_ordered("==", y, const(DOUBLE, 0.0))
    attrs = _PYTHON_FLOAT if dtype == FLOAT64 else ()
    return em.python_fallback(node, args, zero, lambda: [NValue(kind, tuple(
        elementwise(b, op, [x, y], dtype, attrs=attrs) for op in ("floordiv", "mod")))])


register_rule("aten::divmod", _divmod_infer, _divmod_emit)


# ---------------------------------------------------------------------------- comparisons


def _compare_infer(node: Node, kinds) -> list[NType]:
    op = node.kind.split("::", 1)[1]
    if _has_numpy(kinds):
        return numpy_ops.compare_infer(op, kinds)
    require_numbers(node, kinds)
    return [PY_BOOL]


def _compare_emit(em: FunctionEmitter, node: Node, args, out_kinds) -> list[NValue]:
    op = node.kind.split("::", 1)[1]
    if isinstance(out_kinds[0], NumpyScalar):
        return numpy_ops.compare_emit(em, node, op, args, out_kinds[0])
    b, pred = em.b, PREDICATES[op]
    kinds = [a.kind for a in args]
    if PY_FLOAT not in kinds:
        x, y = (to_int64(b, a.value, a.kind) for a in args)
        return [NValue(PY_BOOL, (b.icmp_signed(pred, x, y),))]
    if PY_INT in kinds:
        if kinds[0] == PY_INT:
            result = compare_int_float(b, pred, args[0].value, args[1].value)
        else:
            result = compare_int_float(b, flip(pred), args[1].value, args[0].value)
        return [NValue(PY_BOOL, (result,))]
    x, y = (to_double(b, a.value, a.kind) for a in args)
    return [NValue(PY_BOOL, (compare(b, op, x, y, FLOAT64),))]


register_rule([f"aten::{op}" for op in PREDICATES], _compare_infer, _compare_emit,
              speculate=_python_numbers_only, by_value=True, checked=_numpy_checked)


# ---------------------------------------------------------------------------- unary


def _unary_name(node: Node) -> str:
    return "abs" if node.kind == "prim::abs" else node.kind.split("::", 1)[1]


def _unary_infer(node: Node, kinds) -> list[NType]:
    op = _unary_name(node)
    if _has_numpy(kinds):
        return numpy_ops.unary_infer(op, kinds)
    require_numbers(node, kinds)
    (kind,) = kinds
    if kind == PY_FLOAT and op == "invert":
        raise Unsupported("~ of a float")
    return [PY_FLOAT if kind == PY_FLOAT else PY_INT]


def _unary_emit(em: FunctionEmitter, node: Node, args, out_kinds) -> list[NValue]:
    op, (arg,), (kind,) = _unary_name(node), args, out_kinds
    if isinstance(kind, NumpyScalar):
        return numpy_ops.unary_emit(em, node, op, args, kind)
    b = em.b
    if kind == PY_FLOAT:
        result = {"neg": b.fneg, "pos": lambda x: x,
                  "abs": lambda x: intrinsic(b, "fabs", x)}[op](arg.value)
        return [NValue(PY_FLOAT, (result,))]
    v = to_int64(b, arg.value, arg.kind)
    negative = b.icmp_signed("<", v, const(I64, 0))
    result = {"neg": lambda: b.neg(v), "pos": lambda: v, "invert": lambda: b.not_(v),
              "abs": lambda: b.select(negative, b.neg(v), v)}[op]()
    if op in ("neg", "abs"):                                    # -(-2**63) == 2**63
        return _exact_int(em, node, args, b.icmp_signed("==", v, const(I64, _INT64_MIN)),
                          result)
    return [NValue(PY_INT, (result,))]


register_rule(("aten::neg", "aten::pos", "aten::invert", "prim::abs"), _unary_infer,
              _unary_emit, speculate=_python_numbers_only)
