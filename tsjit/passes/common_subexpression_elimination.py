"""Common subexpression elimination: a node that recomputes what an identical node
before it (in its block or an enclosing one) computed is replaced by that node.

Identical means same kind, same attributes, same inputs and same output types;
constants with equal immutable values count as identical.  Sharing one result
must be invisible, hence:
- the op has no writes or other side effects (a may-raise op is fine: if the pair
  would raise, the first one raises first), and reports no floating-point error
  (`np.sqrt(x)` twice warns twice, as NumPy's RuntimeWarning or np.errstate says; a
  fused kernel's LLVM merges the two anyway);
- no write may have changed what the op reads in between: a node with writes or
  side effects (or an If / Loop holding one) forgets every remembered node that
  reads a mutable value (an array, a list, an object), and so does entering a loop
  body that holds one, since it may have run in an earlier iteration;
- two results of a mutable type (two fresh arrays `x * x`) become one object, so
  they merge only when neither can be written, kept or compared by identity: every
  use of each is an elementwise op without effects or views, which makes a fresh
  value of its own.
"""
from __future__ import annotations

import struct

import numpy as np

from ..ir.graph import Block, Graph, Node, Value
from ..ir.types import TensorType, Type
from ..ops import OPS
from .analysis import (
    has_effects,
    is_immutable_constant,
    is_mutable_type,
    reads_mutable,
    reports_errors,
)


def eliminate_common_subexpressions(graph: Graph) -> None:
    """Merge identical computations in `graph`, in place."""
    _Eliminator().visit_block(graph.block)


class _Eliminator:
    def __init__(self) -> None:
        # One table per enclosing block, innermost last: key -> (node, reads a mutable value).
        self.scopes: list[dict[tuple, tuple[Node, bool]]] = []

    def visit_block(self, block: Block) -> None:
        self.scopes.append({})
        for node in list(block.nodes):
            self.visit(node)
        self.scopes.pop()

    def visit(self, node: Node) -> None:
        effects = has_effects(node)
        if node.blocks:
            if effects:                   # a loop body may see its own earlier iteration
                self.forget_mutable_readers()
            for block in node.blocks:
                self.visit_block(block)
        elif not effects and node.outputs and not reports_errors(node):
            self.merge_or_remember(node)
        if effects:
            self.forget_mutable_readers()

    def merge_or_remember(self, node: Node) -> None:
        key = _key(node)
        earlier = self.lookup(key)
        if earlier is not None and _may_share(earlier, node):
            for out, kept in zip(node.outputs, earlier.outputs):
                out.replace_all_uses_with(kept)
            node.destroy()
        elif earlier is None:
            self.scopes[-1][key] = (node, reads_mutable(node))

    def lookup(self, key: tuple) -> Node | None:
        for scope in reversed(self.scopes):
            found = scope.get(key)
            if found is not None:
                return found[0]
        return None

    def forget_mutable_readers(self) -> None:
        for scope in self.scopes:
            for key in [k for k, (_, reads) in scope.items() if reads]:
                del scope[key]


def _key(node: Node) -> tuple:
    attrs = tuple((name, _value_key(v)) for name, v in sorted(node.attrs.items()))
    return (node.kind, attrs, tuple(node.inputs), tuple(v.type for v in node.outputs))


def _may_share(earlier: Node, node: Node) -> bool:
    if node.kind == "prim::Constant":
        return True                   # equal immutable values or the very same object
    if not any(is_mutable_type(v.type) for v in node.outputs):
        return True
    return all(_is_private(v) for n in (earlier, node) for v in n.outputs)


def _is_private(value: Value) -> bool:
    """Whether `value` is an array that only elementwise ops without effects or views
    use: they read it and make fresh results, so nothing can tell it from an equal array.
    (Other values compare by identity through those ops: `d.values() == d.values()` is
    False in Python, as two views of one dict's values are two objects.)"""
    if not isinstance(value.type, TensorType):
        return False
    for user, _ in value.uses:
        op = OPS.get(user.kind)
        if op is None or not op.elementwise or op.has_effects or op.views:
            return False
    return True


def _value_key(value: object) -> object:
    """A hashable key equal for values that are interchangeable: equal immutable values
    (floats by their bits, so 0.0 and -0.0 differ), anything else by identity."""
    if isinstance(value, tuple):
        return (type(value), tuple(_value_key(v) for v in value))
    if isinstance(value, np.generic):
        return (type(value), value.tobytes())
    if isinstance(value, float):
        return (float, struct.pack("<d", value))
    if isinstance(value, complex):
        return (complex, struct.pack("<dd", value.real, value.imag))
    if is_immutable_constant(value) or isinstance(value, Type):
        return (type(value), value)
    return (type(value), id(value))
