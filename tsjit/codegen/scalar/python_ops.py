"""Native rules for Python's scalar builtins: constants, None checks, casts, `math`,
`abs`/`min`/`max`/`round`/`divmod`, range arithmetic, tuples, `raise` and `print`.

Semantics are CPython's.  Where CPython raises or leaves the fast numeric path (a float
that is not finite, an int conversion out of range, a zero step), the rule hands the node
to its reference implementation (`FunctionEmitter.python_fallback`), which raises
CPython's own exception with the script location, or computes CPython's result (an int
beyond 64 bits makes the region run again in the interpreter, see sites.py).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from llvmlite import ir

from ...ir.graph import Node
from .arith import (
    FLOAT64,
    any_of,
    const,
    fits_int64,
    intrinsic,
    is_finite,
    libm,
    to_double,
    to_int64,
)
from .bailout import int_beyond_64_bits
from .emitter import FunctionEmitter
from .ntypes import (
    DOUBLE,
    I1,
    I64,
    NONE,
    PY_BOOL,
    PY_FLOAT,
    PY_INT,
    SUPPORTED_DTYPES,
    UNDEFINED,
    Const,
    NType,
    NumpyScalar,
    NValue,
    OptionalScalar,
    Shape,
    Tuple,
    Unsupported,
)
from .rules import always_speculate, register_rule

NUMBER_KINDS = (PY_INT, PY_FLOAT, PY_BOOL)


def require_numbers(node: Node, kinds: Sequence[NType], allowed=NUMBER_KINDS,
                    numpy: bool = False) -> None:
    """Every kind is one of `allowed` (or any NumPy scalar, with `numpy`)."""
    for kind in kinds:
        if kind not in allowed and not (numpy and isinstance(kind, NumpyScalar)):
            raise Unsupported(f"{node.kind} of {', '.join(map(str, kinds))}")


def same_kind(node: Node, kinds: Sequence[NType]) -> list[NType]:
    return [kinds[0]]


def pass_through(em: FunctionEmitter, node: Node, args, out_kinds) -> list[NValue]:
    return [args[0]]


# ---------------------------------------------------------------------------- constants


def constant_kind(value: object) -> NType:
    if type(value) is bool:
        return PY_BOOL
    if type(value) is int:
        if not -(1 << 63) <= value < (1 << 63):
            raise Unsupported(f"the constant {value} does not fit in 64 bits")
        return PY_INT
    if type(value) is float:
        return PY_FLOAT
    if isinstance(value, np.generic) and value.dtype in SUPPORTED_DTYPES:
        return NumpyScalar(value.dtype)
    return Const(value)


def _constant_infer(node: Node, kinds) -> list[NType]:
    return [constant_kind(node.attrs["value"])]


def _constant_emit(em: FunctionEmitter, node: Node, args, out_kinds) -> list[NValue]:
    kind, value = out_kinds[0], node.attrs["value"]
    if isinstance(kind, Const):
        return [NValue(kind, ())]
    typ = kind.components()[0]
    if isinstance(kind, NumpyScalar):
        value = value.item()
    return [NValue(kind, (ir.Constant(typ, int(value) if isinstance(typ, ir.IntType)
                                      else float(value)),))]


register_rule("prim::Constant", _constant_infer, _constant_emit, speculate=always_speculate)
register_rule("prim::Uninitialized", lambda node, kinds: [UNDEFINED],
              lambda em, node, args, out_kinds: [NValue(UNDEFINED, ())],
              speculate=always_speculate)
register_rule("aten::annotate", same_kind, pass_through, speculate=always_speculate)


def _unchecked_cast_infer(node: Node, kinds) -> list[NType]:
    (kind,) = kinds
    return [kind.elem if isinstance(kind, OptionalScalar) else kind]


def _unchecked_cast_emit(em, node, args, out_kinds) -> list[NValue]:
    (arg,) = args
    if isinstance(arg.kind, OptionalScalar):
        return [NValue(arg.kind.elem, arg.parts[1:])]
    return [arg]


register_rule("prim::unchecked_cast", _unchecked_cast_infer, _unchecked_cast_emit,
              speculate=always_speculate)


# ---------------------------------------------------------------------------- None checks


def _identity_infer(node: Node, kinds) -> list[NType]:
    if NONE not in kinds:
        raise Unsupported("`is` between values that are not None")
    return [PY_BOOL]


def _identity_emit(em: FunctionEmitter, node: Node, args, out_kinds) -> list[NValue]:
    other = args[1] if args[0].kind == NONE else args[0]
    if isinstance(other.kind, OptionalScalar):
        is_none = other.parts[0]
    else:
        is_none = const(I1, int(other.kind == NONE))
    if node.kind == "aten::__isnot__":
        is_none = em.b.not_(is_none)
    return [NValue(PY_BOOL, (is_none,))]


register_rule(("aten::__is__", "aten::__isnot__"), _identity_infer, _identity_emit,
              speculate=always_speculate)


# ---------------------------------------------------------------------------- truth and casts


def truth(b: ir.IRBuilder, value: NValue) -> ir.Value:
    """bool(x) of a number: nonzero (NaN is true), as Python and NumPy define it."""
    v, typ = value.value, value.value.type
    if typ == I1:
        return v
    if isinstance(typ, ir.IntType):
        return b.icmp_unsigned("!=", v, const(typ, 0))
    return b.fcmp_unordered("!=", v, const(typ, 0.0))


def _truth_infer(node: Node, kinds) -> list[NType]:
    require_numbers(node, kinds, numpy=True)
    return [PY_BOOL]


register_rule("aten::Bool", _truth_infer,
              lambda em, node, args, out_kinds: [NValue(PY_BOOL, (truth(em.b, args[0]),))],
              speculate=always_speculate)
register_rule("aten::__not__", _truth_infer,
              lambda em, node, args, out_kinds: [
                  NValue(PY_BOOL, (em.b.not_(truth(em.b, args[0])),))],
              speculate=always_speculate)


def _float_infer(node: Node, kinds) -> list[NType]:
    require_numbers(node, kinds, numpy=True)
    return [PY_FLOAT]


register_rule("aten::Float", _float_infer, lambda em, node, args, out_kinds: [
    NValue(PY_FLOAT, (to_double(em.b, args[0].value, args[0].kind),))],
    speculate=always_speculate)


def float_to_int(em: FunctionEmitter, node: Node, args: Sequence[NValue], x: ir.Value
                 ) -> list[NValue]:
    """int(x) of an integral double: CPython's error for a NaN or an infinity; a value
    beyond int64 makes the region run again (bailout.py)."""
    b, outside = em.b, em.b.not_(fits_int64(em.b, x))
    em.bailouts.give_up_if(b.and_(outside, is_finite(b, x)), int_beyond_64_bits(node))
    return em.python_fallback(node, args, outside, lambda: [NValue(PY_INT, (b.fptosi(x, I64),))])


def int_of(em: FunctionEmitter, node: Node, args: Sequence[NValue], rounding: str | None
           ) -> list[NValue]:
    """int(x) / math.floor / math.ceil / math.trunc / round of a number (rounding: the LLVM
    intrinsic applied to a float first, None for int(), which truncates).

    Python ints and bools are their own value.  NumPy scalars follow CPython's protocol:
    int() uses their exact `__int__` (a uint64 from 2**63 on needs more than 64 bits);
    math.floor and math.ceil go through float(x) (NumPy scalars have no `__floor__`, so a
    uint64 beyond 2**53 rounds first); math.trunc raises TypeError for any but float64 (no
    `__trunc__`), which the interpreter reports."""
    (arg, *_) = args
    b, kind = em.b, arg.kind
    if kind == PY_INT:
        return [arg]
    numpy_int = isinstance(kind, NumpyScalar) and kind.dtype.kind in "biu"
    if kind == PY_BOOL or (numpy_int and rounding is None):
        v = arg.value
        if isinstance(kind, NumpyScalar) and kind.dtype == np.uint64:   # 2**63 on: a bignum
            em.bailouts.give_up_if(b.icmp_signed("<", v, const(I64, 0)), int_beyond_64_bits(node))
        extend = b.sext if isinstance(kind, NumpyScalar) and kind.dtype.kind == "i" else b.zext
        return [NValue(PY_INT, (v if v.type == I64 else extend(v, I64),))]
    if rounding == "trunc" and isinstance(kind, NumpyScalar) and kind.dtype != FLOAT64:
        return em.python_fallback(node, args)
    x = to_double(b, arg.value, kind)
    if rounding is not None:
        x = intrinsic(b, rounding, x)
    return float_to_int(em, node, args, x)


def _int_infer(node: Node, kinds) -> list[NType]:
    if len(kinds) != 1:
        raise Unsupported("int() with a base")
    require_numbers(node, kinds, numpy=True)
    return [PY_INT]


def _exact_int_speculate(node: Node, kinds) -> bool:
    """int() of a Python int or bool, or of a NumPy integer that fits int64: computation
    only (a uint64 from 2**63 on gives up)."""
    (kind,) = kinds
    return kind in (PY_INT, PY_BOOL) or (isinstance(kind, NumpyScalar) and (
        kind.dtype.kind in "bi" or (kind.dtype.kind == "u" and kind.dtype.itemsize < 8)))


register_rule("aten::Int", _int_infer, lambda em, node, args, out_kinds: int_of(
    em, node, args, None), speculate=_exact_int_speculate)


# ---------------------------------------------------------------------------- builtins


def _extremum_infer(node: Node, kinds) -> list[NType]:
    """min/max of two or more numbers of one kind: Python returns one of the arguments,
    so with mixed kinds the result's type would depend on the values."""
    if len(kinds) < 2 or any(k != kinds[0] for k in kinds):
        raise Unsupported(f"{node.kind} of {', '.join(map(str, kinds))}")
    require_numbers(node, kinds)
    return [kinds[0]]


