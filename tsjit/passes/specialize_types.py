"""Specialization: the types seen by `prim::profile` nodes become the values' types.

These types are speculative: they describe the profiled calls, not every call.  Code that
relies on a refinement (a fused kernel assuming float32) must be guarded by a
`prim::TypeCheck` on its inputs (`insert_guards`); code that does not rely on them (the
interpreter) is correct whatever they say.  Values that were never seen (a branch not
taken) keep their type, and the types where control flow joins are widened so that an If
output holds both branches' values and a loop-carried value holds its initial, per
iteration and final values, as the verifier requires.
"""
from __future__ import annotations

from ..ir.graph import Graph, Node, Value
from ..ir.types import TENSOR, TensorType, is_subtype, unify
from .propagate_types import propagate_types


def specialize_types(graph: Graph) -> None:
    """Give each profiled value its `profiled_type`, drop the profile nodes, derive the
    types of the values computed from refined ones (which the executor does not profile),
    and widen the types at control-flow joins until they are consistent."""
    for node in [n for n in graph.nodes() if n.kind == "prim::profile"]:
        seen = node.attrs.get("profiled_type")
        value = node.inputs[0]
        if isinstance(seen, TensorType) and is_subtype(seen, value.type):
            value.type = seen
        node.destroy()
    propagate_types(graph)
    joins = [n for n in graph.nodes() if n.kind in ("prim::If", "prim::Loop")]
    changed = True
    while changed:
        changed = False
        for node in joins:
            for target, sources in _join_pairs(node):
                changed |= _widen(target, sources)


def _join_pairs(node: Node) -> list[tuple[Value, list[Value]]]:
    """(value, the values it must hold) at one control-flow node."""
    if node.kind == "prim::If":
        return [(out, [b.outputs[k] for b in node.blocks]) for k, out in enumerate(node.outputs)]
    body = node.blocks[0]
    carried = node.inputs[2:]
    pairs = []
    for k, (initial, param, out) in enumerate(zip(carried, body.params[1:], node.outputs)):
        pairs.append((param, [initial, body.outputs[k + 1]]))
        pairs.append((out, [param]))
    return pairs


def _widen(target: Value, sources: list[Value]) -> bool:
    if not isinstance(target.type, TensorType):
        return False
    widened = target.type
    for source in sources:
        # a Python number flowing into a Tensor value (`s = 0.0; s += x[i]`) refines nothing
        widened = unify(widened, source.type) if isinstance(source.type, TensorType) else TENSOR
    if widened == target.type:
        return False
    target.type = widened
    return True
