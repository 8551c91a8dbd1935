"""Dead code elimination: delete what cannot affect the graph's results or effects.

Mark and sweep, as TorchScript's DCE: the graph's outputs and every node that is
not pure (it writes, has a side effect, may raise, or is of a kind the registry
does not know) are live; a live node makes its inputs live, and a live node inside
a block makes the prim::If / prim::Loop that owns the block live (with its
condition and trip count).  Liveness is tracked per result: an If keeps only the
outputs someone uses, and a Loop keeps only the carried values that are used
after it or by a live node in its body; a carried value that only feeds its own
next iteration dies with the nodes that compute it.  Everything unmarked is
removed, including whole If/Loop nodes whose blocks hold nothing live.

Deleting a loop that might not terminate is allowed: the contract covers inputs
on which the program returns.
"""
from __future__ import annotations

from ..ir.graph import Block, Graph, Node, Value
from .analysis import is_pure

IF, LOOP = "prim::If", "prim::Loop"


def eliminate_dead_code(graph: Graph) -> None:
    """Remove dead nodes, dead If outputs and dead Loop-carried values, in place."""
    live = _Liveness()
    for value in graph.outputs:
        live.mark_value(value)
    for node in graph.nodes():
        if not is_pure(node):
            live.mark_node(node)
    live.propagate()
    _sweep(graph.block, live)


class _Liveness:
    """Live nodes, values and loop-carried slots, closed under "needed by" (a worklist,
    so that long dependency chains need no recursion)."""

    def __init__(self) -> None:
        self.nodes: set[Node] = set()
        self.values: set[Value] = set()
        self.slots: set[tuple[Node, int]] = set()     # (loop, carried index)
        self.work: list[Value | Node | tuple[Node, int]] = []

    def mark_node(self, node: Node) -> None:
        self.work.append(node)

    def mark_value(self, value: Value) -> None:
        self.work.append(value)

    def propagate(self) -> None:
        while self.work:
            item = self.work.pop()
            if isinstance(item, Node):
                self._node(item)
            elif isinstance(item, Value):
                self._value(item)
            else:
                self._slot(*item)

    def _node(self, node: Node) -> None:
        if node in self.nodes:
            return
        self.nodes.add(node)
        owner = node.block.owner
        if owner is not None:
            self.work.append(owner)
        if node.kind == IF:
            self.work.append(node.inputs[0])
        elif node.kind == LOOP:
            self.work += [node.inputs[0], node.inputs[1], node.blocks[0].outputs[0]]
        else:
            self.work += node.inputs
            # a node of an unknown kind with blocks: everything its blocks return counts
            self.work += [v for block in node.blocks for v in block.outputs]

    def _value(self, value: Value) -> None:
        if value in self.values:
            return
        self.values.add(value)
        node = value.node
        if node.kind == "prim::Param":
            owner = node.block.owner
            if owner is not None and owner.kind == LOOP and value.index > 0:
                self.work.append((owner, value.index - 1))
            return
        self.work.append(node)
        if node.kind == IF:
            self.work += [block.outputs[value.index] for block in node.blocks]
        elif node.kind == LOOP:
            self.work.append((node, value.index))

    def _slot(self, loop: Node, k: int) -> None:
        if (loop, k) in self.slots:
            return
        self.slots.add((loop, k))
        body = loop.blocks[0]
        self.work += [loop, loop.inputs[k + 2], body.outputs[k + 1]]


def _sweep(block: Block, live: _Liveness) -> None:
    """Delete unmarked nodes, last first, so that a node's users are gone before it."""
    for node in reversed(list(block.nodes)):
        if node not in live.nodes:
            node.destroy()
        elif node.kind == IF:
            _sweep_if(node, live)
        elif node.kind == LOOP:
            _sweep_loop(node, live)
        else:
            for inner in node.blocks:
                _sweep(inner, live)


def _sweep_if(node: Node, live: _Liveness) -> None:
    dead = [i for i, out in enumerate(node.outputs) if out not in live.values]
    for block in node.blocks:
        for i in reversed(dead):
            block.return_node.remove_input(i)
        _sweep(block, live)
    for i in reversed(dead):
        node.remove_output(i)


def _sweep_loop(node: Node, live: _Liveness) -> None:
    body = node.blocks[0]
    dead = [k for k in range(len(node.outputs)) if (node, k) not in live.slots]
    for k in reversed(dead):
        body.return_node.remove_input(k + 1)
    _sweep(body, live)
    for k in reversed(dead):
        body.param_node.remove_output(k + 1)
        node.remove_input(k + 2)
        node.remove_output(k)
