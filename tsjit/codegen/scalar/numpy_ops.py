"""Native rules for arrays and NumPy scalars: `x[i]`, `x[i, j] = v`, `x.shape[k]`, `len(x)`,
`x.size`, and arithmetic on the NumPy scalars that element reads produce.

Element reads give NumPy scalars of the array's dtype, and arithmetic on them follows
NumPy: NEP 50 promotion (Python numbers are "weak"), the dtype's own wrap-around and
rounding, computed by the elementwise kernel library.  NumPy also *reports* floating-point
events (overflow, invalid, divide by zero, integer overflow) through its errstate: a
warning by default, an exception or nothing as the user configured.  Native code does not
reimplement that: wherever such an event may have happened (a non-finite or tiny result,
an integer result out of range, a zero divisor, a Python int that does not fit the dtype),
the node runs in Python instead, which reports exactly as NumPy does.  Stores convert the
value as NumPy's setitem does; conversions that are not exact go to NumPy as well, as do
out-of-bounds indices (IndexError with NumPy's message).
"""
from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Sequence

import numpy as np
from llvmlite import ir

from ...ir.graph import Node
from ...ir.types import IntType, TensorType, TupleType
from ..element_ops import cast_value, load_value, store_value
from .arith import (
    KERNEL_OPS,
    any_of,
    compare,
    const,
    dtype_of,
    elementwise,
    exceeds_dtype,
    intrinsic,
    is_finite,
    is_normal,
    libm,
)
from .emitter import FunctionEmitter
from .ntypes import (
    I1,
    I64,
    PY_BOOL,
    PY_FLOAT,
    PY_INT,
    SUPPORTED_DTYPES,
    Array,
    NType,
    NumpyScalar,
    NValue,
    PyScalar,
    Shape,
    Tuple,
    Unsupported,
)
from .rules import register_rule

# ---------------------------------------------------------------------------- promotion


def _sample(kind: NType) -> object:
    if isinstance(kind, NumpyScalar):
        return kind.dtype.type(1)
    return {PY_INT: 1, PY_FLOAT: 1.0, PY_BOOL: True}[kind]


def numpy_result(fn: Callable, kinds: Sequence[NType]) -> np.dtype:
    """The dtype NumPy gives `fn` of scalars of these kinds (NumPy's rules are value-
    independent for scalars under NEP 50, so one sample computation decides)."""
    if not all(isinstance(k, (NumpyScalar, PyScalar)) for k in kinds):
        raise Unsupported(f"NumPy scalar arithmetic on {', '.join(map(str, kinds))}")
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = fn(*[_sample(k) for k in kinds])
    except (TypeError, ValueError) as error:
        raise Unsupported(f"NumPy rejects these operands: {error}") from None
    if not isinstance(result, np.generic) or type(result) is not result.dtype.type \
            or result.dtype not in SUPPORTED_DTYPES:
        raise Unsupported(f"NumPy gives a {type(result).__name__}")
    return result.dtype


def common_dtype(kinds: Sequence[NType]) -> np.dtype:
    """The dtype a comparison's loop converts both operands to."""
    return np.result_type(*[_sample(k) for k in kinds])


def to_dtype(b: ir.IRBuilder, value: NValue, dtype: np.dtype) -> tuple[ir.Value, ir.Value]:
    """An operand converted to `dtype` as NumPy converts it for a ufunc loop, and a flag
    telling when the conversion is not NumPy's silent one (a Python int out of range, a
    float overflowing a narrower float): the caller then lets NumPy do it."""
    kind, v = value.kind, value.value
    exact = const(I1, 0)
    if isinstance(kind, NumpyScalar) or kind == PY_BOOL:
        return cast_value(b, v, dtype_of(kind), dtype), exact
    if kind == PY_INT:
        if dtype.kind in "iub":
            info = np.iinfo(dtype) if dtype.kind != "b" else None
            if info is None:
                return b.icmp_unsigned("!=", v, const(I64, 0)), exact
            low, high = max(int(info.min), -(1 << 63)), min(int(info.max), (1 << 63) - 1)
            outside = b.or_(b.icmp_signed("<", v, const(I64, low)),
                            b.icmp_signed(">", v, const(I64, high)))
            return cast_value(b, v, np.dtype(np.int64), dtype), outside
        limit = 1 << (np.finfo(dtype).nmant + 1)        # integers converted exactly
        magnitude = b.select(b.icmp_signed("<", v, const(I64, 0)), b.neg(v), v)
        return cast_value(b, v, np.dtype(np.int64), dtype), b.icmp_unsigned(
            ">", magnitude, const(I64, limit))
    converted = cast_value(b, v, np.dtype(np.float64), dtype)        # a Python float
    if dtype.kind != "f":
        raise Unsupported(f"a Python float in a {dtype} loop")
    overflow = b.and_(is_finite(b, v), b.not_(is_finite(b, converted)))
    return converted, overflow


