"""Graph, Block, Node and Value: the SSA IR with structured control flow.

As in TorchScript, a block's parameters are the outputs of its `prim::Param`
node and its results are the inputs of its `prim::Return` node, so "uses" are
uniform: replacing a value also rewires block results.  `prim::If` owns two
blocks (then, else) whose results become the node's outputs; `prim::Loop` takes
(max_trip_count, initial_condition, *carried) and owns one body block with
parameters (iteration, *carried) and results (condition, *carried).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .types import Type


class SourceRange:
    """A span of user source: enough to underline it in an error message."""

    __slots__ = ("source", "filename", "start", "end", "first_line")

    def __init__(self, source: str, filename: str, start: int, end: int, first_line: int = 1):
        self.source = source          # the text of the whole function (or file)
        self.filename = filename
        self.start = start            # character offsets into `source`
        self.end = end
        self.first_line = first_line  # file line number of source's first line

    @property
    def line(self) -> int:
        return self.first_line + self.source.count("\n", 0, self.start)

    @property
    def column(self) -> int:
        return self.start - (self.source.rfind("\n", 0, self.start) + 1)

    def text(self) -> str:
        return self.source[self.start:self.end]

    def highlight(self, context: int = 2) -> str:
        """The source lines around the range with the range underlined `~~~~ <--- HERE`."""
        lines = self.source.split("\n")
        row = self.source.count("\n", 0, self.start)
        end_row = self.source.count("\n", 0, max(self.start, self.end - 1))
        out = [f'  File "{self.filename}", line {self.line}']
        for i in range(max(0, row - context), min(len(lines), end_row + context + 1)):
            out.append(lines[i])
            if row <= i <= end_row:
                begin = self.column if i == row else len(lines[i]) - len(lines[i].lstrip())
                stop = (self.end - (self.source.rfind("\n", 0, self.end - 1) + 1)
                        if i == end_row else len(lines[i]))
                marker = " " * begin + "~" * max(1, stop - begin)
                out.append(marker + (" <--- HERE" if i == end_row else ""))
        return "\n".join(out)

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.column}"


class Value:
    """An SSA value: the `index`-th output of `node`."""

    __slots__ = ("type", "node", "index", "uses", "name")

    def __init__(self, node: Node, index: int, type_: Type, name: str | None = None):
        self.node = node
        self.index = index
        self.type = type_
        self.uses: list[tuple[Node, int]] = []
        self.name = name          # debug name from the source (`x`), or None

    def replace_all_uses_with(self, other: Value) -> None:
        for user, i in list(self.uses):
            user.replace_input(i, other)

    def __repr__(self) -> str:
        return f"%{self.name or '_'}:{self.type}"


class Node:
    __slots__ = ("kind", "inputs", "outputs", "blocks", "attrs", "source", "block")

    def __init__(self, kind: str, attrs: dict[str, Any] | None = None,
                 source: SourceRange | None = None):
        self.kind = kind
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []
        self.blocks: list[Block] = []
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.source = source
        self.block: Block | None = None       # the block this node is in

    # ---- inputs and outputs
    def add_input(self, value: Value) -> None:
        value.uses.append((self, len(self.inputs)))
        self.inputs.append(value)

    def replace_input(self, i: int, value: Value) -> None:
        self.inputs[i].uses.remove((self, i))
        self.inputs[i] = value
        value.uses.append((self, i))

    def remove_input(self, i: int) -> None:
        """Drop input i (later inputs shift down, their use records follow)."""
        self.inputs[i].uses.remove((self, i))
        for j in range(i + 1, len(self.inputs)):
            v = self.inputs[j]
            v.uses[v.uses.index((self, j))] = (self, j - 1)
        del self.inputs[i]

    def drop_inputs(self) -> None:
        while self.inputs:
            self.remove_input(len(self.inputs) - 1)

    def add_output(self, type_: Type, name: str | None = None) -> Value:
        v = Value(self, len(self.outputs), type_, name)
        self.outputs.append(v)
        return v

    def remove_output(self, i: int) -> None:
        assert not self.outputs[i].uses, "removing a used output"
        del self.outputs[i]
        for j, v in enumerate(self.outputs):
            v.index = j

    @property
    def output(self) -> Value:
        assert len(self.outputs) == 1, f"{self.kind} has {len(self.outputs)} outputs"
        return self.outputs[0]

    def add_block(self) -> Block:
        b = Block(self.block.graph if self.block else None, self)
        self.blocks.append(b)
        return b

    # ---- position
    def insert_before(self, other: Node) -> Node:
        other.block.insert(other.block.nodes.index(other), self)
        return self

    def insert_after(self, other: Node) -> Node:
        other.block.insert(other.block.nodes.index(other) + 1, self)
        return self

    def move_before(self, other: Node) -> None:
        self.block.nodes.remove(self)
        self.insert_before(other)

    def destroy(self) -> None:
        """Remove the node (its outputs must be unused) and everything it owns."""
        for b in self.blocks:
            b.destroy()
        self.drop_inputs()
        if self.block is not None:
            self.block.nodes.remove(self)
            self.block = None

    def is_before(self, other: Node) -> bool:
        """Whether self comes before other when both are in the same block."""
        nodes = self.block.nodes
        return nodes.index(self) < nodes.index(other)

    def __repr__(self) -> str:
        return f"<Node {self.kind}>"


class Block:
    def __init__(self, graph: Graph | None, owner: Node | None):
        self.graph = graph
        self.owner = owner
        self.param_node = Node("prim::Param")
        self.return_node = Node("prim::Return")
        self.param_node.block = self.return_node.block = self
        self.nodes: list[Node] = []

    @property
    def params(self) -> list[Value]:
        return self.param_node.outputs

    @property
    def outputs(self) -> list[Value]:
        return self.return_node.inputs

    def add_param(self, type_: Type, name: str | None = None) -> Value:
        return self.param_node.add_output(type_, name)

    def add_output(self, value: Value) -> None:
        self.return_node.add_input(value)

    def append(self, node: Node) -> Node:
        return self.insert(len(self.nodes), node)

    def insert(self, index: int, node: Node) -> Node:
        node.block = self
        for b in node.blocks:
            b._set_graph(self.graph)
        self.nodes.insert(index, node)
        return node

    def _set_graph(self, graph: Graph | None) -> None:
        self.graph = graph
        for n in self.nodes:
            for b in n.blocks:
                b._set_graph(graph)

    def destroy(self) -> None:
        self.return_node.drop_inputs()
        for n in reversed(list(self.nodes)):
            for v in n.outputs:
                v.uses.clear()
            n.destroy()

    def walk(self) -> Iterator[Node]:
        """Every node in this block and nested blocks, in program order."""
        for n in list(self.nodes):
            yield n
            for b in n.blocks:
                yield from b.walk()


class Graph:
    """A function body: one top-level block whose params are the inputs."""

    def __init__(self) -> None:
        self.block = Block(self, None)

    @property
    def inputs(self) -> list[Value]:
        return self.block.params

    @property
    def outputs(self) -> list[Value]:
        return self.block.outputs

    def add_input(self, type_: Type, name: str | None = None) -> Value:
        return self.block.add_param(type_, name)

    def create(self, kind: str, inputs: list[Value] = (), output_types: list[Type] = (),
               attrs: dict[str, Any] | None = None, source: SourceRange | None = None) -> Node:
        """A new node (not yet inserted anywhere)."""
        node = Node(kind, attrs, source)
        for v in inputs:
            node.add_input(v)
        for t in output_types:
            node.add_output(t)
        return node

    def nodes(self) -> Iterator[Node]:
        return self.block.walk()

    def copy(self) -> Graph:
        """A deep copy (passes that specialize work on copies)."""
        g = Graph()
        env: dict[Value, Value] = {}
        for v in self.inputs:
            env[v] = g.add_input(v.type, v.name)
        copy_block_into(self.block, g.block, env)
        for v in self.outputs:
            g.block.add_output(env[v])
        return g

    def __str__(self) -> str:
        from .printer import print_graph
        return print_graph(self)


def clone_node(node: Node, env: dict[Value, Value]) -> Node:
    """A copy of `node` (blocks included) whose inputs are mapped through `env`;
    the copy's outputs are added to `env`."""
    new = Node(node.kind, node.attrs, node.source)
    for v in node.inputs:
        new.add_input(env.get(v, v))
    for v in node.outputs:
        env[v] = new.add_output(v.type, v.name)
    for b in node.blocks:
        nb = Block(None, new)
        new.blocks.append(nb)
        for p in b.params:
            env[p] = nb.add_param(p.type, p.name)
        copy_block_into(b, nb, env)
        for v in b.outputs:
            nb.add_output(env.get(v, v))
    return new


def copy_block_into(src: Block, dst: Block, env: dict[Value, Value]) -> None:
    """Append clones of src's nodes to dst (params and outputs are the caller's job)."""
    for n in src.nodes:
        dst.append(clone_node(n, env))


NOT_CONSTANT = object()


def constant_value(value: Value) -> object:
    """The value of a prim::Constant output, or NOT_CONSTANT."""
    node = value.node
    return node.attrs["value"] if node.kind == "prim::Constant" else NOT_CONSTANT
