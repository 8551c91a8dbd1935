"""Profiling: a `prim::profile` node after the definition of every Tensor value.

The executor runs the profiled graph for the first calls; each profile node records the
NumPy type of its value (dtype, sizes, layout, ndarray or NumPy scalar) and the
specializer reads what was seen back from the node (`specialize_types`).  Profiling at the
definition rather than at each use (as TorchScript does) sees the same thing: in SSA form a
value is one object however many times it is used, and neither in-place writes nor views
change an array's dtype, shape or layout.  Each node gets a `slot` number so that its
recorder keeps observations in a flat list.
"""
from __future__ import annotations

from collections.abc import Container

from ..ir.graph import Block, Graph, Node, Value
from ..ir.types import TensorType


def insert_profiles(graph: Graph, known: Container[Value] = ()) -> None:
    """Insert `prim::profile[slot=k](%v)` after the definition of each used Tensor value,
    but for the values in `known` (whose types the executor derives from the profiled
    inputs' types instead: an element read of an array argument, say)."""
    slots = iter(range(1 << 62))
    _profile_block(graph.block, slots, known)


def _profile_block(block: Block, slots, known: Container[Value]) -> None:
    at_start = [p for p in block.params if _profiled(p, known)]
    for position, value in enumerate(at_start):
        block.insert(position, _profile_node(value, next(slots)))
    for node in list(block.nodes):
        if node.kind == "prim::profile":
            continue
        for inner in node.blocks:
            _profile_block(inner, slots, known)
        after = node
        for value in node.outputs:
            if _profiled(value, known):
                after = _profile_node(value, next(slots)).insert_after(after)


def _profiled(value: Value, known: Container[Value]) -> bool:
    return isinstance(value.type, TensorType) and bool(value.uses) and value not in known


def _profile_node(value: Value, slot: int) -> Node:
    node = Node("prim::profile", {"slot": slot})
    node.add_input(value)
    return node