# ---------------------------------------------------------------------------- arithmetic

_PYTHON_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
               "truediv": operator.truediv, "floordiv": operator.floordiv,
               "mod": operator.mod, "pow": operator.pow, "lshift": operator.lshift,
               "rshift": operator.rshift, "and": operator.and_, "or": operator.or_,
               "xor": operator.xor}


def binary_infer(op: str, kinds: Sequence[NType]) -> list[NType]:
    fn = _PYTHON_OPS.get(op) or getattr(operator, op)
    return [NumpyScalar(numpy_result(fn, kinds))]


def _float_events(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value, r: ir.Value,
                  dtype: np.dtype) -> tuple[ir.Value, Callable[[], ir.Value] | None]:
    """Whether NumPy may have seen a floating-point event computing r = x op y: a cheap
    test on the hot path (a superset), and where that is not exact, the exact test to run
    when it holds (see FunctionEmitter.python_fallback).  Even the exact test is a
    superset of what NumPy reports: the fallback recomputes exactly that."""
    if op in ("mul", "truediv", "pow"):
        # A zero or subnormal result is an underflow (or, for pow and /, a division by
        # zero) unless an operand made it exact: 0 * y, 0 / y, 0 ** (y > 0).
        def exact() -> ir.Value:
            zero_x = b.fcmp_ordered("==", x, const(x.type, 0.0))
            if op == "mul":
                zero = b.or_(zero_x, b.fcmp_ordered("==", y, const(y.type, 0.0)))
            elif op == "truediv":
                zero = zero_x
            else:
                zero = b.and_(zero_x, b.fcmp_ordered(">", y, const(y.type, 0.0)))
            return b.not_(b.and_(is_finite(b, r), zero))
        return b.not_(is_normal(b, r)), exact
    events = [b.not_(is_finite(b, r))]
    if op in ("floordiv", "mod"):
        events += [b.not_(is_finite(b, x)), b.not_(is_finite(b, y)),
                   b.fcmp_ordered("==", y, const(y.type, 0.0))]
    return any_of(b, events), None


def _int_events(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value, dtype: np.dtype
                ) -> ir.Value:
    """Whether NumPy reports an integer event for x op y (overflow, division by zero)."""
    if op in ("add", "sub", "mul"):
        return exceeds_dtype(b, op, x, y, dtype)
    if op in ("floordiv", "mod"):
        zero = b.icmp_unsigned("==", y, const(y.type, 0))
        if op == "floordiv" and dtype.kind == "i":
            low = int(np.iinfo(dtype).min)
            return b.or_(zero, b.and_(b.icmp_signed("==", x, const(x.type, low)),
                                      b.icmp_signed("==", y, const(y.type, -1))))
        return zero
    return const(I1, 0)


def binary_emit(em: FunctionEmitter, node: Node, op: str, args: Sequence[NValue],
                out_kind: NumpyScalar) -> list[NValue]:
    """x op y with at least one NumPy scalar operand."""
    b, dtype = em.b, out_kind.dtype
    if op == "pow" and dtype.kind != "f":
        return em.python_fallback(node, args)
    (x, x_inexact), (y, y_inexact) = (to_dtype(b, a, dtype) for a in args)
    if op == "pow":     # NumPy's scalar power is the C library's pow / powf
        r = libm(b, "powf" if dtype.itemsize == 4 else "pow", x, y)
    else:
        r = elementwise(b, KERNEL_OPS[op], [x, y], dtype)
    exact = None
    if dtype.kind == "f":
        events, exact = _float_events(b, op, x, y, r, dtype)
    elif dtype.kind in "iu":
        events = _int_events(b, op, x, y, dtype)
    else:
        events = const(I1, 0)
    unusual = any_of(b, [x_inexact, y_inexact, events])
    recheck = None if exact is None else (lambda: any_of(b, [x_inexact, y_inexact, exact()]))
    return em.python_fallback(node, args, unusual, [NValue(out_kind, (r,))], recheck)


def compare_infer(op: str, kinds: Sequence[NType]) -> list[NType]:
    numpy_result(getattr(operator, op), kinds)
    return [NumpyScalar(np.dtype(np.bool_))]


def compare_emit(em: FunctionEmitter, node: Node, op: str, args: Sequence[NValue],
                 out_kind: NType) -> list[NValue]:
    b = em.b
    dtype = common_dtype([a.kind for a in args])
    (x, x_inexact), (y, y_inexact) = (to_dtype(b, a, dtype) for a in args)
    r = compare(b, op, x, y, dtype)
    return em.python_fallback(node, args, b.or_(x_inexact, y_inexact),
                              [NValue(out_kind, (r,))])