def _extremum_emit(em: FunctionEmitter, node: Node, args, out_kinds) -> list[NValue]:
    """Python's loop: the running result is replaced by an argument strictly smaller
    (larger) than it, so the first of equal values wins and NaN compares false."""
    b = em.b
    pred = "<" if node.kind == "prim::min" else ">"
    result = args[0].value
    for arg in args[1:]:
        v = arg.value
        if isinstance(v.type, ir.IntType):
            better = b.icmp_signed(pred, v, result) if v.type == I64 else \
                b.icmp_unsigned(pred, v, result)
        else:
            better = b.fcmp_ordered(pred, v, result)
        result = b.select(better, v, result)
    return [NValue(out_kinds[0], (result,))]


register_rule(("prim::min", "prim::max"), _extremum_infer, _extremum_emit,
              speculate=always_speculate)


def _round_infer(node: Node, kinds) -> list[NType]:
    if kinds[1] != NONE:
        raise Unsupported("round() with ndigits")
    require_numbers(node, kinds[:1])
    return [PY_INT]


register_rule("prim::round", _round_infer,
              lambda em, node, args, out_kinds: int_of(em, node, args, "roundeven"))


# ---------------------------------------------------------------------------- range loops


def _range_infer(node: Node, kinds) -> list[NType]:
    require_numbers(node, kinds, (PY_INT, PY_BOOL))
    return [PY_INT]


