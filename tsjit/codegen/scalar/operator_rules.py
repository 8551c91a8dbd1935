"""Native rules for Python's operators (`+ - * / // % ** << >> & | ^`, their augmented
forms, comparisons, unary `- + ~`).

Operands that are Python numbers get Python's semantics (`//`, `%` floor; exact int/float
comparison; ZeroDivisionError, negative shift counts, int true division beyond 2**53 and
non-finite powers through CPython; an int result beyond 64 bits gives up on the region's
run, see bailout.py); an operand that is a NumPy scalar gives NumPy's semantics
(numpy_ops).  Augmented assignment of numbers rebinds, so
`x += y` is `x + y` (arrays never reach these rules).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from llvmlite import ir

from ...ir.graph import Node, Value
from . import numpy_ops
from .arith import (
    FLOAT64,
    INT64,
    KERNEL_OPS,
    affine_overflows,
    any_of,
    compare_int_float,
    const,
    elementwise,
    flip,
    floordiv_overflows,
    intrinsic,
    is_finite,
    is_int64_min,
    libm,
    lshift_overflows,
    to_double,
    to_int64,
    with_overflow,
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
_PREDICATES = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_AFFINE_KINDS = frozenset(f"aten::{prefix}{op}" for op in ("add", "sub", "mul")
                          for prefix in ("", "i"))
_EXACT_INT_DOUBLE = 2 ** 53        # ints of at most this magnitude convert to double exactly


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
        return [NValue(PY_BOOL, (getattr(em.b, f"{op}_")(args[0].value, args[1].value),))]
    if kind == PY_INT:
        return _int_binary(em, node, op, args)
    return _float_binary(em, node, op, args)


def _int_binary(em: FunctionEmitter, node: Node, op: str, args: Sequence[NValue]
                ) -> list[NValue]:
    b = em.b
    x, y = (to_int64(b, a.value, a.kind) for a in args)
    zero = const(I64, 0)

    def kernel(overflow: ir.Value | None = None) -> list[NValue]:
        if overflow is not None:
            em.bailouts.note_overflow(overflow, node)
        return [NValue(PY_INT, (elementwise(b, KERNEL_OPS[op], [x, y], INT64),))]
    if op in ("add", "sub", "mul"):
        return [NValue(PY_INT, (_checked_arithmetic(em, node, op, x, y),))]
    if op in ("floordiv", "mod", "lshift", "rshift"):
        check = {"floordiv": floordiv_overflows, "lshift": lshift_overflows}.get(op)
        overflow = check(b, x, y) if check else None
        if isinstance(y, ir.Constant) and not _python_raises(op, y.constant):
            if op in ("floordiv", "mod") and _power_of_two(y.constant):
                # floor semantics make these a shift and a mask (LLVM cannot tell once
                # the division runs under a select, see emitter._select_if)
                value = b.ashr(x, const(I64, y.constant.bit_length() - 1)) \
                    if op == "floordiv" else b.and_(x, const(I64, y.constant - 1))
                return [NValue(PY_INT, (value,))]
            return kernel(overflow)
        rare = b.icmp_signed("==" if op in ("floordiv", "mod") else "<", y, zero)
        return em.python_fallback(node, args, rare, lambda: kernel(overflow))
    if op == "pow":
        return em.python_fallback(node, args, b.icmp_signed("<", y, zero),
                                  lambda: [NValue(PY_INT, (_int_power(em, node, x, y),))])
    return kernel()


def _checked_arithmetic(em: FunctionEmitter, node: Node, op: str, x: ir.Value, y: ir.Value
                       ) -> ir.Value:
    """x op y (`+ - *`); an exact result beyond 64 bits gives up on the run.  A chain of
    these with constants (affine_form) is tested once, at its end, by a range test of its
    base, and the operations stay free to fold (`3 * x + 1` is one `lea`); a lone `x + c`
    and the rest use LLVM's overflow intrinsics (`inc; jo`)."""
    b = em.b
    form = affine_form(em, node)
    if form is not None and _feeds_affine(em, node):
        return getattr(b, op)(x, y)                 # the chain's end tests it
    if form is None or (op != "mul" and form[0] in node.inputs):
        value, overflow = with_overflow(b, op, x, y)
        em.bailouts.note_overflow(overflow, node)
        return value
    base, scale, offset = form
    base_value = em.values[base]
    em.bailouts.note_overflow(affine_overflows(
        b, to_int64(b, base_value.value, base_value.kind), scale, offset), node)
    return getattr(b, op)(x, y)


