"""The run-time kind of every value of a region, given the kinds of its inputs.

Loop-carried values start as their initial kinds and widen (ntypes.join) until the body
no longer changes them; If results join their branches.  Any node without a rule for its
input kinds makes the variant unsupported (the region then runs in the interpreter).
"""
from __future__ import annotations

from collections.abc import Sequence

from ...interpreter.control import LoopParts
from ...ir.graph import Block, Graph, Node, Value
from .ntypes import PY_BOOL, PY_INT, NType, Tagged, Unsupported, join
from .rules import RULES

_MAX_WIDENINGS = 8


def infer_kinds(region: Graph, input_kinds: Sequence[NType]) -> dict[Value, NType]:
    kinds: dict[Value, NType] = dict(zip(region.inputs, input_kinds))
    _infer_block(region.block, kinds)
    return kinds


def _infer_block(block: Block, kinds: dict[Value, NType]) -> None:
    for node in block.nodes:
        if node.kind == "prim::If":
            _infer_if(node, kinds)
        elif node.kind == "prim::Loop":
            _infer_loop(node, kinds)
        else:
            kinds.update(zip(node.outputs, infer_node(node, [kinds[v] for v in node.inputs])))


def infer_node(node: Node, kinds: Sequence[NType]) -> list[NType]:
    """The kinds of a node's results; an input that is Tagged (a Python number or a NumPy
    scalar) is inferred both ways and the results joined, as the emitter branches."""
    for k, kind in enumerate(kinds):
        if isinstance(kind, Tagged):
            both = [infer_node(node, [*kinds[:k], alternative, *kinds[k + 1:]])
                    for alternative in (kind.python, kind.numpy)]
            return [join(a, b) for a, b in zip(*both)]
    rule = RULES.get(node.kind)
    if rule is None:
        raise Unsupported(f"no native lowering of {node.kind}")
    return list(rule.infer(node, kinds))


def _require(kind: NType, expected: NType, node: Node, what: str) -> None:
    if kind != expected:
        raise Unsupported(f"{node.kind}: the {what} is {kind}, not {expected}")


def _infer_if(node: Node, kinds: dict[Value, NType]) -> None:
    _require(kinds[node.inputs[0]], PY_BOOL, node, "condition")
    for block in node.blocks:
        _infer_block(block, kinds)
    for k, out in enumerate(node.outputs):
        kinds[out] = join(kinds[node.blocks[0].outputs[k]], kinds[node.blocks[1].outputs[k]])


def _infer_loop(node: Node, kinds: dict[Value, NType]) -> None:
    loop = LoopParts(node)
    _require(kinds[loop.max_trip_count], PY_INT, node, "trip count")
    _require(kinds[loop.initial_cond], PY_BOOL, node, "condition")
    carried = [kinds[v] for v in loop.initial]
    kinds[loop.counter] = PY_INT
    for _ in range(_MAX_WIDENINGS):
        kinds.update(zip(loop.params, carried))
        _infer_block(node.blocks[0], kinds)
        _require(kinds[loop.next_cond], PY_BOOL, node, "condition")
        widened = [join(old, kinds[new]) for old, new in zip(carried, loop.carried_next)]
        if widened == carried:
            break
        carried = widened
    else:
        raise Unsupported("loop-carried kinds do not settle")
    kinds.update(zip(node.outputs, carried))