def _range_length_emit(em: FunctionEmitter, node: Node, args, out_kinds) -> list[NValue]:
    """len(range(start, stop, step)); a zero step (ValueError) and lengths beyond int64
    (OverflowError) go to CPython."""
    b = em.b
    start, stop, step = (to_int64(b, a.value, a.kind) for a in args)
    zero = const(I64, 0)
    up = b.icmp_signed(">", step, zero)
    low, high = b.select(up, start, stop), b.select(up, stop, start)
    step_size = b.select(up, step, b.sub(zero, step))
    safe_step = b.select(b.icmp_unsigned("==", step_size, zero), const(I64, 1), step_size)
    span = b.sub(b.sub(high, low), const(I64, 1))
    length = b.add(b.udiv(span, safe_step), const(I64, 1))
    length = b.select(b.icmp_signed(">", high, low), length, zero)
    unusual = b.or_(b.icmp_unsigned("==", step, zero), b.icmp_signed("<", length, zero))
    return em.python_fallback(node, args, unusual, [NValue(PY_INT, (length,))])


def _derive_index_emit(em: FunctionEmitter, node: Node, args, out_kinds) -> list[NValue]:
    b = em.b
    i, start, step = (to_int64(b, a.value, a.kind) for a in args)
    return [NValue(PY_INT, (b.add(start, b.mul(i, step)),))]


register_rule("aten::__range_length", _range_infer, _range_length_emit)
register_rule("aten::__derive_index", _range_infer, _derive_index_emit,
              speculate=lambda node, kinds: True)


# ---------------------------------------------------------------------------- math


# math functions CPython computes with the C library: (libm symbol or None for an LLVM
# intrinsic, number of arguments).  A non-finite argument or result takes CPython's path,
# which raises its ValueError / OverflowError or returns the same special value.
_LIBM = {
    **{name: (name, 1) for name in (
        "exp", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin",
        "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc")},
    "atan2": ("atan2", 2), "fmod": ("fmod", 2), "pow": ("pow", 2),
    "sqrt": (None, 1), "fabs": (None, 1), "copysign": (None, 2),
}
_ROUNDING = {"floor": "floor", "ceil": "ceil", "trunc": "trunc"}
_PREDICATES = ("isnan", "isinf", "isfinite")
_RAD_TO_DEG, _DEG_TO_RAD = 180.0 / math.pi, math.pi / 180.0   # as CPython's constants
# Computed by CPython's own algorithms (not the C library): native code calls them.
_ALWAYS_PYTHON = {"hypot": PY_FLOAT, "gamma": PY_FLOAT, "lgamma": PY_FLOAT,
                  "remainder": PY_FLOAT, "nextafter": PY_FLOAT, "ulp": PY_FLOAT,
                  "isclose": PY_BOOL}