_UNARY = {"neg": (operator.neg, "neg"), "pos": (operator.pos, "pos"),
          "invert": (operator.invert, "invert"), "abs": (abs, "abs")}


def unary_infer(op: str, kinds: Sequence[NType]) -> list[NType]:
    return [NumpyScalar(numpy_result(_UNARY[op][0], kinds))]


def unary_emit(em: FunctionEmitter, node: Node, op: str, args: Sequence[NValue],
               out_kind: NumpyScalar) -> list[NValue]:
    b, dtype = em.b, out_kind.dtype
    x = cast_value(b, args[0].value, args[0].kind.dtype, dtype)
    r = elementwise(b, _UNARY[op][1], [x], dtype)
    unusual = const(I1, 0)
    if dtype.kind == "i" and op in ("neg", "abs"):          # -MIN overflows
        unusual = b.icmp_signed("==", x, const(x.type, int(np.iinfo(dtype).min)))
    elif dtype.kind == "u" and op == "neg":                  # -x wraps unless x == 0
        unusual = b.icmp_unsigned("!=", x, const(x.type, 0))
    return em.python_fallback(node, args, unusual, [NValue(out_kind, (r,))])


# ---------------------------------------------------------------------------- arrays


def _index_kinds(index: NType) -> list[NType]:
    return list(index.elems) if isinstance(index, Tuple) else [index]


def element_infer(array: NType, index: NType) -> NumpyScalar:
    """The element kind of `array[index]` when it reads one element, else Unsupported."""
    if not isinstance(array, Array):
        raise Unsupported(f"indexing {array}")
    indices = _index_kinds(index)
    if len(indices) != array.rank or not all(
            k == PY_INT or (isinstance(k, NumpyScalar) and k.dtype.kind in "iu")
            for k in indices):
        raise Unsupported(f"{array}[{index}] is not one element")
    return NumpyScalar(array.dtype)


def _element_pointer(em: FunctionEmitter, node: Node, args: Sequence[NValue]
                     ) -> tuple[ir.Value, ir.Value | None]:
    """The address of `array[i, j, ...]` (negative indices count from the end) and a flag
    for an index out of bounds; None for an access the loop around it has shown to lie
    within the array (FunctionEmitter.fast_accesses), whose last stride is then the
    item size where its index moves; that stride is also the item size where the loop
    has shown the last axis contiguous (FunctionEmitter.contiguous_accesses)."""
    b = em.b
    array, index = args
    rank = array.kind.rank
    data, sizes, strides = array.parts[1], array.parts[2:2 + rank], array.parts[2 + rank:]
    fast = em.fast_accesses.get(node)
    if fast or node in em.contiguous_accesses:
        strides = (*strides[:-1], const(I64, array.kind.dtype.itemsize))
    offset, outside = const(I64, 0), []
    for i, kind, size, stride in zip(index.parts, _index_kinds(index.kind), sizes, strides):
        if isinstance(kind, NumpyScalar):       # a NumPy integer: its value, as an int
            if kind.dtype == np.uint64:         # from 2**63 on: beyond every axis
                outside.append(b.icmp_signed("<", i, const(I64, 0)))
            extend = b.sext if kind.dtype.kind == "i" else b.zext
            i = i if i.type == I64 else extend(i, I64)
        wrapped = i
        if fast is None:
            wrapped = b.select(b.icmp_signed("<", i, const(I64, 0)), b.add(i, size), i)
            outside.append(b.icmp_unsigned(">=", wrapped, size))
        offset = b.add(offset, b.mul(wrapped, stride))
    address = b.gep(data, [offset], source_etype=ir.IntType(8))
    if fast is not None:
        return address, None
    return address, any_of(b, outside) if outside else const(I1, 0)


def element_read(em: FunctionEmitter, node: Node, args: Sequence[NValue], kind: NType
                 ) -> list[NValue]:
    """`array[i, ...]`: the element, or NumPy's IndexError for an index out of bounds."""
    address, outside = _element_pointer(em, node, args)
    if outside is not None:
        em.raise_at_site(node, args, outside)
    return [NValue(kind, (load_value(em.b, address, args[0].kind.dtype),))]


def index_check(node: Node) -> str | None:
    """Why `seq[index]` (read or written) is no element access, judging by the IR."""
    seq, index = (v.type for v in node.inputs[:2])
    if node.attrs.get("slice"):
        return "slicing"
    if node.kind == "aten::__setitem__" and not isinstance(seq, TensorType):
        return f"assignment to an item of a {seq.annotation}"
    parts = node.inputs[1].node.inputs if isinstance(index, TupleType) and \
        node.inputs[1].node.kind == "prim::TupleConstruct" else [node.inputs[1]]
    indices = index.elems if isinstance(index, TupleType) else (index,)
    if any(t != IntType and not _numpy_integer_index(v) for t, v in zip(indices, parts)) \
            or len(parts) != len(indices):
        return "an index that is not an int"
    if isinstance(seq, TensorType) and seq.rank is not None and seq.rank != len(indices):
        return "indexing that yields a sub-array"
    return None



