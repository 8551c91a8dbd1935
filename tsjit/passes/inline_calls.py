"""Inlining: a call of a compiled script function becomes a copy of the callee's graph.

Every later pass and the fuser work within one graph: after inlining, constants
flow into the callee's body, its dead parts disappear, and an elementwise chain
split across helper functions becomes one chain.  A callee is a script function
or method whose `graph` attribute holds its Graph; an ignored Python function is
a prim::PythonOp with no graph and stays a call.  Copied nodes keep their source
ranges, so a runtime error still points at the line in the callee.
"""
from __future__ import annotations

from ..ir.graph import Block, Graph, Node

CALL_KINDS = ("prim::CallFunction", "prim::CallMethod")


def inline_calls(graph: Graph) -> None:
    """Replace every call of a function that has a graph by that graph, recursively."""
    _Inliner().inline_block(graph.block, frozenset())


class _Inliner:
    def __init__(self) -> None:
        # callee id -> its graph with its own calls inlined; copied at each call site
        self.inlined: dict[int, Graph] = {}

    def inline_block(self, block: Block, active: frozenset[int]) -> None:
        """`active` holds the callees being inlined around this block: a recursive
        call of one of them stays a call (recursion cannot be unrolled)."""
        for node in list(block.nodes):
            for inner in node.blocks:
                self.inline_block(inner, active)
            callee = _callee(node)
            if callee is not None and id(callee) not in active:
                _splice(node, self.inlined_body(callee, active))

    def inlined_body(self, callee: object, active: frozenset[int]) -> Graph:
        body = self.inlined.get(id(callee))
        if body is None:
            body = callee.graph.copy()
            self.inline_block(body.block, active | {id(callee)})
            self.inlined[id(callee)] = body
        return body


def _callee(node: Node) -> object | None:
    """The called function, if this node calls one that has a graph."""
    if node.kind not in CALL_KINDS:
        return None
    fn = node.attrs.get("fn")
    return fn if isinstance(getattr(fn, "graph", None), Graph) else None


def _splice(call: Node, body: Graph) -> None:
    """Put a copy of `body` in place of `call`, arguments for parameters and results
    for the call's outputs."""
    copy = body.copy()
    for param, arg in zip(copy.inputs, call.inputs):
        param.replace_all_uses_with(arg)
    results = list(copy.outputs)
    copy.block.return_node.drop_inputs()
    for node in list(copy.block.nodes):
        node.move_before(call)
    for out, result in zip(call.outputs, results):
        out.replace_all_uses_with(result)
    call.destroy()
