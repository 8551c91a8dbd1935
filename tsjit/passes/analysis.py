"""The questions every pass asks before it moves, merges, folds or deletes a node.

The registry describes one op; here a prim::If or prim::Loop has the effects of
everything in its blocks, and a kind the registry does not know (a node a later
layer introduced) is assumed to do anything.  Mutability is a property of types
(a list, an array, a class instance can change under a reader's feet; an int or a
tuple of ints cannot) and of constant values (only immutable values may be
shared between executions).  A node may also report a floating-point error (NumPy's
RuntimeWarning, or what np.errstate says instead), an effect that common subexpression
elimination and fusion must keep in program order (``reports_errors``).  Keeping these
answers in one module keeps the passes consistent with each other.
"""
from __future__ import annotations

import enum

import numpy as np

from ..ir.graph import Node, Value
from ..ir.types import (
    BoolType,
    DTypeType,
    EnumType,
    FloatType,
    IntType,
    IterableType,
    NoneType,
    NoReturnType,
    OptionalType,
    StrType,
    TensorType,
    TupleType,
    Type,
    UninitializedType,
    UnionType,
    VarTupleType,
)
from ..ops import OPS
from .elementwise_calls import read_call

_IMMUTABLE_TYPES = (IntType, FloatType, BoolType, StrType, NoneType, DTypeType, NoReturnType,
                    UninitializedType)
_IMMUTABLE_SCALARS = (bool, int, float, complex, str, bytes, type(None))


def is_pure(node: Node) -> bool:
    """The node's own op neither writes, has side effects, nor raises (nested blocks aside)."""
    op = OPS.get(node.kind)
    return op is not None and op.is_pure_on([v.type for v in node.inputs]) and not \
        _takes_iterator(node)


def has_effects(node: Node) -> bool:
    """Writes or other side effects in the node or anywhere in its blocks: such a node
    must keep its place relative to other effects and to reads of mutable values."""
    op = OPS.get(node.kind)
    if op is None or op.has_effects or _takes_iterator(node):
        return True
    return any(has_effects(inner) for block in node.blocks for inner in block.nodes)


def _takes_iterator(node: Node) -> bool:
    """Whatever reads a one-shot iterator (zip(...), iter(xs): `sum(it)`, `list(it)`)
    advances it: a write, whatever its op declares (two `sum(it)` are not one)."""
    return any(isinstance(v.type, IterableType) and v.type.kind in IterableType.ITERATORS
               for v in node.inputs)


def is_mutable_type(t: Type) -> bool:
    """Whether a value of type `t` may have contents that a write changes.

    A Tensor is mutable unless refined to a NumPy scalar (ndarray=False); a
    container, class instance or Any is mutable; a tuple, Optional or Union is
    mutable when something it may hold is.
    """
    if t in _IMMUTABLE_TYPES or isinstance(t, EnumType):
        return False
    if isinstance(t, TensorType):
        return t.ndarray is not False
    if isinstance(t, (TupleType, VarTupleType, OptionalType, UnionType)):
        return any(is_mutable_type(c) for c in t.contained())
    return True


def reads_mutable(node: Node) -> bool:
    """Whether the node takes a value whose contents a write could change."""
    return any(is_mutable_type(v.type) for v in node.inputs)


def is_immutable_constant(value: object) -> bool:
    """Whether one shared object is indistinguishable from a fresh copy on every execution:
    Python scalars and strings, tuples of such, NumPy scalars and dtypes, enum members."""
    if type(value) in _IMMUTABLE_SCALARS:
        return True
    if isinstance(value, tuple):
        return all(is_immutable_constant(v) for v in value)
    if isinstance(value, np.generic):
        return not isinstance(value, (np.void, np.object_))
    if isinstance(value, type) and issubclass(value, np.generic):
        return True
    return isinstance(value, (np.dtype, enum.Enum))


# Kernel ops that never report a floating-point error (NumPy's loops raise no flag).
_SILENT_OPS = frozenset({
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
    "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift",
    "right_shift", "where", "isnan", "isinf", "isfinite", "signbit", "copysign", "neg",
    "pos", "abs"})
# Array computations under Python operators that NumPy checks for errors (x @ y).
_NUMPY_COMPUTATIONS = frozenset({"aten::matmul"})
# Integer loops report errors only here (division by zero, MIN // -1).
_INTEGER_REPORTING_OPS = frozenset({"floordiv", "mod", "cast"})


def reports_errors(node: Node) -> bool:
    """Whether `node` may report a floating-point error (NumPy's RuntimeWarning, or what
    np.errstate says instead): an elementwise op unless its loop never does; another op
    if it computes with NumPy (reductions, matmul, ...) or is unknown code (a call), or
    holds such a node. Indexing, shapes and Python scalars report none."""
    call = read_call(node)
    if call is None:
        op = OPS.get(node.kind)
        return op is None or op.has_effects or node.kind.startswith("numpy::") or \
            node.kind in _NUMPY_COMPUTATIONS or any(
                reports_errors(inner) for block in node.blocks for inner in block.nodes)
    if call.kernel in _SILENT_OPS:
        return False
    # the loop's dtypes: its operands' and its result's (np.log of a bool array computes,
    # and reports a division by zero, in float16); an array of unknown dtype may be float
    kinds = {_kind(v) for v in (*call.operands, *node.outputs)}
    return not kinds <= {"b", "i", "u"} or call.kernel in _INTEGER_REPORTING_OPS


def _kind(value: Value) -> str:
    """The NumPy dtype kind of ``value``'s type, as far as it is known."""
    if isinstance(value.type, TensorType):
        return "f" if value.type.dtype is None else np.dtype(value.type.dtype).kind
    return "f" if value.type == FloatType else "i"