def affine_form(em: FunctionEmitter, node: Node) -> tuple[Value, int, int] | None:
    """`node`'s int result as `scale * base + offset` (base, scale, offset) when it is
    an int `+ - *` with a constant, through operands computed the same way for it alone.

    Only the end of such a chain needs an overflow test: wrapped `+ - *` equal the exact
    ones modulo 2**64, so the result is exact whenever the exact result fits, whatever the
    intermediate values (which nothing else reads); and that test is one range test of
    the base."""
    if node.kind not in _AFFINE_KINDS or em.kinds[node.outputs[0]] != PY_INT:
        return None
    op = _operator_name(node)
    constants = [_int_constant(v) for v in node.inputs]
    if (constants[0] is None) == (constants[1] is None):
        return None
    k = 0 if constants[0] is None else 1          # the position of the variable operand
    var, c = node.inputs[k], constants[1 - k]
    if em.kinds[var] not in (PY_INT, PY_BOOL):
        return None
    inner = affine_form(em, var.node) if len(var.uses) == 1 else None
    base, scale, offset = inner or (var, 1, 0)
    if op == "mul":
        return base, scale * c, offset * c
    if op == "add" or k == 0:
        return base, scale, offset + (c if op == "add" else -c)
    return base, -scale, c - offset                # c - (scale * base + offset)


def _int_constant(value: Value) -> int | None:
    if value.node.kind == "prim::Constant" and type(value.node.attrs["value"]) is int:
        return value.node.attrs["value"]
    return None


def _feeds_affine(em: FunctionEmitter, node: Node) -> bool:
    """Whether `node`'s result is only an operand of a longer chain (see affine_form),
    whose end tests the overflow for it."""
    (out,) = node.outputs
    if len(out.uses) != 1:
        return False
    user = out.uses[0][0]
    return user.kind in _AFFINE_KINDS and affine_form(em, user) is not None


def _python_raises(op: str, second: int) -> bool:
    """Whether Python raises for this second operand of int `//`, `%`, `<<`, `>>`: a zero
    divisor or a negative shift count."""
    return second == 0 if op in ("floordiv", "mod") else second < 0


def _power_of_two(c: int) -> bool:
    return c > 0 and c & (c - 1) == 0


def _binary_speculate(node: Node, kinds: Sequence[NType]) -> bool:
    """Python number arithmetic that never calls Python: `+ - *` and bitwise operators, and
    int `// % << >>` by a constant Python accepts (see rules.Rule.speculate)."""
    if _has_numpy(kinds):
        return False
    op = _operator_name(node)
    if python_result(op, *kinds) == PY_FLOAT:
        return op in ("add", "sub", "mul")
    if op in ("add", "sub", "mul", *_BITWISE):
        return True
    second = node.inputs[1].node
    return op in ("floordiv", "mod", "lshift", "rshift") and \
        second.kind == "prim::Constant" and type(second.attrs["value"]) is int and \
        not _python_raises(op, second.attrs["value"])


def _python_numbers_only(node: Node, kinds: Sequence[NType]) -> bool:
    return not _has_numpy(kinds)