def _math_name(node: Node) -> str:
    return node.kind.split("::", 1)[1]


def _math_infer(node: Node, kinds) -> list[NType]:
    name = _math_name(node)
    require_numbers(node, kinds, numpy=True)
    if name == "log" and len(kinds) != 1:
        return [PY_FLOAT]      # log(x, base): CPython's quotient of two logs
    if name in _ROUNDING:
        return [PY_INT]
    if name in _PREDICATES:
        return [PY_BOOL]
    if name in _ALWAYS_PYTHON:
        return [_ALWAYS_PYTHON[name]]
    return [PY_FLOAT]


def _math_emit(em: FunctionEmitter, node: Node, args, out_kinds) -> list[NValue]:
    b, name = em.b, _math_name(node)
    if name in _ALWAYS_PYTHON or (name == "log" and len(args) != 1):
        return em.python_fallback(node, args)
    if name in _ROUNDING:
        return int_of(em, node, args, _ROUNDING[name])
    xs = [to_double(b, a.value, a.kind) for a in args]
    if name in _PREDICATES:
        finite = is_finite(b, xs[0])
        value = {"isfinite": finite,
                 "isnan": b.fcmp_unordered("uno", xs[0], xs[0]),
                 "isinf": b.not_(b.or_(finite, b.fcmp_unordered("uno", xs[0], xs[0])))}[name]
        return [NValue(PY_BOOL, (value,))]
    if name in ("degrees", "radians"):
        factor = _RAD_TO_DEG if name == "degrees" else _DEG_TO_RAD
        return [NValue(PY_FLOAT, (b.fmul(xs[0], const(DOUBLE, factor)),))]
    symbol, _ = _LIBM[name]
    result = libm(b, symbol, *xs) if symbol else intrinsic(b, name, *xs)
    if name in ("fabs", "copysign"):
        return [NValue(PY_FLOAT, (result,))]
    unusual = any_of(b, [b.not_(is_finite(b, v)) for v in (*xs, result)])
    return em.python_fallback(node, args, unusual, [NValue(PY_FLOAT, (result,))])


def _math_check(node: Node) -> str | None:
    name = _math_name(node)
    supported = (*_LIBM, *_ROUNDING, *_PREDICATES, *_ALWAYS_PYTHON, "degrees", "radians")
    return None if name in supported else f"math.{name} has no native lowering"


register_rule([f"math::{name}" for name in (*_LIBM, *_ROUNDING, *_PREDICATES,
                                            *_ALWAYS_PYTHON, "degrees", "radians")],
              _math_infer, _math_emit, _math_check)


# ---------------------------------------------------------------------------- tuples


def _tuple_construct_infer(node: Node, kinds) -> list[NType]:
    if "cls" in node.attrs:
        raise Unsupported("named tuples")
    return [Tuple(tuple(kinds))]


def _tuple_construct_emit(em, node, args, out_kinds) -> list[NValue]:
    return [NValue(out_kinds[0], tuple(p for a in args for p in a.parts))]


def _unpack_infer(node: Node, kinds) -> list[NType]:
    (kind,) = kinds
    if isinstance(kind, Tuple) and len(kind.elems) == len(node.outputs):
        return list(kind.elems)
    if isinstance(kind, Shape) and kind.rank == len(node.outputs):
        return [PY_INT] * kind.rank
    raise Unsupported(f"unpacking {kind} into {len(node.outputs)} values")


def _unpack_emit(em, node, args, out_kinds) -> list[NValue]:
    parts, offset, values = args[0].parts, 0, []
    for kind in out_kinds:
        n = len(kind.components())
        values.append(NValue(kind, parts[offset:offset + n]))
        offset += n
    return values


register_rule("prim::TupleConstruct", _tuple_construct_infer, _tuple_construct_emit,
              speculate=always_speculate)
register_rule(("prim::TupleUnpack", "prim::ListUnpack"), _unpack_infer, _unpack_emit,
              speculate=always_speculate)


# ---------------------------------------------------------------------------- effects


def _no_results(node: Node, kinds) -> list[NType]:
    return []


def _run_in_python(em: FunctionEmitter, node: Node, args, out_kinds) -> list[NValue]:
    return em.python_fallback(node, args)


# `raise` and `print` run in Python (raising leaves the native function anyway); the loop
# around them stays native.
register_rule(("prim::RaiseException", "prim::Print"), _no_results, _run_in_python)

