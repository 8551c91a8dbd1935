"""The typed SSA IR: types, graphs, the text printer and parser, the verifier."""
from .graph import Block, Graph, Node, SourceRange, Value
from .printer import print_graph

__all__ = ["Block", "Graph", "Node", "SourceRange", "Value", "print_graph"]
