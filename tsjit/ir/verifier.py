"""Checks the invariants every layer relies on; tests run it after every pass.

A pass that leaves a dangling use, a stale use list or a mistyped block output
would otherwise surface much later as a wrong result in the interpreter or a
crash in codegen; the verifier turns it into an error that prints the node.
The rules: structured dominance (a value is visible in its block after its
definition and inside the blocks of later nodes), use lists that mirror inputs
exactly, consistent back-pointers, the block shapes of prim::If / prim::Loop,
and agreement with the registry (known kind, arity, type rule).

The registry is imported as `..ops.registry` (importing it loads every op table
through the package) rather than from `..ops`, so that `tsjit.ir` may export
the verifier without an import cycle when `tsjit.ops` is imported first.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ..ops.registry import OPS, OpDef, OpTypeError, infer_types
from .graph import Block, Graph, Node, Value
from .printer import GraphPrinter
from .types import BoolType, IntType, Type, is_subtype


class IRVerificationError(Exception):
    """A broken invariant; the message names the rule and prints the offending node."""

    def __init__(self, message: str, node: Node | None = None):
        super().__init__(message)
        self.node = node


def verify(graph: Graph, *, allowed_kinds: Iterable[str] = (),
           allow_unknown: bool = False) -> None:
    """Raise IRVerificationError if `graph` breaks an IR invariant.

    Every node kind must be a registered op, unless it is in `allowed_kinds` or
    `allow_unknown` is set; nodes of unregistered kinds get only the structural checks.
    """
    _Verifier(graph, frozenset(allowed_kinds), allow_unknown).run()


class _Verifier:
    def __init__(self, graph: Graph, allowed_kinds: frozenset[str], allow_unknown: bool):
        self.graph = graph
        self.allowed_kinds = allowed_kinds
        self.allow_unknown = allow_unknown
        self.visible: set[Value] = set()
        self.seen_nodes: set[Node] = set()
        self.defined: list[Value] = []
        self.expected_uses: dict[Value, Counter] = {}

    def fail(self, message: str, node: Node | None) -> IRVerificationError:
        return IRVerificationError(message + self.locate(node), node)

    def locate(self, node: Node | None) -> str:
        """The node as the printer shows it (names as in `print_graph(graph)`)."""
        if node is None:
            return ""
        printer = self.printer()
        if node.kind == "prim::Return":
            text = "return (" + ", ".join(map(printer.ref, node.inputs)) + ")"
        elif node.kind == "prim::Param":
            text = "params (" + ", ".join(map(printer.decl, node.outputs)) + ")"
        else:
            printer.lines = []
            printer.print_node(node, 0)
            text = printer.lines[0]
        where = f"\n{node.source.highlight()}" if node.source is not None else ""
        return f"\n  in: {text}{where}"

    def printer(self) -> GraphPrinter:
        """A printer that has named every value of the graph, as `print_graph` does."""
        printer = GraphPrinter(with_source=False)
        printer.print_graph(self.graph)
        return printer

    def run(self) -> None:
        graph = self.graph
        if graph.block.graph is not graph or graph.block.owner is not None:
            raise self.fail("the graph's top block does not point back to the graph", None)
        self.block(graph.block)
        if not graph.outputs:
            raise self.fail("the graph has no outputs", graph.block.return_node)
        self.check_use_lists()

    # ---- structure and dominance
    def block(self, block: Block) -> None:
        if block.graph is not self.graph:
            raise self.fail("a block's graph pointer is not this graph", block.owner)
        for special in (block.param_node, block.return_node):
            if special.block is not block:
                raise self.fail(f"the {special.kind} node of a block points to another block",
                                block.owner)
        if block.param_node.inputs or block.return_node.outputs:
            raise self.fail("block params take no inputs and block outputs define no values",
                            block.owner)
        scope = self.define(block.param_node)
        for node in block.nodes:
            if node in self.seen_nodes:
                raise self.fail("node appears twice in the graph", node)
            self.seen_nodes.add(node)
            if node.block is not block:
                raise self.fail("node.block does not point to the block that holds it", node)
            self.check_inputs_visible(node)
            for sub in node.blocks:
                if sub.owner is not node:
                    raise self.fail("block.owner does not point to the node that holds it", node)
                self.block(sub)
            scope += self.define(node)
            self.check_node(node)
        self.check_inputs_visible(block.return_node)
        self.visible.difference_update(scope)

    def define(self, node: Node) -> list[Value]:
        for i, v in enumerate(node.outputs):
            if v.node is not node or v.index != i:
                raise self.fail(f"output {i} does not point back to its node "
                                f"(value.node / value.index)", node)
        self.visible.update(node.outputs)
        self.defined.extend(node.outputs)
        return list(node.outputs)

    def check_inputs_visible(self, node: Node) -> None:
        for i, v in enumerate(node.inputs):
            if v not in self.visible:
                raise self.fail(f"input {i} is used before its definition or outside the "
                                f"blocks where it is visible", node)
            self.expected_uses.setdefault(v, Counter())[(node, i)] += 1

    def check_use_lists(self) -> None:
        """Every (node, i) in value.uses is a real input slot, and every slot is listed."""
        for v in self.defined:
            actual = Counter(v.uses)
            expected = self.expected_uses.get(v, Counter())
            if actual != expected:
                missing = expected - actual
                extra = actual - expected
                user = next(iter(missing or extra))[0]
                problem = "lacks a use" if missing else "records a use that is not an input"
                raise self.fail(f"the use list of {self.printer().ref(v)} {problem} "
                                f"(inputs and value.uses disagree)", user)

    # ---- per-kind rules
    def check_node(self, node: Node) -> None:
        op = OPS.get(node.kind)
        if op is None:
            if node.kind in self.allowed_kinds or self.allow_unknown:
                return
            raise self.fail(f"unknown op kind {node.kind} (not in the registry)", node)
        self.check_arity(node, op)
        if node.kind == "prim::If":
            self.check_if(node)
        elif node.kind == "prim::Loop":
            self.check_loop(node)
        elif node.blocks and not op.attrs.get("control"):
            raise self.fail(f"{node.kind} is not a control-flow op but has blocks", node)
        if op.infer is not None:
            self.check_types(node, op)

    def check_arity(self, node: Node, op: OpDef) -> None:
        fixed = sum(not (p.variadic or p.kwvariadic) for p in op.params)
        variadic = len(op.params) > fixed
        if len(node.inputs) < fixed or (not variadic and len(node.inputs) > fixed):
            expected = f"at least {fixed}" if variadic else str(fixed)
            raise self.fail(f"{node.kind} takes {expected} inputs ({op.schema}), "
                            f"found {len(node.inputs)}", node)

    def check_types(self, node: Node, op: OpDef) -> None:
        try:
            inferred = infer_types(op, [v.type for v in node.inputs], node.attrs)
        except OpTypeError as e:
            raise self.fail(f"the type rule of {node.kind} rejects its inputs: {e}", node) from e
        if len(inferred) != len(node.outputs):
            raise self.fail(f"{node.kind} has {len(node.outputs)} outputs, its type rule "
                            f"gives {len(inferred)}", node)
        for i, (v, t) in enumerate(zip(node.outputs, inferred)):
            if not (is_subtype(v.type, t) or is_subtype(t, v.type)):
                raise self.fail(f"output {i} is declared {v.type} but the type rule of "
                                f"{node.kind} gives {t}", node)

    def check_if(self, node: Node) -> None:
        if node.inputs[0].type != BoolType:
            raise self.fail(f"prim::If condition must be bool, found {node.inputs[0].type}", node)
        if len(node.blocks) != 2:
            raise self.fail(f"prim::If needs 2 blocks (then, else), found {len(node.blocks)}",
                            node)
        for k, block in enumerate(node.blocks):
            if block.params:
                raise self.fail(f"prim::If block{k} must not have params", node)
            self.check_block_outputs(node, k, block.outputs, [v.type for v in node.outputs])

    def check_loop(self, node: Node) -> None:
        max_trip_count, cond, *carried = node.inputs
        if max_trip_count.type != IntType or cond.type != BoolType:
            raise self.fail(f"prim::Loop takes (int max_trip_count, bool cond, ...), found "
                            f"({max_trip_count.type}, {cond.type}, ...)", node)
        if len(node.blocks) != 1:
            raise self.fail(f"prim::Loop needs 1 block, found {len(node.blocks)}", node)
        body = node.blocks[0]
        if len(body.params) != 1 + len(carried) or body.params[0].type != IntType:
            raise self.fail(f"prim::Loop block0 params must be (int, <{len(carried)} carried>), "
                            f"found ({', '.join(str(p.type) for p in body.params)})", node)
        if len(node.outputs) != len(carried):
            raise self.fail(f"prim::Loop has {len(carried)} carried values but "
                            f"{len(node.outputs)} outputs", node)
        carried_types = [p.type for p in body.params[1:]]
        self.check_block_outputs(node, 0, body.outputs, [BoolType, *carried_types])
        for k, (initial, param, out) in enumerate(zip(carried, body.params[1:], node.outputs)):
            if not is_subtype(initial.type, param.type):
                raise self.fail(f"prim::Loop carried value {k}: initial {initial.type} is not "
                                f"a {param.type} (block param)", node)
            if not is_subtype(param.type, out.type):
                raise self.fail(f"prim::Loop carried value {k}: block param {param.type} is "
                                f"not a {out.type} (node output)", node)

    def check_block_outputs(self, node: Node, k: int, outputs: list[Value],
                            types: list[Type]) -> None:
        if len(outputs) != len(types):
            raise self.fail(f"{node.kind} block{k} has {len(outputs)} outputs, "
                            f"expected {len(types)}", node)
        for i, (v, t) in enumerate(zip(outputs, types)):
            if not is_subtype(v.type, t):
                raise self.fail(f"{node.kind} block{k} output {i} is {v.type}, "
                                f"expected a subtype of {t}", node)