def _int_power(em: FunctionEmitter, node: Node, base: ir.Value, exponent: ir.Value
               ) -> ir.Value:
    """base ** exponent (exponent >= 0) by repeated squaring; a product that does not fit
    in 64 bits gives up on the run (the square of the last round is never used)."""
    b = em.b
    entry = b.block
    loop, done = em.fn.append_basic_block("pow"), em.fn.append_basic_block("pow_done")
    b.branch(loop)
    b.position_at_end(loop)
    result, power, rest, overflowed = b.phi(I64), b.phi(I64), b.phi(I64), b.phi(I1)
    odd = b.trunc(rest, I1)
    product, product_overflow = with_overflow(b, "mul", result, power)
    square, square_overflow = with_overflow(b, "mul", power, power)
    more = b.icmp_unsigned(">", rest, const(I64, 1))
    next_result = b.select(odd, product, result)
    next_power, next_rest = square, b.lshr(rest, const(I64, 1))
    next_overflowed = any_of(b, [overflowed, b.and_(odd, product_overflow),
                                 b.and_(more, square_overflow)])
    for phi, first, following in ((result, const(I64, 1), next_result),
                                  (power, base, next_power), (rest, exponent, next_rest),
                                  (overflowed, const(I1, 0), next_overflowed)):
        phi.add_incoming(first, entry)
        phi.add_incoming(following, loop)
    b.cbranch(more, loop, done)
    b.position_at_end(done)
    em.bailouts.note_overflow(next_overflowed, node)
    return next_result


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
    y_zero = b.fcmp_ordered("==", y, const(DOUBLE, 0.0))
    if op == "truediv":
        unusual = y_zero
        if all(a.kind in (PY_INT, PY_BOOL) for a in args):   # CPython divides ints exactly
            unusual = any_of(b, [y_zero] + [_beyond_exact_double(b, to_int64(b, a.value, a.kind))
                                            for a in args])
        return em.python_fallback(node, args, unusual,
                                  lambda: [NValue(PY_FLOAT, (b.fdiv(x, y),))])
    if op in ("floordiv", "mod"):
        return em.python_fallback(node, args, y_zero, lambda: [
            NValue(PY_FLOAT, (elementwise(b, op, [x, y], FLOAT64),))])
    result = libm(b, "pow", x, y)                     # CPython's float_pow calls pow()
    unusual = any_of(b, [b.not_(is_finite(b, v)) for v in (x, y, result)])
    return em.python_fallback(node, args, unusual, [NValue(PY_FLOAT, (result,))])


register_rule([f"aten::{prefix}{op}" for op in _ARITHMETIC for prefix in ("", "i")],
              _binary_infer, _binary_emit, speculate=_binary_speculate)


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
    """(a // b, a % b); a zero divisor raises CPython's ZeroDivisionError."""
    b, (kind,) = em.b, out_kinds
    if kind.elems[0] == PY_INT:
        x, y = (to_int64(b, a.value, a.kind) for a in args)
        dtype, zero = INT64, b.icmp_signed("==", y, const(I64, 0))
    else:
        x, y = (to_double(b, a.value, a.kind) for a in args)
        dtype, zero = FLOAT64, b.fcmp_ordered("==", y, const(DOUBLE, 0.0))

    def fast() -> list[NValue]:
        if dtype == INT64:
            em.bailouts.note_overflow(floordiv_overflows(b, x, y), node)
        return [NValue(kind, tuple(elementwise(b, op, [x, y], dtype)
                                   for op in ("floordiv", "mod")))]
    return em.python_fallback(node, args, zero, fast)


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
    b, pred = em.b, _PREDICATES[op]
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
    result = elementwise(b, op, [x, y], np.dtype(np.bool_), [FLOAT64, FLOAT64])
    return [NValue(PY_BOOL, (result,))]


register_rule([f"aten::{op}" for op in _PREDICATES], _compare_infer, _compare_emit,
              speculate=_python_numbers_only)


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
    if op in ("neg", "abs"):
        em.bailouts.note_overflow(is_int64_min(b, v), node)
    negative = b.icmp_signed("<", v, const(I64, 0))
    result = {"neg": lambda: b.neg(v), "pos": lambda: v, "invert": lambda: b.not_(v),
              "abs": lambda: b.select(negative, b.neg(v), v)}[op]()
    return [NValue(PY_INT, (result,))]


register_rule(("aten::neg", "aten::pos", "aten::invert", "prim::abs"), _unary_infer,
              _unary_emit, speculate=_python_numbers_only)
