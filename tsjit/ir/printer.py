"""The TorchScript text form of a graph: one format for printing, tests and the parser.

    graph(%x : Tensor,
          %n : int):
      %2 : int = prim::Constant[value=1]()
      %y : Tensor = aten::add(%x, %2)  # file.py:3:8
      return (%y)
"""
from __future__ import annotations

import enum
import itertools
import json
import math

import numpy as np

from .graph import Block, Graph, Node, Value
from .ignored_functions import IgnoredFunction, is_ignored_function
from .types import Type, qualified_name


class ValueNamer:
    """Unique, stable names: `%x`, `%x.1`, ... for source names, `%0`, `%1` otherwise."""

    def __init__(self) -> None:
        self.names: dict[Value, str] = {}
        self.taken: set[str] = set()
        self.counter = 0

    def __call__(self, v: Value) -> str:
        name = self.names.get(v)
        if name is None:
            if v.name:
                base, name, k = v.name, v.name, 0
                while name in self.taken:
                    k += 1
                    name = f"{base}.{k}"
            else:
                while str(self.counter) in self.taken:
                    self.counter += 1
                name = str(self.counter)
            self.taken.add(name)
            self.names[v] = name
        return name


def format_attr(value: object) -> str:
    """An attribute value in a form the parser reads back."""
    if isinstance(value, np.generic):
        return f"{np.dtype(type(value))}({format_attr(value.item())})"
    if isinstance(value, bool) or value is None:
        return str(value)
    if value is Ellipsis:
        return "..."
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else {"inf": "inf", "-inf": "-inf"}.get(
            repr(value), "nan")
    if isinstance(value, complex):
        return f"complex({format_attr(value.real)}, {format_attr(value.imag)})"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bytes):
        return f"bytes({json.dumps(value.hex())})"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(format_attr(v) for v in value)
        return f"({inner},)" if isinstance(value, tuple) and len(value) == 1 else (
            f"({inner})" if isinstance(value, tuple) else f"[{inner}]")
    if isinstance(value, Type):
        return f"Type({value})"
    if isinstance(value, np.dtype):
        return f"dtype({value})"
    if isinstance(value, enum.Enum):
        return f"Enum({qualified_name(type(value))}.{value.name})"
    if isinstance(value, np.ndarray):
        return f"Array({value.dtype}, {format_attr(value.tolist())})"
    if is_ignored_function(value) and IgnoredFunction.can_name(value):
        value = IgnoredFunction.of(value)
    if isinstance(value, IgnoredFunction):
        return f"Ignored({value.module}, {value.qualname})"
    if hasattr(value, "__qualname__") and hasattr(value, "__module__"):
        return f"Py({value.__module__}.{value.__qualname__})"
    return f"Py({type(value).__module__}.{type(value).__qualname__}(...))"


SUBGRAPH = "subgraph"   # the attribute holding a node's Graph (fusion groups, fallbacks)


class GraphPrinter:
    """Prints a graph; a node's `subgraph` attribute is printed after the graph, as
    TorchScript does: the node shows as `prim::FusionGroup_0(...)` and the graph follows
    as `with prim::FusionGroup_0 = graph(...)` (labels numbered across the whole text)."""

    def __init__(self, with_source: bool = True, labels: itertools.count | None = None):
        self.name = ValueNamer()
        self.with_source = with_source
        self.lines: list[str] = []
        self.labels = labels or itertools.count()
        self.subgraphs: list[tuple[str, Graph]] = []

    def ref(self, v: Value) -> str:
        return "%" + self.name(v)

    def decl(self, v: Value) -> str:
        return f"{self.ref(v)} : {v.type}"

    def print_graph(self, graph: Graph) -> str:
        params = [self.decl(v) for v in graph.inputs]
        self.lines.append("graph(" + (",\n      ".join(params)) + "):")
        self.print_nodes(graph.block, 1)
        self.lines.append(f"  return ({', '.join(map(self.ref, graph.outputs))})")
        for label, subgraph in self.subgraphs:
            text = GraphPrinter(self.with_source, self.labels).print_graph(subgraph)
            self.lines.append(f"with {label} = {text.rstrip()}")
        return "\n".join(self.lines) + "\n"

    def print_nodes(self, block: Block, depth: int) -> None:
        for node in block.nodes:
            self.print_node(node, depth)

    def print_node(self, node: Node, depth: int) -> None:
        pad = "  " * depth
        lhs = ", ".join(self.decl(v) for v in node.outputs)
        kind = node.kind
        shown = {k: v for k, v in node.attrs.items() if k != SUBGRAPH}
        if isinstance(node.attrs.get(SUBGRAPH), Graph):
            kind = f"{kind}_{next(self.labels)}"
            self.subgraphs.append((kind, node.attrs[SUBGRAPH]))
        attrs = ""
        if shown:
            attrs = "[" + ", ".join(f"{k}={format_attr(v)}" for k, v in shown.items()) + "]"
        rhs = f"{kind}{attrs}({', '.join(map(self.ref, node.inputs))})"
        line = f"{pad}{lhs} = {rhs}" if lhs else pad + rhs
        if self.with_source and node.source is not None:
            line += f"  # {node.source}"
        self.lines.append(line)
        for i, b in enumerate(node.blocks):
            self.lines.append(f"{pad}  block{i}({', '.join(map(self.decl, b.params))}):")
            self.print_nodes(b, depth + 2)
            self.lines.append(f"{pad}    -> ({', '.join(map(self.ref, b.outputs))})")


def print_graph(graph: Graph, with_source: bool = False) -> str:
    return GraphPrinter(with_source).print_graph(graph)