def _numpy_integer_index(value) -> bool:
    """Whether `value` may be a NumPy integer used as an index (`counts[labels[i]]`): a
    Tensor refined to a NumPy scalar of an integer dtype, or, where the IR is vague
    (before profiling), an element read; the variant's kinds decide (element_infer)."""
    t = value.type
    if not isinstance(t, TensorType) or t.ndarray is True:
        return False
    if t.ndarray is False:
        return t.dtype is None or np.dtype(t.dtype).kind in "iu"
    return value.node.kind == "aten::__getitem__"


def _store_exact(b: ir.IRBuilder, value: NValue, dtype: np.dtype
                 ) -> tuple[ir.Value, ir.Value]:
    """The value NumPy's setitem stores, and a flag for conversions that NumPy does not do
    silently and exactly (those run in NumPy)."""
    kind = value.kind
    if isinstance(kind, NumpyScalar):
        if np.can_cast(kind.dtype, dtype, "safe"):
            return cast_value(b, value.value, kind.dtype, dtype), const(I1, 0)
        return cast_value(b, value.value, kind.dtype, dtype), const(I1, 1)
    if kind == PY_FLOAT and dtype.kind == "b":
        return b.fcmp_unordered("!=", value.value, const(value.value.type, 0.0)), const(I1, 0)
    if kind == PY_FLOAT and dtype.kind in "iu":
        x = value.value
        truncated = intrinsic(b, "trunc", x)
        info = np.iinfo(dtype)
        inside = b.and_(b.fcmp_ordered(">", x, const(x.type, float(info.min) - 1.0)),
                        b.fcmp_ordered("<", x, const(x.type, float(info.max) + 1.0)))
        converted = cast_value(b, b.select(inside, truncated, const(x.type, 0.0)),
                               np.dtype(np.float64), dtype)
        return converted, b.not_(inside)
    return to_dtype(b, value, dtype)


def _setitem_infer(node: Node, kinds) -> list[NType]:
    array, index, value = kinds
    element_infer(array, index)
    if not array.writeable:
        raise Unsupported("writing into an array that is not writeable")
    if not isinstance(value, (PyScalar, NumpyScalar)):
        raise Unsupported(f"storing {value} into an array element")
    return []


def _setitem_emit(em: FunctionEmitter, node: Node, args, out_kinds) -> list[NValue]:
    b = em.b
    array, index, value = args
    address, outside = _element_pointer(em, node, args[:2])
    if outside is not None:
        em.raise_at_site(node, args, outside)
    stored, inexact = _store_exact(b, value, array.kind.dtype)

    def store() -> list[NValue]:
        store_value(b, stored, address, array.kind.dtype)
        return []
    return em.python_fallback(node, args, inexact, store)


register_rule("aten::__setitem__", _setitem_infer, _setitem_emit, index_check)


def _array_infer(result: Callable[[Array], NType]):
    def infer(node: Node, kinds) -> list[NType]:
        (array,) = kinds
        if not isinstance(array, Array):
            raise Unsupported(f"{node.kind} of {array}")
        return [result(array)]
    return infer


def _sizes(value: NValue) -> tuple[ir.Value, ...]:
    rank = value.kind.rank
    return value.parts[2:2 + rank]


def _size_emit(em: FunctionEmitter, node: Node, args, out_kinds) -> list[NValue]:
    total = const(I64, 1)
    for size in _sizes(args[0]):
        total = em.b.mul(total, size)
    return [NValue(PY_INT, (total,))]


def array_length(em: FunctionEmitter, node: Node, args: Sequence[NValue]) -> list[NValue]:
    """len(array): its first size; a 0-d array raises TypeError (in Python)."""
    if args[0].kind.rank == 0:
        return em.python_fallback(node, args)
    return [NValue(PY_INT, (_sizes(args[0])[0],))]


register_rule(("ndarray::shape", "numpy::shape"), _array_infer(lambda a: Shape(a.rank)),
              lambda em, node, args, out_kinds: [NValue(out_kinds[0], _sizes(args[0]))])
register_rule("ndarray::size", _array_infer(lambda a: PY_INT), _size_emit)
register_rule(("ndarray::ndim", "numpy::ndim"), _array_infer(lambda a: PY_INT),
              lambda em, node, args, out_kinds: [
                  NValue(PY_INT, (const(I64, args[0].kind.rank),))])
