"""Guards: native code runs only on the types it was compiled for.

Each node of a `guarded` op (a fused kernel, native scalar code) becomes, as in
TorchScript's profiling executor,

    %ok : bool = prim::TypeCheck[types=(T1, ...)](%a, ...)
    %r : Tensor = prim::If(%ok)
      block0():
        %r.1 : Tensor(dtype=float32, sizes=[*], ndarray=1) = prim::FusionGroup_0(%a, ...)
        -> (%r.1)
      block1():
        %r.2 : Tensor = prim::FallbackGraph_1(%a, ...)
        -> (%r.2)

The TypeCheck tests exactly what the node's subgraph parameters state: for a NumPy value
its dtype, rank and whether it is an ndarray or a NumPy scalar (never its sizes, so one
kernel serves every size); for a Python scalar its exact type (`x * a` with `a = 2`
promotes differently from `a = 2.0`).  The fallback runs the same ops, unspecialized,
under an executor of its own that profiles the new types and specializes again.
"""
from __future__ import annotations

from ..ir.graph import Graph, Node
from ..ir.types import TENSOR, BoolType, FloatType, IntType, TensorType, Type
from ..ops import OPS

_EXACT_SCALARS = (IntType, FloatType, BoolType)


def insert_guards(graph: Graph) -> None:
    """Wrap every guarded node in a TypeCheck selecting it or a FallbackGraph."""
    for node in [n for n in graph.nodes() if _is_guarded(n)]:
        _guard(node)


def _is_guarded(node: Node) -> bool:
    op = OPS.get(node.kind)
    return op is not None and op.attrs.get("guarded", False)


def is_checked(t: Type) -> bool:
    """Whether native code relies on a parameter of type `t` (so a guard checks it)."""
    return (isinstance(t, TensorType) and t.is_refined) or t in _EXACT_SCALARS


def unspecialized(graph: Graph) -> Graph:
    """A copy of `graph` with every Tensor type plain again (what a fallback profiles)."""
    copy = graph.copy()
    for v in copy.inputs:
        if isinstance(v.type, TensorType):
            v.type = TENSOR
    for node in copy.nodes():
        for v in node.outputs:
            if isinstance(v.type, TensorType):
                v.type = TENSOR
    return copy


def _guard(node: Node) -> None:
    subgraph = node.attrs["subgraph"]
    checked = [(v, p.type) for v, p in zip(node.inputs, subgraph.inputs) if is_checked(p.type)]
    if not checked:
        return
    check = Node("prim::TypeCheck", {"types": tuple(t for _, t in checked)}, node.source)
    for v, _ in checked:
        check.add_input(v)
    check.add_output(BoolType)
    check.insert_before(node)
    branch = Node("prim::If", source=node.source)
    branch.add_input(check.output)
    branch.insert_before(node)
    for v in node.outputs:
        result = branch.add_output(TENSOR if isinstance(v.type, TensorType) else v.type, v.name)
        v.replace_all_uses_with(result)
    native, fallback_block = branch.add_block(), branch.add_block()
    node.block.nodes.remove(node)
    native.append(node)
    fallback = Node("prim::FallbackGraph", {"subgraph": unspecialized(subgraph)}, node.source)
    for v in node.inputs:
        fallback.add_input(v)
    fallback_block.append(fallback)
    for v, result in zip(node.outputs, branch.outputs):
        native.add_output(v)
        fallback_block.add_output(fallback.add_output(result.type, v.name))
