"""Constant propagation: ops on constants run at compile time, branches on constants
are resolved, and identity tests against None are decided by types.

An op is evaluated through its own reference template (the Python the interpreter
runs), so a folded value is exactly what the program would compute.  Folding must
also be unobservable, hence:
- only ops without writes or other side effects; a may-raise op is evaluated, and
  if that raises or warns (NumPy overflow, say) the node stays, so that the
  program raises or warns at run time as Python would;
- only immutable results: one shared constant is then indistinguishable from a
  fresh result on each execution, which a list, dict or array never is;
- only results of bounded size: `2 ** 10 ** 9` is left to run time, as CPython's
  own constant folder leaves it.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from ..interpreter.helpers import namespace, value_matches
from ..interpreter.rendering import Renderer
from ..ir.graph import NOT_CONSTANT, Block, Graph, Node, constant_value
from ..ir.types import AnyType, NoneType, NoReturnType, Type, UninitializedType, union_options
from ..ops import OPS, OpDef, lookup_python
from .analysis import is_immutable_constant, is_mutable_type

# Bits of an int, items of a str or tuple: the largest value worth folding.
SIZE_LIMIT = 4096

_FAILED = object()
_IDENTITY_TESTS = {"aten::__is__": True, "aten::__isnot__": False}   # kind -> tests "is"


def propagate_constants(graph: Graph) -> None:
    """Fold what is constant in `graph`, in place."""
    _propagate_block(graph.block)


def _propagate_block(block: Block) -> None:
    i = 0
    while i < len(block.nodes):
        node = block.nodes[i]
        if _resolve_constant_control(node):
            continue              # a taken branch's nodes, if any, now start at i
        for inner in node.blocks:
            _propagate_block(inner)
        values = _folded_values(node)
        if values is not None:
            _replace_by_constants(node, values)
        i += 1


def _resolve_constant_control(node: Node) -> bool:
    """Put an If on a constant condition's taken branch in its place, or drop a Loop
    that never runs (its results are its initial values); whether it did."""
    if node.kind == "prim::If":
        cond = constant_value(node.inputs[0])
        if not _is_bool(cond):
            return False
        branch = node.blocks[0 if cond else 1]
        for inner in list(branch.nodes):
            inner.move_before(node)
        results = branch.outputs
    elif node.kind == "prim::Loop" and _never_runs(node):
        results = node.inputs[2:]
    else:
        return False
    for out, result in zip(node.outputs, results):
        out.replace_all_uses_with(result)
    node.destroy()
    return True


def _is_bool(value: object) -> bool:
    return isinstance(value, (bool, np.bool_))


def _never_runs(loop: Node) -> bool:
    trip_count, cond = (constant_value(v) for v in loop.inputs[:2])
    return (_is_bool(cond) and not cond) or (type(trip_count) is int and trip_count <= 0)


def _replace_by_constants(node: Node, values: list[object]) -> None:
    for out, value in zip(node.outputs, values):
        constant = Node("prim::Constant", {"value": value}, node.source)
        constant.add_output(out.type, out.name)
        constant.insert_before(node)
        out.replace_all_uses_with(constant.output)
    node.destroy()


def _folded_values(node: Node) -> list[object] | None:
    """The node's output values if it can be folded, else None."""
    if node.kind in _IDENTITY_TESTS:
        decided = _decide_identity_test(node)
        if decided is not None:
            return [decided]
    op = OPS.get(node.kind)
    if op is None or op.has_effects or node.blocks or not node.inputs or not node.outputs:
        return None
    args = [constant_value(v) for v in node.inputs]
    if not all(a is not NOT_CONSTANT and is_immutable_constant(a) for a in args):
        return None
    # A NumPy op of constant scalars gives a NumPy scalar only if it is elementwise;
    # any other op with a mutable result type makes a fresh object (np.zeros(n)).
    if not op.elementwise and any(is_mutable_type(v.type) for v in node.outputs):
        return None
    if _result_size(op, args) > SIZE_LIMIT:
        return None
    result = _evaluate(op, args, node.attrs)
    if result is _FAILED:
        return None
    if len(node.outputs) == 1 and not op.attrs.get("unpacks"):
        values = [result]
    elif isinstance(result, tuple) and len(result) == len(node.outputs):
        values = list(result)
    else:
        return None
    # a value the static type does not describe (2 ** -1 is 0.5, typed int: the rule gives
    # the usual case's type) stays a computation: a constant is taken at its type
    return values if all(is_immutable_constant(v) and _small(v) and value_matches(v, out.type)
                         for v, out in zip(values, node.outputs)) else None


def _evaluate(op: OpDef, args: list[object], attrs: dict) -> object:
    """Run `op`'s reference template on Python values, rendered and bound exactly as the
    interpreter renders constants and attributes; _FAILED if it raises or warns."""
    renderer = Renderer()
    code = op.emit_python([renderer.operand(a) for a in args],
                          renderer.attributes(attrs, op.attrs.get("names", ())))
    scope = namespace() | renderer.bound
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        try:
            return eval(code, scope)
        except Exception:
            return _FAILED


def _decide_identity_test(node: Node) -> bool | None:
    """`a is None` is True when `a` is typed NoneType and False when its type
    excludes None (`x is None` where x : int); otherwise undecided."""
    a, b = (v.type for v in node.inputs)
    if NoneType not in (a, b):
        return None
    other = b if a == NoneType else a
    if other == NoneType:
        same = True
    elif _may_be_none(other):
        return None
    else:
        same = False
    return same if _IDENTITY_TESTS[node.kind] else not same


def _may_be_none(t: Type) -> bool:
    """Whether a value of type `t` may be None; the bottom types (a value on a path that
    has already exited, never tested) count as maybe, to leave such tests alone."""
    return t in (AnyType, NoReturnType, UninitializedType) or NoneType in union_options(t)


_POW, _LSHIFT, _MUL = (lookup_python(f) for f in (operator.pow, operator.lshift, operator.mul))


def _result_size(op: OpDef, args: list[object]) -> int:
    """A bound on the result size (bits of an int, items of a sequence) of the operators
    whose result grows with their operands' values; 0 for every other op."""
    if len(args) != 2 or not (op is _POW or op is _LSHIFT or op is _MUL):
        return 0
    a, b = args
    if _is_int(a) and _is_int(b):
        a, b = int(a), int(b)
        if op is _POW:
            return a.bit_length() * max(b, 0)
        if op is _LSHIFT:
            return a.bit_length() + max(b, 0)
        return a.bit_length() + b.bit_length()
    seq, count = (a, b) if _is_int(b) else (b, a)
    if op is _MUL and isinstance(seq, (str, bytes, tuple)) and _is_int(count):
        return len(seq) * max(int(count), 0)
    return 0


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer))


def _small(value: object) -> bool:
    if isinstance(value, int):
        return value.bit_length() <= SIZE_LIMIT
    if isinstance(value, (str, bytes)):
        return len(value) <= SIZE_LIMIT
    if isinstance(value, tuple):
        return len(value) <= SIZE_LIMIT and all(_small(v) for v in value)
    return True
