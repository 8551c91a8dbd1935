"""The run-time kind of every value of a region, given the kinds of its inputs.

Loop-carried values start as their initial kinds and widen (ntypes.join) until the body
no longer changes them; If results join their branches.  Any node without a rule for its
input kinds makes the variant unsupported (the region then runs in the interpreter).

A carried value that is a Python number before the loop and a NumPy scalar after one
pass (`s = 0.0; for k: s += x[k]`) would be Tagged in the whole loop, every operation on
it branching on the tag.  An innermost loop is then *peeled*: its first pass is inferred
(and emitted) apart, with the initial kinds, and the loop proper starts from the kinds
that pass leaves, where the value is a NumPy scalar throughout.  The kinds of the peeled
pass's values are in `RegionKinds.peeled[loop]`; only the loop's results stay Tagged
(zero passes leave the Python number).
"""
from __future__ import annotations

from collections.abc import Sequence

from ...interpreter.control import LoopParts
from ...ir.graph import Block, Graph, Node, Value
from .ntypes import PY_BOOL, PY_INT, NType, Tagged, Unsupported, join
from .rules import RULES

_MAX_WIDENINGS = 8


class RegionKinds(dict):
    """The kind of every value (a dict Value -> NType), and for each peeled loop the kinds
    of its first pass's values (see the module docstring)."""

    def __init__(self, *args: object):
        super().__init__(*args)
        self.peeled: dict[Node, dict[Value, NType]] = {}


def infer_kinds(region: Graph, input_kinds: Sequence[NType]) -> RegionKinds:
    kinds = RegionKinds(zip(region.inputs, input_kinds))
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
    kinds[loop.counter] = PY_INT
    initial = [kinds[v] for v in loop.initial]
    carried = _settle(loop, initial, kinds)
    if any(isinstance(k, Tagged) for k in carried) and isinstance(kinds, RegionKinds) and \
            not any(n.kind == "prim::Loop" for n in node.blocks[0].walk()):
        first = RegionKinds(kinds)
        after_first = _settle(loop, initial, first, passes=1)
        steady = _settle(loop, after_first, kinds)
        if not any(isinstance(k, Tagged) for k in steady):
            kinds.peeled[node] = first
            carried = [join(a, b) for a, b in zip(initial, steady)]
        else:
            _settle(loop, initial, kinds)
    kinds.update(zip(node.outputs, carried))


def _settle(loop: LoopParts, carried: list[NType], kinds: dict[Value, NType],
            passes: int = _MAX_WIDENINGS) -> list[NType]:
    """Infer the body from these carried kinds, widening them until they settle; with
    `passes=1` the kinds the first pass leaves (the values of a peeled pass)."""
    for _ in range(passes):
        kinds.update(zip(loop.params, carried))
        _infer_block(loop.node.blocks[0], kinds)
        _require(kinds[loop.next_cond], PY_BOOL, loop.node, "condition")
        after = [kinds[new] for new in loop.carried_next]
        if passes == 1:
            return after
        widened = [join(old, new) for old, new in zip(carried, after)]
        if widened == carried:
            return carried
        carried = widened
    raise Unsupported("loop-carried kinds do not settle")
